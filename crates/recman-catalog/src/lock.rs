//! The repository lock: flock(2) on `<root>/lock`.
//!
//! flock is tied to the open file description, so the kernel drops it when the holder dies,
//! even by SIGKILL: a crash can never leave a stale lock. A second open() of the file, in this
//! process or another, conflicts with the first. The file's content only tells a refused
//! command who is in the way; the lock itself is the flock, never the content.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{CatalogError, LockHolder};

/// Holds the repository lock until dropped.
#[derive(Debug)]
pub struct RepoLock {
    file: File,
    path: PathBuf,
}

impl RepoLock {
    /// Takes the lock at `path` without waiting; `repo` is named in the refusal.
    pub(crate) fn acquire(repo: &Path, path: &Path, what: &str) -> Result<RepoLock, CatalogError> {
        // No truncate on open: the file may belong to the current holder.
        let mut file =
            recman_media::modes::open_private(path, recman_media::modes::PRIVATE_MODE, true)
                .map_err(|e| CatalogError::io("open lock file", path, e))?;
        if !try_flock(&file).map_err(|e| CatalogError::io("lock", path, e))? {
            let holder = std::fs::read_to_string(path)
                .map(|s| parse_holder(&s))
                .unwrap_or_default();
            return Err(CatalogError::Busy {
                path: repo.to_path_buf(),
                holder,
            });
        }
        // One line, so a command name with a newline cannot forge fields.
        let what: String = what
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let line = format!(
            "pid={} command={} since={}\n",
            std::process::id(),
            what,
            chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
        );
        let write = |f: &mut File| -> io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            f.write_all(line.as_bytes())
        };
        write(&mut file).map_err(|e| CatalogError::io("write lock file", path, e))?;
        Ok(RepoLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        // Clear the holder's details while still holding the lock, so nobody reads them as
        // current; closing the file then releases the flock. A failure here is harmless.
        let _ = self.file.set_len(0);
    }
}

/// Who holds the lock at `path` now, read without touching the lock: taking it, even for an
/// instant, could refuse a backup that starts meanwhile. The kernel's table of flock locks
/// (/proc/locks) names the file by device and inode; the file's content names the holder, and
/// its modification time stands in for `since` if the holder has not written it yet.
pub(crate) fn current_holder(path: &Path) -> io::Result<Option<LockHolder>> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let table = std::fs::read_to_string("/proc/locks")?;
    let Some(pid) = flock_holder_pid(&table, meta.dev(), meta.ino()) else {
        return Ok(None);
    };
    let mut holder = parse_holder(&std::fs::read_to_string(path).unwrap_or_default());
    holder.pid = holder.pid.or(Some(pid));
    if holder.since.is_none() {
        let at: chrono::DateTime<chrono::Local> = meta.modified()?.into();
        holder.since = Some(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, false));
    }
    Ok(Some(holder))
}

/// The pid of the flock on device `dev`, inode `ino` in a /proc/locks table, whose lines read
/// `1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF` (device major:minor in hex). Lines
/// with `->` are waiters, not holders.
fn flock_holder_pid(table: &str, dev: u64, ino: u64) -> Option<u32> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let want = format!("{major:02x}:{minor:02x}:{ino}");
    table.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&want.as_str()))
            .then(|| f[4].parse().ok())
            .flatten()
    })
}

/// Tries an exclusive flock; false if another open file description holds it.
fn try_flock(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: the descriptor belongs to `file`, which is borrowed and so stays open for
        // the duration of the call; flock reads no memory of ours.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(err),
        }
    }
}

/// Reads "pid=<pid> command=<what> since=<time>"; the command may contain spaces.
fn parse_holder(s: &str) -> LockHolder {
    let line = s.lines().next().unwrap_or("").trim();
    let mut holder = LockHolder::default();
    let Some(rest) = line.strip_prefix("pid=") else {
        return holder;
    };
    let (pid, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    holder.pid = pid.parse().ok();
    let (command, since) = match rest.rfind(" since=") {
        Some(i) => (&rest[..i], Some(&rest[i + " since=".len()..])),
        None => (rest, None),
    };
    holder.command = command
        .strip_prefix("command=")
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    holder.since = since.filter(|s| !s.is_empty()).map(str::to_string);
    holder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_found_in_the_kernels_table_without_taking_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        assert!(
            current_holder(&path).unwrap().is_none(),
            "no file, no holder"
        );
        let lock = RepoLock::acquire(dir.path(), &path, "backup database").unwrap();
        let h = current_holder(&path).unwrap().expect("held");
        assert_eq!(h.pid, Some(std::process::id()));
        assert_eq!(h.command.as_deref(), Some("backup database"));
        assert!(h.since.is_some());
        drop(lock);
        assert!(current_holder(&path).unwrap().is_none(), "released");
        let table = "1: FLOCK  ADVISORY  WRITE 77 fd:01:99 0 EOF\n1: -> FLOCK  ADVISORY  WRITE 78 fd:01:99 0 EOF\n";
        let dev = libc::makedev(0xfd, 1);
        assert_eq!(flock_holder_pid(table, dev, 99), Some(77));
        assert_eq!(flock_holder_pid(table, dev, 98), None);
    }

    #[test]
    fn parses_holder_line() {
        let h = parse_holder("pid=1234 command=backup database since=2024-05-01T10:00:00+02:00\n");
        assert_eq!(h.pid, Some(1234));
        assert_eq!(h.command.as_deref(), Some("backup database"));
        assert_eq!(h.since.as_deref(), Some("2024-05-01T10:00:00+02:00"));
        assert_eq!(
            h.to_string(),
            "backup database (pid 1234) since 2024-05-01T10:00:00+02:00"
        );
    }

    #[test]
    fn empty_or_garbled_file_gives_unknown_holder() {
        assert_eq!(parse_holder(""), LockHolder::default());
        assert_eq!(parse_holder("garbage"), LockHolder::default());
        assert_eq!(LockHolder::default().to_string(), "another recman command");
    }
}
