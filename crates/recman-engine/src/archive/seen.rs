//! Marks that let PostgreSQL's own archive-push call for a segment that an earlier call or the
//! background pusher stored skip reading the segment again.
//!
//! On a backlog, the archiver's calls come one at a time, and each used to read its 16 MiB
//! segment and compute its checksum to compare with the catalog's record: that read was the
//! longest step of the serial path once the pushing ran ahead. The push already read those
//! bytes. So, after the catalog records a segment, the push leaves `<segment>.read` in the
//! pusher's directory: the file's identity when it was read (device, inode, size, and change
//! and modification times to the nanosecond) with the checksum of what was read. A call whose
//! local file still has that identity takes the mark's size and checksum in place of reading
//! the file, and compares them with the catalog's record as before.
//!
//! The identity proves the bytes unchanged only if a write would have moved the times, and
//! the file system's clock ticks coarsely (a jiffy on ext4): a file written within the same
//! tick after the read would keep its times. So a mark is left only for a file whose last
//! change was at least [`SETTLED`] before the read began and whose identity did not move
//! during the read. PostgreSQL never writes a segment after marking it ready; the rule guards
//! against a file replaced by hand. Without a mark, or with one that does not match, the call
//! reads the file as before. A mark is used once and is only ever a shortcut: the catalog's
//! record still decides.

use crate::error::EngineError;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long before a read a file must have last changed for its identity to stand for its
/// bytes: many ticks of any file system's timestamp clock.
pub(super) const SETTLED: Duration = Duration::from_secs(1);
const SUFFIX: &str = ".read";

/// A file's identity: what any write to it, or its replacement by another file, changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileId {
    fn of(m: &Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// Whether the file last changed at least [`SETTLED`] before `read_began`.
    fn settled_before(&self, read_began: SystemTime) -> bool {
        let Ok(t) = read_began.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let limit = (t.saturating_sub(SETTLED).as_secs()) as i64;
        // Whole seconds, rounded down: a change within the last second or two keeps no mark.
        self.mtime.0 < limit && self.ctime.0 < limit
    }

    fn line(&self, crc: u32) -> String {
        format!(
            "{} {} {} {} {} {} {} {crc:08x}\n",
            self.dev, self.ino, self.size, self.mtime.0, self.mtime.1, self.ctime.0, self.ctime.1
        )
    }

    fn parse(s: &str) -> Option<(FileId, u32)> {
        let v: Vec<&str> = s.split_whitespace().collect();
        let [dev, ino, size, ms, mn, cs, cn, crc] = v.as_slice() else {
            return None;
        };
        let id = FileId {
            dev: dev.parse().ok()?,
            ino: ino.parse().ok()?,
            size: size.parse().ok()?,
            mtime: (ms.parse().ok()?, mn.parse().ok()?),
            ctime: (cs.parse().ok()?, cn.parse().ok()?),
        };
        Some((id, u32::from_str_radix(crc, 16).ok()?))
    }
}

/// Reads the whole file at `path` into `buf` (cleared first, its capacity reused). Returns the
/// file's identity when a mark may stand for what was read: unchanged during the read and
/// settled before it.
pub(super) fn read_file(path: &Path, buf: &mut Vec<u8>) -> Result<Option<FileId>, EngineError> {
    use std::io::Read;
    let io = |e| EngineError::io("read WAL file", path, e);
    buf.clear();
    let began = SystemTime::now();
    let mut f = std::fs::File::open(path).map_err(io)?;
    let before = f.metadata().map_err(io)?;
    buf.reserve(before.len() as usize);
    f.read_to_end(buf).map_err(io)?;
    let after = f.metadata().map_err(io)?;
    let id = FileId::of(&before);
    let stood = id == FileId::of(&after) && id.size == buf.len() as u64;
    Ok((stood && id.settled_before(began)).then_some(id))
}

/// Leaves the mark of segment `name`, read with identity `id` and checksum `crc`, in `dir`.
/// Best effort: without it the segment's own call reads the file.
pub(super) fn mark(dir: &Path, name: &str, id: &FileId, crc: u32) {
    let path = dir.join(format!("{name}{SUFFIX}"));
    let tmp = dir.join(format!("{name}{SUFFIX}.tmp"));
    // Renamed into place: a call never reads half a mark.
    if std::fs::write(&tmp, id.line(crc)).is_ok() && std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The size and CRC-32C of local WAL file `path` (segment `name`): from its mark in `dir` when
/// the file still has the identity it was read with (the mark is used up), else by reading it.
pub(super) fn content(
    dir: Option<&Path>,
    name: &str,
    path: &Path,
) -> Result<(u64, u32), EngineError> {
    if let Some(dir) = dir {
        let mark = dir.join(format!("{name}{SUFFIX}"));
        if let Ok(text) = std::fs::read_to_string(&mark) {
            let _ = std::fs::remove_file(&mark);
            let now = std::fs::metadata(path).map(|m| FileId::of(&m));
            if let (Some((id, crc)), Ok(now)) = (FileId::parse(&text), now)
                && id == now
            {
                return Ok((id.size, crc));
            }
        }
    }
    crate::util::file_size_crc(path).map_err(|e| EngineError::io("read WAL file", path, e))
}

/// Removes the marks in `dir` whose segment is no longer in `wal_dir` (PostgreSQL recycled or
/// removed it, so no call will use them).
pub(super) fn forget_gone(dir: &Path, wal_dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let Some(seg) = f
            .strip_suffix(SUFFIX)
            .or_else(|| f.strip_suffix(".read.tmp"))
        else {
            continue;
        };
        if !wal_dir.join(seg).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aged(p: &Path) {
        let old = SystemTime::now() - Duration::from_secs(30);
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    /// A mark stands in for a file only while the file keeps the identity it was read with.
    #[test]
    fn a_mark_stands_for_the_file_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (spool, seg) = (
            dir.path().join("spool"),
            dir.path().join("000000010000000000000001"),
        );
        std::fs::create_dir(&spool).unwrap();
        std::fs::write(&seg, vec![5u8; 1 << 16]).unwrap();
        // Just written: its times are too recent for a mark.
        let mut buf = Vec::new();
        assert_eq!(read_file(&seg, &mut buf).unwrap(), None);
        // Settled, except that ctime moved with set_modified: still no mark until it ages.
        aged(&seg);
        assert_eq!(read_file(&seg, &mut buf).unwrap(), None, "ctime is recent");
        // A file whose times are all old gets a mark; the lie in its checksum shows that the
        // answer came from the mark, not from reading.
        let id = FileId::of(&std::fs::metadata(&seg).unwrap());
        let old = FileId {
            ctime: (id.ctime.0 - 60, id.ctime.1),
            ..id
        };
        assert!(old.settled_before(SystemTime::now()));
        mark(&spool, "000000010000000000000001", &id, 0xdead_beef);
        let name = "000000010000000000000001";
        assert_eq!(
            content(Some(&spool), name, &seg).unwrap(),
            (1 << 16, 0xdead_beef)
        );
        // Used once.
        let real = crc32c::crc32c(&vec![5u8; 1 << 16]);
        assert_eq!(content(Some(&spool), name, &seg).unwrap(), (1 << 16, real));
        // A file written after its mark is read again, whatever the mark says.
        mark(&spool, name, &id, 0xdead_beef);
        std::fs::write(&seg, vec![6u8; 1 << 16]).unwrap();
        let now = crc32c::crc32c(&vec![6u8; 1 << 16]);
        assert_eq!(content(Some(&spool), name, &seg).unwrap(), (1 << 16, now));
        // Marks of segments gone from pg_wal are removed.
        mark(&spool, "000000010000000000000002", &id, 1);
        forget_gone(&spool, dir.path());
        assert!(!spool.join("000000010000000000000002.read").exists());
    }
}
