//! How a restore writes: the way (direct, buffered, or chosen turn by turn while it runs)
//! and the shape (writer threads, request size). No way of writing is right on every disk:
//! on one host of this machine class direct writes ran at five times the rate of buffered
//! writes made durable by fsync, on another at 1.4 times, and some virtual and network disks
//! are faster buffered; on one host the faster way changed from one day to the next. So a
//! restore large enough for it to matter measures both ways on its own writes and keeps the
//! faster ([`crate::adapt`]).

use super::outfile::WriteMode;
use crate::adapt::{Adaptive, DeviceMeter};
use crate::error::EngineError;
use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a restore channel writes: how many writes it keeps in flight and how large they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteShape {
    /// Writer threads, each with one write in flight at most.
    pub writers: usize,
    /// Bytes one write gathers at most.
    pub request: usize,
}

impl Default for WriteShape {
    fn default() -> Self {
        WriteShape {
            writers: 4,
            request: 1 << 20,
        }
    }
}

/// From this many bytes to write, a restore chooses its way while it writes; below, the
/// exploration would be most of the restore, and it writes directly.
pub const ADAPT_FROM: u64 = 256 << 20;

/// How a restore writes, and why.
#[derive(Clone, Debug)]
pub struct WritePlan {
    /// The way every write goes, or the first way when `adapt` chooses.
    pub mode: WriteMode,
    pub shape: WriteShape,
    /// The chooser of an adaptive restore, shared by its writers.
    pub adapt: Option<Arc<Adaptive>>,
    /// Why, in a few words, for `-v`.
    pub why: String,
}

impl WritePlan {
    /// The plan for a way the user chose.
    pub fn chosen(mode: WriteMode) -> WritePlan {
        WritePlan {
            mode,
            shape: WriteShape::default(),
            adapt: None,
            why: format!("{} writes as asked", mode.name()),
        }
    }

    /// The way's name for the OUTPUT rows: `adaptive` when chosen while it writes.
    pub fn way(&self) -> &'static str {
        match self.adapt {
            Some(_) => "adaptive",
            None => self.mode.name(),
        }
    }

    /// One line for `-v`.
    pub fn describe(&self) -> String {
        format!(
            "{} writes, {} writer(s) per channel of up to {} KiB each ({})",
            self.way(),
            self.shape.writers,
            self.shape.request >> 10,
            self.why
        )
    }

    /// What the writes did, for `-v` once the restore has written: the adaptive split.
    pub fn outcome(&self) -> Option<String> {
        self.adapt.as_ref().map(|a| a.summary())
    }
}

/// The plan for a restore of `bytes` into `dir` (which exists).
pub fn choose(dir: &Path, bytes: u64) -> Result<WritePlan, EngineError> {
    let shape = WriteShape::default();
    if !takes_direct_writes(dir)? {
        return Ok(WritePlan {
            mode: WriteMode::Buffered,
            shape,
            adapt: None,
            why: "the file system refuses direct writes".into(),
        });
    }
    if bytes < ADAPT_FROM {
        return Ok(WritePlan {
            mode: WriteMode::Direct,
            shape,
            adapt: None,
            why: "a small restore: not measured".into(),
        });
    }
    let (meter, at) = match device_meter(dir) {
        Some((m, stat)) => (Some(m), format!("at the disk ({})", stat.display())),
        None => (None, "by the bytes written".to_string()),
    };
    Ok(WritePlan {
        mode: WriteMode::Direct,
        shape,
        adapt: Some(Arc::new(Adaptive::by_turns(meter))),
        why: format!("both ways in turns, measured {at}, the faster kept"),
    })
}

/// The meter of the block device that holds `dir`: the bytes it has written, from the
/// kernel's count of sectors (/sys/dev/block/MAJ:MIN/stat, whose seventh field counts
/// 512-byte sectors whatever the device's own sector size); with the stat file's path. None
/// where `dir` is on no block device (tmpfs, a network file system) or the count cannot be
/// read: turns are then measured by the bytes the restore wrote.
fn device_meter(dir: &Path) -> Option<(DeviceMeter, PathBuf)> {
    let stat = device_stat(dir)?;
    let path = stat.clone();
    let read = move || -> Option<u64> {
        let text = std::fs::read_to_string(&path).ok()?;
        let sectors: u64 = text.split_whitespace().nth(6)?.parse().ok()?;
        Some(sectors * 512)
    };
    read()?;
    Some((Box::new(read), stat))
}

/// The kernel's statistics file of the device that holds `dir` (which may not exist: tmpfs
/// and network file systems have no block device).
fn device_stat(dir: &Path) -> Option<PathBuf> {
    let dev = std::fs::metadata(dir).ok()?.dev();
    Some(PathBuf::from(format!(
        "/sys/dev/block/{}:{}/stat",
        libc::major(dev),
        libc::minor(dev)
    )))
}

/// Whether the file system under `dir` takes O_DIRECT (tmpfs does not); a scratch file is
/// made and removed to see.
fn takes_direct_writes(dir: &Path) -> Result<bool, EngineError> {
    let path = dir.join(format!(".recman-write-probe-{}", std::process::id()));
    let r = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_DIRECT)
        .open(&path);
    let _ = std::fs::remove_file(&path);
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(false),
        Err(e) => Err(EngineError::io("create", &path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_counts_what_the_disk_under_the_directory_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let stat = device_stat(dir.path()).unwrap();
        let Some((meter, named)) = device_meter(dir.path()) else {
            // tmpfs and network file systems have no block device: turns count bytes written.
            assert!(
                !stat.exists(),
                "{} exists but gave no meter",
                stat.display()
            );
            return;
        };
        assert_eq!(named, stat);
        let before = meter().unwrap();
        let f = dir.path().join("eight");
        std::fs::write(&f, vec![7u8; 8 << 20]).unwrap();
        std::fs::File::open(&f).unwrap().sync_all().unwrap();
        // Other writers of the disk can only add to the count.
        let after = meter().unwrap();
        assert!(
            after >= before + (8 << 20),
            "{before} -> {after} ({})",
            stat.display()
        );
    }

    #[test]
    fn a_large_restore_chooses_while_it_writes_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = choose(dir.path(), ADAPT_FROM).unwrap();
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        match plan.mode {
            WriteMode::Direct => {
                assert!(plan.adapt.is_some(), "{plan:?}");
                assert!(plan.describe().starts_with("adaptive writes"));
            }
            // tmpfs refuses direct writes.
            WriteMode::Buffered => assert!(plan.adapt.is_none()),
        }
        assert!(plan.describe().contains("writer(s) per channel"));
    }

    #[test]
    fn a_small_restore_writes_directly_without_measuring() {
        let dir = tempfile::tempdir().unwrap();
        let plan = choose(dir.path(), ADAPT_FROM - 1).unwrap();
        assert!(plan.adapt.is_none());
        assert_eq!(plan.outcome(), None);
    }

    #[test]
    fn an_adaptive_restore_writes_both_ways_and_every_byte_lands() {
        use crate::restore::dest::{Destination, LocalDest};
        let dir = tempfile::tempdir().unwrap();
        let dest = LocalDest::for_restore(WriteMode::Direct);
        let plan = dest
            .plan_writes(dir.path(), ADAPT_FROM, 2, None)
            .unwrap()
            .unwrap();
        if plan.adapt.is_none() {
            // tmpfs: no direct writes, nothing to choose between.
            assert_eq!(plan.mode, WriteMode::Buffered);
            return;
        }
        // Past the first turn (128 MiB directly), in two files written side by side.
        let chunk = 1usize << 20;
        let per_file = 96;
        let files: Vec<_> = (0..2)
            .map(|i| dest.open(&dir.path().join(format!("f{i}"))).unwrap())
            .collect();
        let mut bounce = None;
        for n in 0..per_file {
            for (i, f) in files.iter().enumerate() {
                let data = vec![(n * 2 + i) as u8; chunk];
                f.write_at(&data, (n * chunk) as u64, &mut bounce).unwrap();
            }
        }
        files.iter().for_each(|f| f.sync().unwrap());
        dest.flush().unwrap();
        let outcome = plan.outcome().unwrap();
        assert!(!outcome.contains("direct 0 MiB"), "{outcome}");
        assert!(!outcome.contains("buffered 0 MiB"), "{outcome}");
        for i in 0..2 {
            let back = std::fs::read(dir.path().join(format!("f{i}"))).unwrap();
            assert_eq!(back.len(), per_file * chunk);
            for (n, c) in back.chunks(chunk).enumerate() {
                assert!(
                    c.iter().all(|&b| b == (n * 2 + i) as u8),
                    "file {i} chunk {n}"
                );
            }
        }
    }
}
