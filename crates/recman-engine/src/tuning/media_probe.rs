//! The output side of `calibrate`: each backup medium — the repository's disk or object store,
//! a configured tape library, an external plugin — measured through the [`Media`] trait the
//! backup itself writes with, so that a disk, S3, a tape drive and a media manager are
//! measured alike. Probe objects go under `calibrate/` and are removed before this returns,
//! whether or not a probe failed.

pub use super::probes::ObjectProbe;
use super::probes::{CalibrateOptions, OutputDevice, WriteProbe};
use super::read_probe::rate;
use crate::error::EngineError;
use recman_media::{Media, MediaError};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Sizes of the probe objects: a small one shows the cost of an object (a request to S3, a
/// tape file mark and repositioning), the larger ones the streaming rate.
pub const OBJECT_SIZES: [u64; 3] = [64 << 10, 1 << 20, 4 << 20];

/// Where probe objects live; nothing else is ever written there.
pub const PROBE_PREFIX: &str = "calibrate/";

/// Bytes no codec (ours, a tape drive's hardware compression) can shrink, so that the figures
/// are the medium's and not the data's.
pub(super) fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Measures `m`, the medium of device type `device_type` (disk, s3, sbt).
pub fn probe_media(
    m: &dyn Media,
    device_type: &str,
    opt: &CalibrateOptions,
) -> Result<OutputDevice, EngineError> {
    let data = noise(1 << 20);
    let tag = format!("{}-{}", std::process::id(), crate::util::now_micros());
    let mut names = Vec::new();
    let r = measure(m, opt, &data, &tag, &mut names);
    // Every probe object goes, also after a failed probe.
    let mut left = Vec::new();
    for n in &names {
        if let Err(e) = m.remove(n) {
            left.push(format!("{n}: {e}"));
        }
    }
    let (probes, objects) = r?;
    if !left.is_empty() {
        return Err(crate::refusal::Input::ProbesLeft {
            medium: m.describe(),
            left: left.join("; "),
        }
        .into());
    }
    let smallest = objects.first();
    Ok(OutputDevice {
        kind: super::device_kind(&m.describe()),
        describe: m.describe(),
        device_type: device_type.to_string(),
        probes,
        write_latency_seconds: smallest.map_or(0.0, |o| o.write_seconds),
        commit_seconds: commit_seconds(&objects),
        read_latency_seconds: smallest.map_or(0.0, |o| o.read_seconds),
        read_bytes_per_second: objects
            .iter()
            .map(|o| o.read_bytes_per_second)
            .max()
            .unwrap_or(0),
        objects,
        device: disk_device(&m.describe()),
        mixed: None,
    })
}

/// "MAJ:MIN" of a disk medium's directory (its description is `disk PATH`); empty otherwise.
fn disk_device(describe: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    describe
        .strip_prefix("disk ")
        .and_then(|p| std::fs::metadata(p.trim()).ok())
        .map(|m| format!("{}:{}", libc::major(m.dev()), libc::minor(m.dev())))
        .unwrap_or_default()
}

type Measured = (Vec<WriteProbe>, Vec<ObjectProbe>);

fn measure(
    m: &dyn Media,
    opt: &CalibrateOptions,
    data: &[u8],
    tag: &str,
    names: &mut Vec<String>,
) -> Result<Measured, EngineError> {
    let mut objects = Vec::new();
    for size in OBJECT_SIZES {
        let name = format!("{PROBE_PREFIX}object-{tag}-{size}");
        names.push(name.clone());
        let t0 = Instant::now();
        write_object(m, &name, data, size, &|| false)?;
        let wrote = t0.elapsed();
        let t1 = Instant::now();
        let mut r = m.open(&name)?;
        let mut buf = vec![0u8; data.len()];
        let mut got = 0u64;
        loop {
            let n = r
                .read(&mut buf)
                .map_err(|e| MediaError::io(&m.describe(), &name, "read", e))?;
            if n == 0 {
                break;
            }
            got += n as u64;
        }
        let read = t1.elapsed();
        if got != size {
            return Err(crate::refusal::Input::ProbeShort {
                name: name.to_string(),
                medium: m.describe(),
                got,
                size,
            }
            .into());
        }
        objects.push(ObjectProbe {
            size,
            write_seconds: wrote.as_secs_f64(),
            read_seconds: read.as_secs_f64(),
            write_bytes_per_second: rate(size, wrote),
            read_bytes_per_second: rate(size, read),
        });
    }
    // Streams as a piece is written: up to `write_bytes` each, or what the largest object's
    // rate writes in `probe_time`, then the commit. A driver that buffers (S3 parts, a tape
    // drive's buffer) accepts bytes far faster than its medium takes them, so the size is set
    // before writing rather than by a clock while writing; the clock only stops a medium that
    // slowed down since.
    let per_stream = objects
        .last()
        .map(|o| (o.write_bytes_per_second as f64 * opt.probe_time.as_secs_f64()) as u64)
        .unwrap_or(opt.write_bytes)
        .clamp(1 << 20, opt.write_bytes.max(1 << 20));
    let per_object = Duration::from_secs_f64(commit_seconds(&objects));
    let mut probes = Vec::new();
    for streams in [1, opt.streams.max(1)] {
        let these: Vec<String> = (0..streams)
            .map(|i| format!("{PROBE_PREFIX}stream-{tag}-{streams}-{i}"))
            .collect();
        names.extend(these.iter().cloned());
        let cpu0 = super::process_cpu_time();
        let t0 = Instant::now();
        let deadline = t0 + opt.probe_time;
        let wrote: Result<Vec<u64>, EngineError> = std::thread::scope(|s| {
            let hs: Vec<_> = these
                .iter()
                .map(|n| {
                    s.spawn(move || {
                        write_object(m, n, data, per_stream, &|| Instant::now() >= deadline)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("calibration writer"))
                .collect()
        });
        let took = t0.elapsed();
        let cpu = super::process_cpu_time().saturating_sub(cpu0);
        let bytes = wrote?.iter().sum();
        probes.push(WriteProbe {
            streams,
            bytes,
            bytes_per_second: rate(bytes, streaming(took, per_object)),
            cpu_bytes_per_second: if cpu.is_zero() { 0 } else { rate(bytes, cpu) },
        });
    }
    Ok((probes, objects))
}

/// What an object costs besides its bytes (create and commit: fsync, rename and the
/// directory's fsync on a disk; the requests around an upload on S3; a file mark and a
/// reposition on tape): where the time of the 1 MiB and 4 MiB objects, on a line over their
/// sizes, meets size 0. Not the smallest object's time: the first object also pays what only a
/// first one does (a tape's load). Never more than the larger object's whole time, which paid
/// the cost once too: noise (a throttle's time slice, a delayed thread) can make the larger
/// object the faster one.
fn commit_seconds(objects: &[ObjectProbe]) -> f64 {
    let [.., a, b] = objects else {
        return 0.0;
    };
    if b.size <= a.size {
        return 0.0;
    }
    let per_byte = (b.write_seconds - a.write_seconds) / (b.size - a.size) as f64;
    (a.write_seconds - per_byte.max(0.0) * a.size as f64)
        .clamp(0.0, a.write_seconds.min(b.write_seconds))
}

/// The time a stream's bytes took once its per-object cost is taken out, so that the rate is
/// the medium's streaming rate (what fio's transfer time measures) and `advise` can add the
/// cost once per piece. At most half of `took` goes: a noisy small-object time must not turn a
/// probe into an unbounded rate.
fn streaming(took: Duration, per_object: Duration) -> Duration {
    took.saturating_sub(per_object.min(took / 2))
}

/// Writes `size` bytes (fewer when `stop` says so after a block, at least one block) and
/// commits; returns the bytes written.
pub(super) fn write_object(
    m: &dyn Media,
    name: &str,
    data: &[u8],
    size: u64,
    stop: &dyn Fn() -> bool,
) -> Result<u64, EngineError> {
    let mut w = m.create(name)?;
    let mut done = 0u64;
    while done < size {
        let k = (size - done).min(data.len() as u64) as usize;
        w.write_all(&data[..k])
            .map_err(|e| MediaError::io(&m.describe(), name, "write", e))?;
        done += k as u64;
        if stop() {
            break;
        }
    }
    w.commit()?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(size: u64, write_seconds: f64) -> ObjectProbe {
        ObjectProbe {
            size,
            write_seconds,
            read_seconds: 0.0,
            write_bytes_per_second: 0,
            read_bytes_per_second: 0,
        }
    }

    #[test]
    fn the_commit_cost_is_where_the_larger_objects_line_meets_size_zero() {
        // A tape: the first object pays the load (0.5 s), each one a 20 ms file mark and
        // reposition, and 1 MiB takes 10 ms on the drive.
        let tape = [
            object(64 << 10, 0.5),
            object(1 << 20, 0.03),
            object(4 << 20, 0.06),
        ];
        assert!((commit_seconds(&tape) - 0.02).abs() < 1e-9);
        // Noise that makes the larger object the faster one: its time per byte counts as 0,
        // and the cost is at most the faster object's whole time.
        let noisy = [
            object(64 << 10, 0.01),
            object(1 << 20, 0.03),
            object(4 << 20, 0.02),
        ];
        assert!((commit_seconds(&noisy) - 0.02).abs() < 1e-9);
        assert_eq!(commit_seconds(&[]), 0.0);
    }

    #[test]
    fn a_streams_rate_leaves_out_the_per_object_cost_but_at_most_half_its_time() {
        let ms = Duration::from_millis;
        assert_eq!(streaming(ms(40), ms(10)), ms(30));
        assert_eq!(streaming(ms(40), ms(30)), ms(20));
        assert_eq!(streaming(ms(40), Duration::ZERO), ms(40));
    }
}
