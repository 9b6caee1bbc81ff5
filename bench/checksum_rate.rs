// Page-checksum rate of one core over a data file, for bench/peers.sh. Built with plain
// `rustc -O` (no crates) so the benchmark does not touch the workspace. The algorithm is
// PostgreSQL's pg_checksum_page, as in crates/recman-page/src/page.rs.
//
//   checksum_rate FILE [MAX_MIB] [SECONDS]
// prints one JSON object: bytes, pages, seconds, mb_per_s, mismatches (pages whose stored
// checksum differs, block numbers taken as the file's own, so only the first segment of a
// relation is expected to match).
use std::io::Read;
use std::time::Instant;

const BLCKSZ: usize = 8192;
const N_SUMS: usize = 32;
const FNV_PRIME: u32 = 16_777_619;
const BASE: [u32; N_SUMS] = [
    0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, 0x79FF467A, 0x9BB9F8A3, 0x217E7CD2, 0x83E13D2C,
    0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA, 0x7B093B5D, 0x98DAFF3C, 0xF718902A, 0x0B1C9CDB,
    0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE, 0x92BEC979, 0xCCA6C0B2, 0x304A0979, 0x85AA43D4,
    0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E, 0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756,
];

#[inline(always)]
fn comp(sum: u32, value: u32) -> u32 {
    let tmp = sum ^ value;
    tmp.wrapping_mul(FNV_PRIME) ^ (tmp >> 17)
}

fn checksum(page: &[u8], blkno: u32) -> u16 {
    let mut sums = BASE;
    for (i, row) in page.chunks_exact(N_SUMS * 4).enumerate() {
        for (j, sum) in sums.iter_mut().enumerate() {
            let mut v = u32::from_le_bytes([row[4 * j], row[4 * j + 1], row[4 * j + 2], row[4 * j + 3]]);
            if i == 0 && j == 2 {
                v &= 0xFFFF_0000; // pd_checksum counts as zero
            }
            *sum = comp(*sum, v);
        }
    }
    let mut result = 0u32;
    for sum in sums.iter_mut() {
        *sum = comp(comp(*sum, 0), 0);
        result ^= *sum;
    }
    (((result ^ blkno) % 65535) + 1) as u16
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        eprintln!("usage: checksum_rate FILE [MAX_MIB] [SECONDS]");
        std::process::exit(2);
    }
    let max = args.get(2).map_or(512, |s| s.parse::<usize>().expect("MAX_MIB")) << 20;
    let secs: f64 = args.get(3).map_or(1.0, |s| s.parse().expect("SECONDS"));
    let mut data = Vec::new();
    std::fs::File::open(&args[1])
        .expect("open")
        .take(max as u64)
        .read_to_end(&mut data)
        .expect("read");
    data.truncate(data.len() / BLCKSZ * BLCKSZ);
    let pages = data.len() / BLCKSZ;
    if pages == 0 {
        eprintln!("{}: no whole page", args[1]);
        std::process::exit(1);
    }
    let mut mismatches;
    let mut passes = 0usize;
    let start = Instant::now();
    loop {
        let mut bad = 0usize;
        for (blk, page) in data.chunks_exact(BLCKSZ).enumerate() {
            let stored = u16::from_le_bytes([page[8], page[9]]);
            if checksum(page, blk as u32) != stored && !page.iter().all(|b| *b == 0) {
                bad += 1;
            }
        }
        mismatches = bad;
        passes += 1;
        if start.elapsed().as_secs_f64() >= secs {
            break;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let bytes = data.len() * passes;
    println!(
        "{{\"bytes\": {}, \"pages\": {}, \"passes\": {}, \"seconds\": {:.3}, \"mb_per_s\": {:.1}, \"mismatches\": {}}}",
        data.len(),
        pages,
        passes,
        elapsed,
        bytes as f64 / elapsed / 1e6,
        mismatches
    );
}
