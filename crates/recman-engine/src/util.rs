use chrono::{DateTime, Utc};

pub fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

pub fn rfc3339(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_default()
}

/// A list for an error message: the first few entries and how many more, so that a message
/// about a million files stays one readable line.
pub fn cut_list<T: std::fmt::Display>(items: &[T], sep: &str) -> String {
    const SHOWN: usize = 5;
    let mut s = items
        .iter()
        .take(SHOWN)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(sep);
    if items.len() > SHOWN {
        s.push_str(&format!("{sep}and {} more", items.len() - SHOWN));
    }
    s
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The repository layout lives in one place, the catalog crate's `layout` module.
pub use recman_catalog::layout::{backup_dir, wal_object as wal_path};

/// An I/O error on repository object `rel`, kept as a media error so its class and hint stay.
pub(crate) fn media_io(
    repo: &recman_catalog::Repository,
    rel: &str,
    op: &str,
    e: std::io::Error,
) -> crate::error::EngineError {
    recman_media::MediaError::io(repo.location(), rel, op, e).into()
}

/// Size and CRC-32C of a local file, read in 1 MiB steps (no whole-file buffer).
pub(crate) fn file_size_crc(path: &std::path::Path) -> std::io::Result<(u64, u32)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut size, mut crc) = (0u64, 0u32);
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok((size, crc)),
            Ok(n) => {
                crc = crc32c::crc32c_append(crc, &buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes `data` to a new file at `path` (replacing one there) readable by its owner only:
/// WAL handed to PostgreSQL in pg_wal, like the server's own files there.
/// Opens (creating it when missing, never truncating it) the lock file of a background
/// helper, for flock(2).
pub(crate) fn open_lock_file(
    path: &std::path::Path,
    op: &'static str,
) -> Result<std::fs::File, crate::error::EngineError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| crate::error::EngineError::io(op, path, e))
}

/// Creates `dir` (and its parents) private to the owner, like the pg_wal a helper's directory
/// sits in.
pub(crate) fn create_private_dir(
    dir: &std::path::Path,
    op: &'static str,
) -> Result<(), crate::error::EngineError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| crate::error::EngineError::io(op, dir, e))
}

/// Starts `cmd` (a background recman helper) and returns without waiting for it: no standard
/// input or output, standard error appended to `log` (started afresh past 1 MiB), the caller's
/// process group (a server shutdown that signals the caller's group ends it too). Dropping
/// the handle neither waits for nor kills the child; init reaps it once the short-lived caller
/// has ended.
pub(crate) fn spawn_logged(
    mut cmd: std::process::Command,
    log: &std::path::Path,
    (open_op, start_op): (&'static str, &'static str),
) -> Result<(), crate::error::EngineError> {
    use crate::error::EngineError;
    use std::process::Stdio;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| EngineError::io(open_op, log, e))?;
    if file.metadata().map(|m| m.len() > 1 << 20).unwrap_or(false) {
        let _ = file.set_len(0);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(file));
    cmd.spawn()
        .map(drop)
        .map_err(|e| EngineError::io(start_op, cmd.get_program(), e))
}

pub(crate) fn write_private(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(data)
}

/// How many names an error or notice lists before it says how many more there are.
pub(crate) const LIST_CUT: usize = 5;

/// `a, b, c (and N more)`.
pub(crate) fn cut(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(LIST_CUT)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > LIST_CUT {
        s.push_str(&format!(" (and {} more)", names.len() - LIST_CUT));
    }
    s
}

/// Whether `name` is a WAL segment file name: 24 upper-case hex digits (timeline, log,
/// segment), which sort in WAL order within a timeline. History, backup history and
/// `.partial` files are not segments.
pub fn is_segment_name(name: &str) -> bool {
    name.len() == 24
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cut_list_keeps_five_and_counts_the_rest() {
        let v: Vec<u32> = (1..=12).collect();
        assert_eq!(super::cut_list(&v, ", "), "1, 2, 3, 4, 5, and 7 more");
        assert_eq!(super::cut_list(&v[..3], ", "), "1, 2, 3");
    }
}
