//! Reproduces the seeds' tape findings on the vtape model (docs/vtape.md):
//!
//! 1. throughput grows linearly with drives until the input (disk read) limit, then flattens;
//! 2. a 64 KiB BLKSIZE is slower than 256 KiB and 1 MiB;
//! 3. hardware compression multiplies the native rate by the data's compressibility;
//! 4. a drive fed slower than its native rate shoe-shines, and with a small buffer it then
//!    writes slower than its input.
//!
//! Rates are scaled to a DLT7000-class drive (5 MB/s native, 8 MB buffer), the drive of the
//! Sun 1 TB/hour benchmark, so runs are short and the files small. Prints a markdown table
//! and writes the rows as JSON.
//!
//!   cargo run --release -p recman-media --example vtape_bench -- [--quick] [--out FILE]

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use recman_media::Media;
use recman_media::conformance::pattern;
use recman_media::vtape::{DriveStats, VtapeConfig, VtapeMedia, lz4_ratio};

const MB: f64 = 1e6;
const NATIVE: f64 = 5e6;

/// The base drive: a DLT7000 (5 MB/s native, 8 MB buffer) with 1 MiB blocks, as in the Sun
/// benchmark. The block overhead, 23 KB of transfer time, is fitted to the 2001 paper's
/// Table 11 (64 KiB blocks at 0.80 of the 256 KiB rate).
fn base() -> VtapeConfig {
    VtapeConfig {
        drives: 1,
        block_size: 1 << 20,
        cartridge_capacity: 1 << 30,
        cartridges: 10,
        native_rate: NATIVE,
        hardware_compression: false,
        load_time: Duration::from_millis(100),
        position_time: Duration::from_millis(100),
        block_overhead: Duration::from_secs_f64(23_093.0 / NATIVE),
        drive_buffer: 8 << 20,
    }
}

/// A shared input of limited rate (the disks RMAN reads): callers queue for it, and time
/// nobody uses is lost, since a reader blocked on a full drive buffer reads nothing.
struct Pipe {
    rate: f64,
    next: Mutex<Instant>,
}

impl Pipe {
    fn new(rate: f64) -> Pipe {
        Pipe {
            rate,
            next: Mutex::new(Instant::now()),
        }
    }

    fn take(&self, bytes: usize) {
        let until = {
            let mut next = self.next.lock().unwrap();
            *next = (*next).max(Instant::now()) + Duration::from_secs_f64(bytes as f64 / self.rate);
            *next
        };
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
    }
}

struct Row {
    finding: &'static str,
    setting: String,
    bytes: u64,
    secs: f64,
    expected: f64,
    stats: Vec<DriveStats>,
    note: String,
}

impl Row {
    fn rate(&self) -> f64 {
        self.bytes as f64 / self.secs
    }
    /// Without the first cartridge load, which the drives do in parallel: the seeds'
    /// sustained rate, where the total rate counts mounting and positioning too.
    fn sustained(&self) -> f64 {
        self.bytes as f64 / (self.secs - base().load_time.as_secs_f64())
    }
    fn shoe_shines(&self) -> u64 {
        self.stats.iter().map(|s| s.shoe_shines).sum()
    }
}

/// Writes `channels` objects of `bytes` each, one thread per drive, each chunk of
/// `block_size` first taken from `input` when there is one. Returns the elapsed seconds.
fn run(m: &VtapeMedia, channels: usize, bytes: usize, data: &[u8], input: Option<&Pipe>) -> f64 {
    let chunk = m.config().block_size;
    let start = Instant::now();
    std::thread::scope(|s| {
        for ch in 0..channels {
            s.spawn(move || {
                let mut w = m.create(&format!("ch{ch}/piece")).unwrap();
                let mut left = bytes;
                let mut at = 0;
                while left > 0 {
                    let n = chunk.min(left);
                    if let Some(p) = input {
                        p.take(n);
                    }
                    if at + n > data.len() {
                        at = 0;
                    }
                    w.write_all(&data[at..at + n]).unwrap();
                    at += n;
                    left -= n;
                }
                w.commit().unwrap();
            });
        }
    });
    start.elapsed().as_secs_f64()
}

fn library(config: &VtapeConfig) -> (tempfile::TempDir, VtapeMedia) {
    let dir = tempfile::tempdir().unwrap();
    let m = VtapeMedia::create_library(dir.path(), config).unwrap();
    (dir, m)
}

/// Random bytes with zeros mixed in: in every 1 KiB, a share of 1/target stays random.
fn compressible(len: usize, target: f64, seed: u64) -> Vec<u8> {
    let mut data = pattern(len, seed);
    let keep = (1024.0 / target).round() as usize;
    for piece in data.chunks_mut(1024) {
        let keep = keep.min(piece.len());
        piece[keep..].fill(0);
    }
    data
}

fn drives_scaling(per_channel: usize, rows: &mut Vec<Row>) {
    let limit = 4.0 * NATIVE;
    let data = pattern(8 << 20, 11);
    for n in [1, 2, 4, 8] {
        let config = VtapeConfig {
            drives: n,
            ..base()
        };
        let (_dir, m) = library(&config);
        let pipe = Pipe::new(limit);
        let secs = run(&m, n, per_channel, &data, Some(&pipe));
        rows.push(Row {
            finding: "1 scaling",
            setting: format!("{n} drive(s), {n} channel(s), input {:.0} MB/s", limit / MB),
            bytes: (n * per_channel) as u64,
            secs,
            expected: (n as f64 * NATIVE).min(limit),
            stats: m.drive_stats(),
            note: if n as f64 * NATIVE > limit {
                "input-bound: drives starve".to_string()
            } else {
                "drive-bound".to_string()
            },
        });
    }
}

fn block_sizes(bytes: usize, rows: &mut Vec<Row>) {
    let data = pattern(8 << 20, 12);
    let config = base();
    let overhead = config.block_overhead.as_secs_f64();
    let mut rate_256k = 0.0;
    for kib in [64usize, 256, 1024] {
        let block = kib << 10;
        let (_dir, m) = library(&VtapeConfig {
            block_size: block,
            ..config.clone()
        });
        let secs = run(&m, 1, bytes, &data, None);
        let expected = block as f64 / (overhead + block as f64 / NATIVE);
        let rate = bytes as f64 / secs;
        let note = match kib {
            64 => "seed Table 11: 15.15 MB/s vs 18.83 at 256 KiB (0.80)".to_string(),
            256 => {
                rate_256k = rate;
                "the Oracle9i default".to_string()
            }
            _ => "the Sun benchmark's BLKSIZE".to_string(),
        };
        rows.push(Row {
            finding: "2 BLKSIZE",
            setting: format!("BLKSIZE {kib} KiB"),
            bytes: bytes as u64,
            secs,
            expected,
            stats: m.drive_stats(),
            note,
        });
    }
    let first = rows.len() - 3;
    let rate_64k = rows[first].rate();
    rows[first].note += &format!("; here {:.2} of 256 KiB", rate_64k / rate_256k);
}

fn compression(bytes: usize, rows: &mut Vec<Row>) {
    let config = VtapeConfig {
        hardware_compression: true,
        ..base()
    };
    for (target, what) in [
        (1.0, "random bytes"),
        (1.77, "the Sun benchmark's data (1.77:1 on DLT)"),
        (2.0, "half random, half zeros"),
        (3.0, "a third random"),
    ] {
        let data = compressible(8 << 20, target, 13);
        let block = config.block_size;
        let ratios: Vec<f64> = data.chunks(block).map(lz4_ratio).collect();
        // The drive's rate follows bytes per tape byte, a harmonic mean over blocks.
        let ratio = ratios.len() as f64 / ratios.iter().map(|r| 1.0 / r).sum::<f64>();
        let (_dir, m) = library(&config);
        let secs = run(&m, 1, bytes, &data, None);
        rows.push(Row {
            finding: "3 compression",
            setting: format!("data lz4 ratio {ratio:.2} (target {target})"),
            bytes: bytes as u64,
            secs,
            expected: NATIVE * ratio,
            stats: m.drive_stats(),
            note: format!("{what}; expected = native x ratio"),
        });
    }
}

fn streaming(bytes: usize, rows: &mut Vec<Row>) {
    // A drive that stops slowly, like DLT's "multiple seconds to stop and restart", scaled.
    let config = VtapeConfig {
        block_size: 256 << 10,
        position_time: Duration::from_secs(1),
        ..base()
    };
    let data = pattern(8 << 20, 14);
    for (input, buffer, note) in [
        (2.0, 512 << 10, "fed faster than native: streams"),
        (
            0.5,
            512 << 10,
            "starved, small buffer: blocked while repositioning",
        ),
        (
            0.5,
            8 << 20,
            "starved, 8 MB buffer: absorbs the repositions",
        ),
    ] {
        let (_dir, m) = library(&VtapeConfig {
            drive_buffer: buffer,
            ..config.clone()
        });
        let pipe = Pipe::new(input * NATIVE);
        let secs = run(&m, 1, bytes, &data, Some(&pipe));
        rows.push(Row {
            finding: "4 streaming",
            setting: format!(
                "input {:.1} MB/s, buffer {} KiB",
                input * NATIVE / MB,
                buffer >> 10
            ),
            bytes: bytes as u64,
            secs,
            expected: (input * NATIVE).min(NATIVE),
            stats: m.drive_stats(),
            note: note.to_string(),
        });
    }
}

fn main() {
    let mut quick = false;
    let mut out = "bench/results/vtape.json".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--out" => out = args.next().expect("--out needs a file"),
            _ => {
                eprintln!("unknown argument {a}; usage: vtape_bench [--quick] [--out FILE]");
                std::process::exit(2);
            }
        }
    }
    let mib = if quick { 8 << 20 } else { 32 << 20 };
    let started = Instant::now();
    let mut rows = Vec::new();
    drives_scaling(mib, &mut rows);
    block_sizes(mib, &mut rows);
    compression(mib, &mut rows);
    streaming(mib / 2, &mut rows);

    println!(
        "| finding | setting | total MB/s | sustained MB/s | expected MB/s | sustained/expected | shoe-shines | note |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} |",
            r.finding,
            r.setting,
            r.rate() / MB,
            r.sustained() / MB,
            r.expected / MB,
            r.sustained() / r.expected,
            r.shoe_shines(),
            r.note
        );
    }
    println!(
        "\n{} run, {:.0} s. total = object bytes / wall time from the first create to the last commit; \
         sustained leaves out the first cartridge load ({} s)",
        if quick { "quick" } else { "full" },
        started.elapsed().as_secs_f64(),
        base().load_time.as_secs_f64()
    );

    let json = serde_json::json!({
        "quick": quick,
        "base_config": base(),
        "rows": rows.iter().map(|r| serde_json::json!({
            "finding": r.finding,
            "setting": r.setting,
            "bytes": r.bytes,
            "seconds": r.secs,
            "total_mb_per_s": r.rate() / MB,
            "sustained_mb_per_s": r.sustained() / MB,
            "expected_mb_per_s": r.expected / MB,
            "ratio": r.sustained() / r.expected,
            "shoe_shines": r.shoe_shines(),
            "tape_bytes": r.stats.iter().map(|s| s.tape_bytes).sum::<u64>(),
            "loads": r.stats.iter().map(|s| s.loads).sum::<u64>(),
            "note": r.note,
        })).collect::<Vec<_>>(),
    });
    if let Some(parent) = std::path::Path::new(&out).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&out, serde_json::to_string_pretty(&json).unwrap() + "\n").unwrap();
    println!("wrote {out}");
}
