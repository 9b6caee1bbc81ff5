//! Choosing how a restore writes, from the disk it writes to. No way of writing is right on
//! every disk: on one host of this machine class direct writes ran at five times the rate of
//! buffered writes made durable by fsync, on another at 1.4 times, and some virtual and
//! network disks are faster buffered. So a restore large enough for it to matter measures
//! the target's disk first, the way it is about to write (several writers, each with one
//! write in flight, then an fsync), both ways, and writes directly unless buffered writes are clearly faster.

use super::outfile::WriteMode;
use super::writer::WriteShape;
use crate::EngineError;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// Below this many bytes to write, a restore does not probe: the probe would cost more than
/// the best choice could save.
pub const PROBE_FROM: u64 = 1 << 30;

/// Bytes each probe writes at most.
const PROBE_BYTES: u64 = 64 << 20;

/// What buffered writes must gain over direct ones in the probe before a restore takes them.
/// The probe cannot see two costs that a whole restore meets: the copy into the page cache,
/// which competes with decompression for the CPU, and the dirty-page throttling of a write
/// that lasts minutes, not a fraction of a second. At pgbench scale 200 on one host the probe
/// saw buffered writes at up to 2.4 times the direct rate (1,628 against 680 MB/s) while the
/// restore then ran buffered at 0.38 of its direct rate, so a margin of 1.15 chose wrongly in
/// some runs. Direct writes also leave the page cache to the database. So only a disk that
/// takes buffered writes at three times the direct rate (some network and virtual disks) is
/// restored through the page cache.
const BUFFERED_MARGIN: f64 = 3.0;

/// The faster way by the probe's figures (bytes per second), direct unless buffered writes
/// win by `BUFFERED_MARGIN`.
fn decide(direct: f64, buffered: f64) -> WriteMode {
    if buffered > direct * BUFFERED_MARGIN {
        WriteMode::Buffered
    } else {
        WriteMode::Direct
    }
}

/// How a restore writes, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct WritePlan {
    pub mode: WriteMode,
    pub shape: WriteShape,
    /// Bytes per second each probe measured (direct, buffered), when the disk was probed.
    pub probed: Option<(f64, f64)>,
    /// Why, in a few words, for `-v` and the OUTPUT rows.
    pub why: String,
}

impl WritePlan {
    /// The plan for a mode the user chose.
    pub fn chosen(mode: WriteMode) -> WritePlan {
        WritePlan {
            mode,
            shape: WriteShape::default(),
            probed: None,
            why: format!("{} writes as asked", mode.name()),
        }
    }

    /// One line for `-v`.
    pub fn describe(&self) -> String {
        let probe = match self.probed {
            Some((d, b)) => format!(
                "; the disk took {:.0} MB/s direct and {:.0} MB/s buffered",
                d / 1e6,
                b / 1e6
            ),
            None => String::new(),
        };
        format!(
            "{} writes, {} writer(s) per channel of up to {} KiB each ({}{probe})",
            self.mode.name(),
            self.shape.writers,
            self.shape.request >> 10,
            self.why
        )
    }
}

/// The plan for a restore of `bytes` into `dir` (which exists) over `channels` channels.
pub fn choose(dir: &Path, bytes: u64, channels: u32) -> Result<WritePlan, EngineError> {
    let shape = WriteShape::default();
    if bytes < PROBE_FROM {
        return Ok(WritePlan {
            mode: WriteMode::Direct,
            shape,
            probed: None,
            why: "a small restore: not probed".into(),
        });
    }
    let streams = shape.writers * channels.max(1) as usize;
    let size = PROBE_BYTES.min(bytes / 16);
    let direct = probe(dir, WriteMode::Direct, size, streams, shape.request)?;
    let Some(direct) = direct else {
        return Ok(WritePlan {
            mode: WriteMode::Buffered,
            shape,
            probed: None,
            why: "the file system refuses direct writes".into(),
        });
    };
    let buffered = probe(dir, WriteMode::Buffered, size, streams, shape.request)?
        .expect("buffered writes are always possible");
    let mode = decide(direct, buffered);
    Ok(WritePlan {
        mode,
        shape,
        probed: Some((direct, buffered)),
        why: "measured".into(),
    })
}

/// Writes `size` bytes into a scratch file in `dir` `mode`'s way from `streams` threads in
/// `request`-byte writes, then fsyncs it; bytes per second, None where direct writes are
/// refused. The file is removed whatever happens.
fn probe(
    dir: &Path,
    mode: WriteMode,
    size: u64,
    streams: usize,
    request: usize,
) -> Result<Option<f64>, EngineError> {
    let path = dir.join(format!(".recman-write-probe-{}", std::process::id()));
    let flags = match mode {
        WriteMode::Direct => libc::O_DIRECT,
        WriteMode::Buffered => 0,
    };
    let f = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(flags)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(None),
        Err(e) => return Err(EngineError::io("create", &path, e)),
    };
    let _remove = RemoveOnDrop(&path);
    let blocks = size.div_ceil(request as u64);
    let next = std::sync::atomic::AtomicU64::new(0);
    let t = Instant::now();
    let r: std::io::Result<()> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..streams.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut buf = crate::io::AlignedBuf::new(request);
                    buf.as_mut_slice().fill(0x5a);
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= blocks {
                            return Ok(());
                        }
                        let at = i * request as u64;
                        f.write_all_at(buf.as_slice(), at)?;
                        if mode == WriteMode::Buffered {
                            start_writeback(&f, at, request);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("probe thread panicked"))
    });
    r.and_then(|()| f.sync_all())
        .map_err(|e| EngineError::io("write", &path, e))?;
    let secs = t.elapsed().max(Duration::from_micros(1)).as_secs_f64();
    Ok(Some((blocks * request as u64) as f64 / secs))
}

fn start_writeback(f: &std::fs::File, at: u64, len: usize) {
    use std::os::fd::AsRawFd;
    // SAFETY: sync_file_range reads only its integer arguments and the descriptor, which `f`
    // keeps open for the call. A failure only means the writeback starts later.
    unsafe {
        libc::sync_file_range(
            f.as_raw_fd(),
            at as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        )
    };
}

struct RemoveOnDrop<'a>(&'a Path);

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_restore_probes_both_ways_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // Small enough for a test: the probe writes bytes / 16.
        let plan = choose(dir.path(), PROBE_FROM, 2).unwrap();
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        match plan.probed {
            Some((d, b)) => assert!(d > 0.0 && b > 0.0, "{plan:?}"),
            // tmpfs refuses direct writes.
            None => assert_eq!(plan.mode, WriteMode::Buffered),
        }
        assert!(plan.describe().contains("writer(s) per channel"));
    }

    #[test]
    fn direct_writes_win_unless_buffered_ones_are_three_times_as_fast() {
        // The probe's figures on the host where buffered restores ran at 0.38 of direct ones.
        assert_eq!(decide(680e6, 1_628e6), WriteMode::Direct);
        assert_eq!(decide(900e6, 1_170e6), WriteMode::Direct);
        assert_eq!(decide(100e6, 400e6), WriteMode::Buffered);
    }

    #[test]
    fn a_small_restore_writes_directly_without_probing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = choose(dir.path(), PROBE_FROM - 1, 2).unwrap();
        assert_eq!(plan.mode, WriteMode::Direct);
        assert_eq!(plan.probed, None);
    }
}
