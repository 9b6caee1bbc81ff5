//! `recman calibrate`: seed 000's first step, "determine the rate of disks and backup media",
//! done by the product on the cluster's own files. Everything here reads the database (never
//! writes it); the only writes are probe objects on each output device, removed at once
//! ([`super::media_probe`]).

pub use super::probes::{CalibrateOptions, InputDevice, OutputDevice, ReadProbe, WriteProbe};
use super::read_probe::{Span, rate, read_probe};
use crate::error::EngineError;
use recman_media::Media;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Per-core rates on a sample of the cluster's pages (bytes of input per second of one core).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CodecRate {
    /// none, lz4, zstd:N.
    pub compression: String,
    pub bytes_per_second: u64,
    /// Output bytes per input byte.
    pub ratio: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuRates {
    pub cores: u32,
    pub sample_bytes: u64,
    /// Page checks (checksum and header) plus the chunk CRC: what every backup pays.
    pub check_bytes_per_second: u64,
    pub codecs: Vec<CodecRate>,
    /// Cores' worth of work the machine gave `cores` threads checking and compressing at once,
    /// against one thread alone: below `cores` on a machine others are using. 0 in
    /// calibrations taken before it was measured (read as `cores`).
    #[serde(default)]
    pub parallel_cores: f64,
    /// Cores' worth of CPU time the process's cgroup allows (a container's CPU limit), when
    /// it has one: it may be below one core, and the probes above, too short to meet it, do
    /// not show it.
    #[serde(default)]
    pub cpu_limit: Option<f64>,
    /// What a channel's whole CPU work ran at in the database's recent backups, by
    /// compression (bytes read per second of the channels' CPU time,
    /// [`super::overhead::learn`]): learned from the catalog when advise runs,
    /// never measured or stored by calibrate.
    #[serde(skip)]
    pub learned: std::collections::BTreeMap<String, f64>,
}

impl CpuRates {
    /// The cores a backup's channels can count on: what the threads got at once, within the
    /// cgroup's CPU limit.
    pub fn usable_cores(&self) -> f64 {
        let cores = self.cores.max(1) as f64;
        let got = if self.parallel_cores > 0.0 {
            self.parallel_cores.clamp(1.0, cores)
        } else {
            cores
        };
        match self.cpu_limit {
            Some(l) if l > 0.0 => got.min(l),
            _ => got,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageCache {
    pub bytes: u64,
    pub resident_bytes: u64,
    pub fraction: f64,
}

/// Everything `calibrate` measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Unix microseconds.
    pub taken_at: i64,
    pub pgdata: String,
    pub total_bytes: u64,
    pub inputs: Vec<InputDevice>,
    pub outputs: Vec<OutputDevice>,
    pub cpu: CpuRates,
    pub page_cache: PageCache,
    pub io_uring: bool,
}

/// Request sizes and queue depths probed for direct reads.
const SHAPES: &[(u64, u32)] = &[(128 << 10, 1), (1 << 20, 1), (1 << 20, 4), (1 << 20, 16)];

/// Measures the cluster at `pgdata` and the output devices `outputs` (device type, media).
pub fn calibrate(
    pgdata: &Path,
    outputs: &[(String, Arc<dyn Media>)],
    opt: &CalibrateOptions,
) -> Result<Calibration, EngineError> {
    let scan = crate::scan::scan_data_dir(pgdata)?;
    // Files by device, largest first: a probe reads the largest files, where a backup spends
    // its time.
    let mut by_dev: BTreeMap<String, Vec<(PathBuf, u64)>> = BTreeMap::new();
    for f in &scan.files {
        let p = f.abs(pgdata);
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        let dev = format!("{}:{}", libc::major(m.dev()), libc::minor(m.dev()));
        by_dev.entry(dev).or_default().push((p, m.len()));
    }
    // Before any probe: a buffered probe brings what it reads into the cache.
    let cache = page_cache(&scan.files, pgdata);
    let io_uring = crate::io::probe_uring().is_ok();
    let mut inputs = Vec::new();
    // Each input's spans, by its index in `inputs`: the probe of reads and writes at once
    // reads them again.
    let mut spans_of = Vec::new();
    for (device, mut files) in by_dev {
        files.sort_by_key(|f| std::cmp::Reverse(f.1));
        let mut d = InputDevice {
            device,
            bytes: files.iter().map(|f| f.1).sum(),
            files: files.len() as u64,
            largest_file: files.first().map(|f| f.1).unwrap_or(0),
            probes: Vec::new(),
            best_bytes_per_second: 0,
            best_request_size: 0,
            best_queue_depth: 0,
            read_and_check: None,
        };
        // Every probe reads the same largest files from their start, as a backup meets them
        // (direct reads leave the page cache as it was); the cache's share was taken before.
        let spans = whole(&files);
        for &(size, qd) in SHAPES {
            let p = read_probe(&spans, size, qd, true, opt, io_uring, None)?;
            if p.bytes_per_second > d.best_bytes_per_second {
                d.best_bytes_per_second = p.bytes_per_second;
                d.best_request_size = size;
                d.best_queue_depth = qd;
            }
            d.probes.push(p);
        }
        d.probes
            .push(read_probe(&spans, 1 << 20, 4, false, opt, io_uring, None)?);
        d.read_and_check = Some(read_and_check(&files, &d, opt, io_uring)?);
        spans_of.push(spans);
        inputs.push(d);
    }
    let mut outs = Vec::new();
    for (device_type, m) in outputs {
        let mut o = super::media_probe::probe_media(m.as_ref(), device_type, opt)?;
        // A repository on the cluster's own device: how far its writes and the reads share
        // the device, each side as fast as it goes beside the other.
        if let Some((d, spans)) = inputs
            .iter()
            .zip(&spans_of)
            .find(|(d, _)| !o.device.is_empty() && d.device == o.device)
        {
            o.mixed = Some(super::shared_probe::probe(
                spans,
                d,
                m.as_ref(),
                opt,
                io_uring,
                opt.write_bytes.saturating_mul(8),
            )?);
        }
        outs.push(o);
    }
    let sample = sample_pages(&scan.files, pgdata, opt.sample_bytes);
    Ok(Calibration {
        taken_at: crate::util::now_micros(),
        pgdata: pgdata.display().to_string(),
        total_bytes: scan.files.iter().map(|f| f.size).sum(),
        inputs,
        outputs: outs,
        cpu: cpu_rates(&sample),
        page_cache: cache,
        io_uring,
    })
}

/// Reads at `d`'s best queue depth, in requests of at least 1 MiB (a channel's input buffers),
/// with each buffer's pages checked as it arrives (checksums, headers and the chunk CRC, what
/// `check_bytes_per_second` measures alone); the overlap of the two against the best probe
/// and the check rate on these bytes; then the same with several threads at once.
fn read_and_check(
    files: &[(PathBuf, u64)],
    d: &InputDevice,
    opt: &CalibrateOptions,
    io_uring: bool,
) -> Result<super::read_check::ReadAndCheck, EngineError> {
    let (size, qd) = (d.best_request_size.max(1 << 20), d.best_queue_depth.max(1));
    let mut checked = 0u64;
    let mut cpu = Duration::ZERO;
    let process_cpu = super::process_cpu_time();
    let mut check = |b: &[u8]| {
        let t0 = super::thread_cpu_time();
        check_chunk(b);
        cpu += super::thread_cpu_time() - t0;
        checked += b.len() as u64;
        true
    };
    let p = read_probe(
        &whole(files),
        size,
        qd,
        true,
        opt,
        io_uring,
        Some(&mut check),
    )?;
    // Nothing else runs meanwhile: the process's CPU time is the probe's, its reads' included.
    let cpu_rate = rate(p.bytes, super::process_cpu_time() - process_cpu);
    // The check rate on these very bytes, from the CPU time the checks took here: the sample's
    // rate would be measured on another thread at another time.
    let check_rate = rate(checked, cpu);
    let read = d.best_bytes_per_second as f64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let mut parallel = Vec::new();
    // Every thread needs a share of its own (at least 1 MiB).
    let bytes: u64 = files.iter().map(|f| f.1).sum();
    for threads in [cores, 2 * cores] {
        if threads > 1 && bytes.min(opt.probe_bytes) >= threads as u64 * (1 << 20) {
            parallel.push(super::read_check::ThreadsRate {
                threads,
                bytes_per_second: parallel_read_and_check(files, threads, size, qd, opt, io_uring)?,
            });
        }
    }
    Ok(super::read_check::ReadAndCheck {
        request_size: size,
        queue_depth: qd,
        bytes: p.bytes,
        bytes_per_second: p.bytes_per_second,
        overlap: super::read_check::overlap(read, check_rate as f64, p.bytes_per_second as f64),
        parallel,
        cpu_bytes_per_second: cpu_rate,
    })
}

/// `threads` threads reading and checking at once, each an equal, contiguous part of the bytes
/// the one-thread probe reads (the files largest first, up to `probe_bytes`): sections of the
/// largest file where it holds them, as channels share a dominant file. Dealing whole files
/// instead gave one thread a part of the largest file and another a smaller file and then
/// hundreds of small ones, whose slowest set the rate. Their bytes together over the time the
/// slowest took.
fn parallel_read_and_check(
    files: &[(PathBuf, u64)],
    threads: u32,
    size: u64,
    qd: u32,
    opt: &CalibrateOptions,
    io_uring: bool,
) -> Result<u64, EngineError> {
    let shares = split_spans(files, opt.probe_bytes, threads);
    let t0 = Instant::now();
    let got: Result<Vec<u64>, EngineError> = std::thread::scope(|s| {
        let hs: Vec<_> = shares
            .iter()
            .map(|share| {
                // Each share is read once (the time limit still applies).
                let each = CalibrateOptions {
                    probe_bytes: share.iter().map(|(_, a, b)| b - a).sum(),
                    ..opt.clone()
                };
                s.spawn(move || {
                    let each = &each;
                    let mut check = |b: &[u8]| {
                        check_chunk(b);
                        true
                    };
                    read_probe(share, size, qd, true, each, io_uring, Some(&mut check))
                        .map(|p| p.bytes)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("calibration reader"))
            .collect()
    });
    Ok(rate(got?.iter().sum(), t0.elapsed()))
}

/// The first `total` bytes of `files`, in order, cut into `parts` contiguous shares of
/// (path, start, end) spans, each cut on a 1 MiB boundary; empty shares are left out.
fn split_spans(files: &[(PathBuf, u64)], total: u64, parts: u32) -> Vec<Vec<Span>> {
    let have: u64 = files.iter().map(|f| f.1).sum();
    let total = total.min(have);
    let per = total
        .div_ceil(parts.max(1) as u64)
        .next_multiple_of(1 << 20)
        .max(1 << 20);
    let mut shares: Vec<Vec<Span>> = Vec::new();
    let mut share: Vec<Span> = Vec::new();
    let (mut in_share, mut taken) = (0u64, 0u64);
    for (path, len) in files {
        let mut start = 0;
        while start < *len && taken < total {
            let n = (len - start).min(per - in_share).min(total - taken);
            share.push((path.clone(), start, start + n));
            (start, in_share, taken) = (start + n, in_share + n, taken + n);
            if in_share == per {
                shares.push(std::mem::take(&mut share));
                in_share = 0;
            }
        }
    }
    if !share.is_empty() {
        shares.push(share);
    }
    shares
}

/// Whole files as spans.
fn whole(files: &[(PathBuf, u64)]) -> Vec<Span> {
    files.iter().map(|(p, len)| (p.clone(), 0, *len)).collect()
}

/// What a channel does to every chunk it reads: page checks and the chunk's CRC.
fn check_chunk(c: &[u8]) {
    let pages = &c[..c.len() / recman_page::BLCKSZ * recman_page::BLCKSZ];
    std::hint::black_box(recman_page::verify_pages(pages, 0, false));
    std::hint::black_box(crc32c::crc32c(c));
    for p in pages.chunks_exact(recman_page::BLCKSZ) {
        std::hint::black_box(recman_page::checksum_page(p, 0));
    }
}

/// Up to `want` bytes of whole pages, taken as `SAMPLE_SLICES` slices spread evenly over all
/// the cluster's relation files by their bytes: heap, indexes and small catalogs in the shares
/// a backup meets them (the first pages of the largest table alone compressed 1.7 to 1.8
/// times better than a whole pgbench cluster did, and advise under-counted the writes by as
/// much).
fn sample_pages(files: &[crate::scan::ScannedFile], pgdata: &Path, want: usize) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    const BLCKSZ: u64 = recman_page::BLCKSZ as u64;
    let mut rel: Vec<&crate::scan::ScannedFile> = files
        .iter()
        .filter(|f| f.relfile.is_some() && f.size >= BLCKSZ)
        .collect();
    rel.sort_by(|a, b| a.rel.cmp(&b.rel));
    let total: u64 = rel.iter().map(|f| f.size).sum();
    let mut out = Vec::with_capacity(want);
    if total == 0 {
        return out;
    }
    let slice = (want as u64 / SAMPLE_SLICES).max(BLCKSZ) / BLCKSZ * BLCKSZ;
    let step = total / SAMPLE_SLICES;
    let (mut file, mut before) = (0usize, 0u64);
    for i in 0..SAMPLE_SLICES {
        if out.len() >= want {
            break;
        }
        // The middle of the i-th share of the bytes, in the file that holds it.
        let pos = i * step + step / 2;
        while before + rel[file].size <= pos {
            before += rel[file].size;
            file += 1;
        }
        let f = rel[file];
        let at = (pos - before) / BLCKSZ * BLCKSZ;
        let take = slice
            .min((f.size - at) / BLCKSZ * BLCKSZ)
            .min((want - out.len()) as u64 / BLCKSZ * BLCKSZ) as usize;
        let Ok(mut h) = File::open(f.abs(pgdata)) else {
            continue;
        };
        let start = out.len();
        out.resize(start + take, 0);
        if h.seek(SeekFrom::Start(at)).is_err() || h.read_exact(&mut out[start..]).is_err() {
            out.truncate(start);
        }
    }
    out
}

/// Slices the CPU sample is taken in.
const SAMPLE_SLICES: u64 = 64;

fn cpu_rates(sample: &[u8]) -> CpuRates {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let chunk = 1 << 20;
    let timed = |f: &mut dyn FnMut(&[u8]) -> usize| {
        let t0 = Instant::now();
        let mut out = 0usize;
        for c in sample.chunks(chunk) {
            out += f(c);
        }
        (rate(sample.len() as u64, t0.elapsed()), out)
    };
    let (check, _) = timed(&mut |c: &[u8]| {
        check_chunk(c);
        0
    });
    let ratio = |out: usize| {
        if sample.is_empty() {
            1.0
        } else {
            out as f64 / sample.len() as f64
        }
    };
    let mut codecs = vec![CodecRate {
        compression: "none".into(),
        bytes_per_second: u64::MAX,
        ratio: 1.0,
    }];
    let (r, out) = timed(&mut |c: &[u8]| lz4_flex::block::compress(c).len());
    codecs.push(CodecRate {
        compression: "lz4".into(),
        bytes_per_second: r,
        ratio: ratio(out),
    });
    for level in [1, 3, 9] {
        let mut z = zstd::bulk::Compressor::new(level).expect("a zstd compressor");
        let (r, out) = timed(&mut |c: &[u8]| z.compress(c).map(|v| v.len()).unwrap_or(c.len()));
        codecs.push(CodecRate {
            compression: format!("zstd:{level}"),
            bytes_per_second: r,
            ratio: ratio(out),
        });
    }
    CpuRates {
        cores,
        sample_bytes: sample.len() as u64,
        check_bytes_per_second: check,
        codecs,
        parallel_cores: parallel_cores(sample, cores),
        cpu_limit: crate::cpu::cgroup_cpu_limit(),
        learned: Default::default(),
    }
}

/// Checks and lz4 on `cores` threads at once against one thread alone, as cores' worth of
/// work: what a second channel really adds on this machine now.
fn parallel_cores(sample: &[u8], cores: u32) -> f64 {
    if sample.is_empty() || cores <= 1 {
        return 1.0;
    }
    let work = || {
        for c in sample.chunks(1 << 20) {
            std::hint::black_box(recman_page::verify_pages(
                &c[..c.len() / 8192 * 8192],
                0,
                false,
            ));
            std::hint::black_box(crc32c::crc32c(c));
            std::hint::black_box(lz4_flex::block::compress(c).len());
        }
    };
    let t0 = Instant::now();
    work();
    let one = t0.elapsed().as_secs_f64().max(1e-6);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..cores {
            s.spawn(work);
        }
    });
    let all = t0.elapsed().as_secs_f64().max(1e-6);
    (cores as f64 * one / all).clamp(0.0, cores as f64)
}

/// How much of the cluster's files are in the page cache.
fn page_cache(files: &[crate::scan::ScannedFile], pgdata: &Path) -> PageCache {
    let (mut bytes, mut resident) = (0u64, 0u64);
    for f in files {
        if f.size == 0 {
            continue;
        }
        let Ok(h) = File::open(f.abs(pgdata)) else {
            continue;
        };
        if let Some((res, len)) = crate::residency::resident(&h, 0, u64::MAX) {
            resident += res;
            bytes += len;
        }
    }
    let resident = resident.min(bytes);
    PageCache {
        bytes,
        resident_bytes: resident,
        fraction: if bytes > 0 {
            resident as f64 / bytes as f64
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod span_tests {
    use super::*;

    #[test]
    fn threads_share_the_largest_file_in_sections_as_channels_do() {
        let mib = 1u64 << 20;
        let files = vec![
            (PathBuf::from("big"), 1024 * mib),
            (PathBuf::from("index"), 200 * mib),
            (PathBuf::from("small"), 8192),
        ];
        // 256 MiB over 2 threads: two sections of the largest file, nothing else.
        let two = split_spans(&files, 256 * mib, 2);
        assert_eq!(
            two,
            vec![
                vec![(PathBuf::from("big"), 0, 128 * mib)],
                vec![(PathBuf::from("big"), 128 * mib, 256 * mib)],
            ]
        );
        // More than the files hold: every byte once, the shares cut across files.
        let all = split_spans(&files, u64::MAX, 3);
        let bytes: Vec<u64> = all
            .iter()
            .map(|s| s.iter().map(|(_, a, b)| b - a).sum())
            .collect();
        assert_eq!(bytes.iter().sum::<u64>(), 1224 * mib + 8192);
        assert_eq!(all.len(), 3);
        assert!(bytes[0] == bytes[1] && bytes[2] <= bytes[0], "{bytes:?}");
        // The last share: the largest file's tail, then the index and the small file.
        let names: Vec<_> = all[2].iter().map(|s| s.0.to_str().unwrap()).collect();
        assert_eq!(names, ["big", "index", "small"]);
        assert_eq!(all[2][0].1, 2 * bytes[0]);
    }

    #[test]
    fn the_cpu_sample_is_spread_over_every_relation_file_by_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let page = recman_page::BLCKSZ;
        // A table of 48 pages and two smaller files of 8, each page filled with its file's
        // mark; a file that is no relation is never sampled.
        let mut files = Vec::new();
        for (name, pages, mark) in [("1", 8, 1u8), ("2", 48, 2), ("3", 8, 3), ("x", 64, 9)] {
            std::fs::write(dir.path().join(name), vec![mark; pages * page]).unwrap();
            files.push(crate::scan::ScannedFile {
                rel: name.into(),
                size: (pages * page) as u64,
                mode: 0o600,
                uid: 0,
                gid: 0,
                mtime: 0,
                relfile: (name != "x").then_some(recman_page::RelFile {
                    tablespace_oid: None,
                    db_oid: Some(5),
                    relfilenode: 16384,
                    fork: recman_page::Fork::Main,
                    segno: 0,
                }),
            });
        }
        // One page per slice: the files in the shares of the bytes they hold.
        let sample = sample_pages(&files, dir.path(), SAMPLE_SLICES as usize * page);
        let count = |mark| sample.chunks(page).filter(|p| p[0] == mark).count();
        assert_eq!(sample.len(), SAMPLE_SLICES as usize * page);
        assert_eq!((count(1), count(2), count(3), count(9)), (8, 48, 8, 0));
    }
}
