//! CRC-32C (Castagnoli) helpers.
//!
//! [`crc32c`] and [`crc32c_append`] come from the `crc32c` crate (hardware
//! accelerated with SSE 4.2 / ARMv8 CRC). [`crc32c_combine`] is computed with
//! the `x^(2^n) mod P` method of zlib 1.2.12 and later: O(log n)
//! multiplications in GF(2)[x] instead of the older 32x32 matrix squarings,
//! cheap enough to call for every chunk. It lets the piece writer and reader
//! get both the per-chunk CRC and the whole-piece CRC from a single pass over
//! each chunk's bytes.

pub use crc32c::{crc32c, crc32c_append};

/// The reflected CRC-32C polynomial.
const POLY: u32 = 0x82F6_3B78;

/// `a * b mod P` in GF(2)[x], reflected bit order (bit 31 is `x^0`).
const fn multmodp(a: u32, mut b: u32) -> u32 {
    let mut m: u32 = 1 << 31;
    let mut p: u32 = 0;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                break;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `X2N[n] = x^(2^n) mod P`, for every bit of a 64-bit byte count shifted
/// left by 3 (zlib cycles through 32 entries, which is exact only when the
/// polynomial's order divides 2^32 - 1; CRC-32C's does not).
const X2N: [u32; 67] = {
    let mut t = [0u32; 67];
    let mut p: u32 = 1 << 30; // x^1
    t[0] = p;
    let mut n = 1;
    while n < 67 {
        p = multmodp(p, p);
        t[n] = p;
        n += 1;
    }
    t
};

/// `x^(n * 2^k) mod P`.
fn x2nmodp(mut n: u64, mut k: usize) -> u32 {
    let mut p: u32 = 1 << 31; // x^0
    while n != 0 {
        if n & 1 != 0 {
            p = multmodp(X2N[k], p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

/// Given `crc1 = crc32c(A)` and `crc2 = crc32c(B)`, returns `crc32c(A ‖ B)`,
/// where `len2` is the length of `B` in bytes.
pub fn crc32c_combine(crc1: u32, crc2: u32, len2: u64) -> u32 {
    if len2 == 0 {
        return crc1;
    }
    multmodp(x2nmodp(len2, 3), crc1) ^ crc2
}

#[cfg(test)]
// The crate's own combine, slow but independent, is the reference these tests compare with.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn known_value() {
        // The CRC-32C check value.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn combine_matches_direct() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        for &split in &[
            0usize, 1, 2, 3, 7, 8, 31, 32, 1000, 4096, 65_535, 69_999, 70_000,
        ] {
            let (a, b) = data.split_at(split);
            let want = crc32c(&data);
            let got = crc32c_combine(crc32c(a), crc32c(b), b.len() as u64);
            assert_eq!(got, want, "split {split}");
            assert_eq!(got, crc32c::crc32c_combine(crc32c(a), crc32c(b), b.len()));
        }
    }

    #[test]
    fn combine_large_lengths_match_crate() {
        for &len in &[1u64 << 20, (4 << 20) + 32, 123_456_789, 1 << 33] {
            let (c1, c2) = (0xDEAD_BEEF, 0x1234_5678);
            assert_eq!(
                crc32c_combine(c1, c2, len),
                crc32c::crc32c_combine(c1, c2, len as usize),
                "len {len}"
            );
        }
    }
}
