//! Reading another tool's stored bytes back as the file they hold: decompression (gzip, zlib,
//! lz4 frames, zstd, bzip2) and the check of the content against the checksum and size the
//! origin recorded, made at the end of the stream so that no caller can use a file without
//! it having passed.

use sha1::Digest;
use std::io::{self, Read};

/// How a stored file is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    None,
    /// gzip (RFC 1952).
    Gz,
    /// zlib (RFC 1950): pgBackRest's "raw" gz in bundles.
    Zlib,
    Lz4,
    Zst,
    Bz2,
}

impl Codec {
    /// The codec a file name's extension names; None when it names none.
    pub fn of_extension(ext: &str) -> Option<Codec> {
        Some(match ext {
            "gz" => Codec::Gz,
            "lz4" => Codec::Lz4,
            "zst" => Codec::Zst,
            "bz2" => Codec::Bz2,
            _ => return None,
        })
    }

    /// The extension files stored with this codec carry ("" for none).
    pub fn extension(self) -> &'static str {
        match self {
            Codec::None => "",
            Codec::Gz | Codec::Zlib => ".gz",
            Codec::Lz4 => ".lz4",
            Codec::Zst => ".zst",
            Codec::Bz2 => ".bz2",
        }
    }

    /// `r`'s bytes decompressed.
    pub fn reader<'a>(self, r: impl Read + Send + 'a) -> io::Result<Box<dyn Read + Send + 'a>> {
        Ok(match self {
            Codec::None => Box::new(r),
            Codec::Gz => Box::new(flate2::read::GzDecoder::new(r)),
            Codec::Zlib => Box::new(flate2::read::ZlibDecoder::new(r)),
            Codec::Lz4 => Box::new(lz4_flex::frame::FrameDecoder::new(r)),
            Codec::Zst => Box::new(zstd::stream::read::Decoder::new(r)?),
            Codec::Bz2 => Box::new(bzip2::read::MultiBzDecoder::new(r)),
        })
    }
}

/// A checksum an origin recorded for a file's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// pgBackRest's per-file SHA-1, and its repository files' names.
    Sha1([u8; 20]),
    /// pg_basebackup's manifest: CRC32C (its default) or one of the SHA-2 family.
    Crc32c(u32),
    Sha224([u8; 28]),
    Sha256([u8; 32]),
    Sha384([u8; 48]),
    Sha512([u8; 64]),
}

impl Checksum {
    /// Parses `hex` as a checksum of the algorithm `alg` names (`SHA1`, `CRC32C`, `SHA224`
    /// to `SHA512`, with or without the dash).
    pub fn parse(alg: &str, hex: &str) -> Option<Checksum> {
        let bytes = unhex(hex)?;
        match alg.to_ascii_uppercase().as_str() {
            "SHA1" | "SHA-1" => Some(Checksum::Sha1(bytes.try_into().ok()?)),
            "SHA224" | "SHA-224" => Some(Checksum::Sha224(bytes.try_into().ok()?)),
            "SHA256" | "SHA-256" => Some(Checksum::Sha256(bytes.try_into().ok()?)),
            "SHA384" | "SHA-384" => Some(Checksum::Sha384(bytes.try_into().ok()?)),
            "SHA512" | "SHA-512" => Some(Checksum::Sha512(bytes.try_into().ok()?)),
            // pg_basebackup writes the CRC's four bytes in memory order, little-endian.
            "CRC32C" => Some(Checksum::Crc32c(u32::from_le_bytes(bytes.try_into().ok()?))),
            _ => None,
        }
    }

    pub fn algorithm(&self) -> &'static str {
        match self {
            Checksum::Sha1(_) => "SHA-1",
            Checksum::Crc32c(_) => "CRC32C",
            Checksum::Sha224(_) => "SHA-224",
            Checksum::Sha256(_) => "SHA-256",
            Checksum::Sha384(_) => "SHA-384",
            Checksum::Sha512(_) => "SHA-512",
        }
    }

    pub fn hex(&self) -> String {
        match self {
            Checksum::Sha1(b) => hex(b),
            Checksum::Sha224(b) => hex(b),
            Checksum::Sha256(b) => hex(b),
            Checksum::Sha384(b) => hex(b),
            Checksum::Sha512(b) => hex(b),
            Checksum::Crc32c(c) => hex(&c.to_le_bytes()),
        }
    }

    fn hasher(&self) -> Hasher {
        match self {
            Checksum::Sha1(_) => Hasher::Sha1(sha1::Sha1::new()),
            Checksum::Sha224(_) => Hasher::Sha224(sha2::Sha224::new()),
            Checksum::Sha256(_) => Hasher::Sha256(sha2::Sha256::new()),
            Checksum::Sha384(_) => Hasher::Sha384(sha2::Sha384::new()),
            Checksum::Sha512(_) => Hasher::Sha512(sha2::Sha512::new()),
            Checksum::Crc32c(_) => Hasher::Crc32c(0),
        }
    }
}

impl std::fmt::Display for Checksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.algorithm(), self.hex())
    }
}

enum Hasher {
    Sha1(sha1::Sha1),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
    Crc32c(u32),
}

impl Hasher {
    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha224(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha384(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
            Hasher::Crc32c(c) => *c = crc32c::crc32c_append(*c, data),
        }
    }

    fn finish(self) -> Checksum {
        match self {
            Hasher::Sha1(h) => Checksum::Sha1(h.finalize().into()),
            Hasher::Sha224(h) => Checksum::Sha224(h.finalize().into()),
            Hasher::Sha256(h) => Checksum::Sha256(h.finalize().into()),
            Hasher::Sha384(h) => Checksum::Sha384(h.finalize().into()),
            Hasher::Sha512(h) => Checksum::Sha512(h.finalize().into()),
            Hasher::Crc32c(c) => Checksum::Crc32c(c),
        }
    }
}

/// The SHA-1 of `data`, as pgBackRest names archived WAL and checks info files.
pub fn sha1_hex(data: &[u8]) -> String {
    hex(&sha1::Sha1::digest(data))
}

/// The SHA-256 of `data`, as pg_basebackup checks its manifest.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&sha2::Sha256::digest(data))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A file's content checked as it is read: at the end of the stream its size and checksum
/// are compared with what the origin recorded, and a difference is an `InvalidData` error
/// naming `what` and both values. Nothing past the recorded size is handed out.
pub struct Checked<R> {
    inner: R,
    what: String,
    size: u64,
    expect: Option<Checksum>,
    hasher: Option<Hasher>,
    read: u64,
}

impl<R: Read> Checked<R> {
    pub fn new(inner: R, what: String, size: u64, expect: Option<Checksum>) -> Checked<R> {
        let hasher = expect.as_ref().map(Checksum::hasher);
        Checked {
            inner,
            what,
            size,
            expect,
            hasher,
            read: 0,
        }
    }

    fn bad(&self, why: String) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", self.what))
    }

    fn at_end(&mut self) -> io::Result<()> {
        if self.read != self.size {
            return Err(self.bad(format!(
                "it holds {} bytes, the origin recorded {}",
                self.read, self.size
            )));
        }
        if let (Some(h), Some(want)) = (self.hasher.take(), &self.expect) {
            let got = h.finish();
            if &got != want {
                return Err(self.bad(format!(
                    "its {} is {}, the origin recorded {}",
                    want.algorithm(),
                    got.hex(),
                    want.hex()
                )));
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if n == 0 {
            self.at_end()?;
            return Ok(0);
        }
        self.read += n as u64;
        if self.read > self.size {
            return Err(self.bad(format!(
                "it holds more than the {} bytes the origin recorded",
                self.size
            )));
        }
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checked_read_names_a_wrong_checksum_and_a_short_file() {
        let data = b"hello";
        let good = Checksum::parse("SHA1", &sha1_hex(data)).unwrap();
        let mut out = Vec::new();
        Checked::new(&data[..], "f".into(), 5, Some(good.clone()))
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        let e = Checked::new(&b"hellO"[..], "base/1/2".into(), 5, Some(good.clone()))
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        let s = e.to_string();
        assert!(s.contains("base/1/2") && s.contains(&good.hex()), "{s}");
        let e = Checked::new(&b"hell"[..], "f".into(), 5, Some(good))
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("holds 4 bytes"), "{e}");
    }

    #[test]
    fn crc32c_is_read_as_pg_basebackup_writes_it() {
        let crc = crc32c::crc32c(b"123456789");
        let hex = super::hex(&crc.to_le_bytes());
        assert_eq!(Checksum::parse("CRC32C", &hex), Some(Checksum::Crc32c(crc)));
    }
}
