//! Reads and writes at once on a device that holds both the cluster and a disk repository.
//! calibrate's other probes measure each direction alone; whether the two then take turns on
//! the device (one queue, one head) or run side by side (a write throttle that leaves the
//! reads alone, a device with room for both) decides whether a backup's read and write times
//! add or overlap, and advise cannot tell which from the rates alone.

use super::media_probe::{PROBE_PREFIX, noise, write_object};
pub use super::probes::MixedProbe;
use super::probes::{CalibrateOptions, InputDevice};
use super::read_probe::{Span, rate, read_probe};
use crate::error::EngineError;
use recman_media::Media;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Time per input byte on a device that reads `read_seconds` and writes `write_seconds` per
/// input byte, as far as the two overlap (`overlap`, see [`MixedProbe::overlap`]): between
/// their sum and the larger of the two.
pub fn shared_seconds(read_seconds: f64, write_seconds: f64, overlap: f64) -> f64 {
    let o = overlap.clamp(0.0, 1.0);
    (1.0 - o) * (read_seconds + write_seconds) + o * read_seconds.max(write_seconds)
}

/// Reads `spans` (on device `d`) and writes a probe object to `m` at once for up to
/// `opt.probe_time`; each side stops when the other does, and the reader counts only what it
/// read while the writer ran, so both rates are of the same moments. The writer writes at
/// most `write_cap` bytes (the repository's free space is the user's); its object is removed
/// before this returns, also after a failure.
pub fn probe(
    spans: &[Span],
    d: &InputDevice,
    m: &dyn Media,
    opt: &CalibrateOptions,
    io_uring: bool,
    write_cap: u64,
) -> Result<MixedProbe, EngineError> {
    let name = format!(
        "{PROBE_PREFIX}mixed-{}-{}",
        std::process::id(),
        crate::util::now_micros()
    );
    let data = noise(1 << 20);
    let (reader_done, writer_done) = (AtomicBool::new(false), AtomicBool::new(false));
    let t0 = Instant::now();
    let deadline = t0 + opt.probe_time;
    let (read, wrote) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let r = write(m, &name, &data, write_cap, deadline, &reader_done);
            writer_done.store(true, Ordering::Release);
            r
        });
        // Only what was read while the writer still ran counts, up to the last such buffer;
        // the reader stops there.
        let (mut bytes, mut last) = (0u64, t0);
        let mut count = |b: &[u8]| {
            if writer_done.load(Ordering::Acquire) {
                return false;
            }
            bytes += b.len() as u64;
            last = Instant::now();
            true
        };
        let read = read_probe(
            spans,
            d.best_request_size.max(1 << 20),
            d.best_queue_depth.max(1),
            true,
            &CalibrateOptions {
                probe_bytes: u64::MAX,
                ..opt.clone()
            },
            io_uring,
            Some(&mut count),
        );
        reader_done.store(true, Ordering::Release);
        let wrote = writer.join().expect("calibration writer");
        (read.map(|_| (bytes, last - t0)), wrote)
    });
    let removed = m.remove(&name);
    let (read_bytes, read_time) = read?;
    let (write_bytes, write_time) = wrote?;
    removed.map_err(|e| {
        EngineError::from(crate::refusal::Input::ProbeLeft {
            name: name.to_string(),
            medium: m.describe(),
            why: e.to_string(),
        })
    })?;
    Ok(MixedProbe {
        read_bytes_per_second: rate(read_bytes, read_time),
        write_bytes_per_second: rate(write_bytes, write_time),
        seconds: read_time.min(write_time).as_secs_f64(),
    })
}

/// Writes up to `cap` bytes until `deadline` or until the reader stops, then commits; the bytes
/// and the time to the end of the commit (a disk's O_DIRECT writes are in flight until then).
fn write(
    m: &dyn Media,
    name: &str,
    data: &[u8],
    cap: u64,
    deadline: Instant,
    reader_done: &AtomicBool,
) -> Result<(u64, Duration), EngineError> {
    let t0 = Instant::now();
    let stop = || Instant::now() >= deadline || reader_done.load(Ordering::Acquire);
    let done = write_object(m, name, data, cap, &stop)?;
    Ok((done, t0.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlap_runs_from_shared_time_to_side_by_side() {
        let p = |r, w| MixedProbe {
            read_bytes_per_second: r,
            write_bytes_per_second: w,
            seconds: 1.0,
        };
        // Each direction got half of what it got alone: the device's time was shared.
        assert_eq!(p(50, 20).overlap(100.0, 40.0), 0.0);
        // Both as fast as alone.
        assert_eq!(p(100, 40).overlap(100.0, 40.0), 1.0);
        // A write throttle that left the reads most of their rate (measured with fio on
        // this machine: 1,505 of 2,737 MiB/s read beside 39.6 of 39.6 written).
        assert!((p(1505, 396).overlap(2737.0, 396.0) - 0.55).abs() < 0.01);
        // Noise either way stays within the bounds; nothing measured alone: shared.
        assert_eq!(p(120, 50).overlap(100.0, 40.0), 1.0);
        assert_eq!(p(10, 4).overlap(100.0, 40.0), 0.0);
        assert_eq!(p(10, 4).overlap(0.0, 40.0), 0.0);
    }

    #[test]
    fn shared_time_lies_between_the_sum_and_the_larger() {
        assert_eq!(shared_seconds(1.0, 3.0, 0.0), 4.0);
        assert_eq!(shared_seconds(1.0, 3.0, 1.0), 3.0);
        assert_eq!(shared_seconds(1.0, 3.0, 0.5), 3.5);
        assert_eq!(shared_seconds(1.0, 3.0, 7.0), 3.0);
    }
}
