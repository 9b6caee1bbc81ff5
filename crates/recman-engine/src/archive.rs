//! WAL in and out of the repository, for archive_command and restore_command. Each WAL file is
//! stored as a one-file piece: the same chunk checksums and compression as backups.

use crate::error::EngineError;
use crate::pipeline::{OutputShape, SetWriter};
use crate::util::{now_micros, wal_path};
use recman_catalog::{DbRecord, Media, Repository, WalRecord};
use recman_format::seal::MacKey;
use recman_format::{Compression, PieceHeader, SetFile};
use std::path::Path;
use std::time::{Duration, Instant};

mod ahead;
mod batch;
mod check;
pub mod host;
mod push;
mod read;
pub mod receive;
mod seen;
pub mod summary;
pub use crate::util::is_segment_name;
pub use ahead::{Ahead, PUSH_DIR_NAME, PushAheadReport, PushLock, PushSpool, push_ahead};
pub use batch::{DEFAULT_PUSH_BATCH, PushOptions, default_parallel};
pub use push::{PushBatchReport, archive_push, archive_push_batch};
pub(crate) use read::read_from_piece as read_file_from_piece;
pub(crate) use read::{read_wal, read_wal_into};

const WAL_CHUNK: usize = 1 << 20;
/// PostgreSQL's default WAL segment size.
const WAL_SEGMENT_HINT: usize = 16 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchivePushOutcome {
    Archived {
        name: String,
        stored_size: u64,
    },
    /// The same content was archived before (PostgreSQL retries after a crash).
    AlreadyArchived {
        name: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveGetOutcome {
    Restored {
        name: String,
        size: u64,
    },
    /// Not in the repository: PostgreSQL asks for files that may not exist (the end of WAL,
    /// history files), and treats this answer as "none".
    NotFound {
        name: String,
    },
}

fn timeline_of(name: &str) -> u32 {
    name.get(..8)
        .and_then(|t| u32::from_str_radix(t, 16).ok())
        .unwrap_or(0)
}

fn wal_file_name(path: &Path) -> Result<String, EngineError> {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            EngineError::from(crate::refusal::Wal::NotFilePath {
                path: path.display().to_string(),
            })
        })
}

/// The check PostgreSQL's retries need: Some(AlreadyArchived) when the catalog holds `name`
/// with the size and checksum `content` gives (called only then) and its object is still
/// there, an error when it holds other content, None when it has to be pushed. Reads nothing
/// of the stored copy but its size.
fn check_archived(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    content: impl FnOnce() -> Result<(u64, u32), EngineError>,
) -> Result<Option<ArchivePushOutcome>, EngineError> {
    let Some(prev) = repo.catalog().wal(db.id, name)? else {
        return Ok(None);
    };
    if repo.object_size(&prev.path)?.is_none() {
        return Ok(None);
    }
    let (size, crc) = content()?;
    if prev.crc32c == crc && prev.size == size {
        return Ok(Some(ArchivePushOutcome::AlreadyArchived {
            name: name.to_string(),
        }));
    }
    Err(crate::refusal::Wal::ArchivedDifferently {
        name: name.to_string(),
        repo: repo.location().to_string(),
        size: prev.size,
        crc: prev.crc32c,
        new_size: size,
        new_crc: crc,
        db: db.name.clone(),
    }
    .into())
}

/// Size and CRC-32C of a local WAL file.
fn file_crc(path: &Path) -> Result<(u64, u32), EngineError> {
    crate::util::file_size_crc(path).map_err(|e| EngineError::io("read WAL file", path, e))
}

/// The header of a one-file object archive-push writes (a WAL segment, its change-tracking
/// summary): no backup, no set, the file under `path`.
pub(crate) fn object_header(db: &DbRecord, path: String, compression: Compression) -> PieceHeader {
    PieceHeader {
        backup_id: String::new(),
        db_name: db.name.clone(),
        system_identifier: db.system_identifier,
        set_no: 0,
        piece_no: 0,
        compression,
        created_unix: now_micros() / 1_000_000,
        mac: None,
        files: vec![SetFile { index: 0, path }],
    }
}

/// Writes WAL file `name` (its whole content) as a one-file piece and commits it durably;
/// returns the catalog record to add, with the content's checksum. Touches only the media, so it runs
/// on any thread.
#[allow(clippy::too_many_arguments)]
fn store_wal(
    media: &dyn Media,
    location: &str,
    db: &DbRecord,
    name: &str,
    data: &[u8],
    compression: Compression,
    mac: Option<&MacKey>,
) -> Result<WalRecord, EngineError> {
    let rel = wal_path(&db.name, name);
    let mut header = object_header(db, name.to_string(), compression);
    // The whole file is in hand, so its MAC goes in the header, which is written first.
    if let Some(key) = mac {
        let mut m = key.content(&rel);
        m.update(data);
        header.mac = Some(m.finish());
    }
    let mut w = SetWriter::create(media, location, &rel, &header, OutputShape::default())?;
    // The checksum of the bytes as they are written: the record's, with no pass of its own.
    let crc = w.whole_file(0, data, WAL_CHUNK)?;
    let piece = w.finish()?;
    Ok(WalRecord {
        db_id: db.id,
        name: name.to_string(),
        timeline: timeline_of(name),
        path: rel,
        size: data.len() as u64,
        stored_size: piece.size,
        crc32c: crc,
        archived_at: now_micros(),
    })
}

pub fn archive_get(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    dest: &Path,
) -> Result<ArchiveGetOutcome, EngineError> {
    let Some(data) = read_wal(repo, db, name)? else {
        return Ok(ArchiveGetOutcome::NotFound {
            name: name.to_string(),
        });
    };
    write_aside(dest, &data)?;
    Ok(ArchiveGetOutcome::Restored {
        name: name.to_string(),
        size: data.len() as u64,
    })
}

/// Writes `data` to `dest` under a temporary name, then renames it into place: PostgreSQL may
/// read the destination as soon as it exists, so it never sees half a file. No fsync:
/// PostgreSQL fetches the file again after a crash, and the archive still holds it. The file
/// is the owner's alone, like the server's own files in pg_wal.
pub(crate) fn write_aside(dest: &Path, data: &[u8]) -> Result<(), EngineError> {
    let tmp = dest.with_extension("recman-tmp");
    let write = || -> std::io::Result<()> {
        crate::util::write_private(&tmp, data)?;
        std::fs::rename(&tmp, dest)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        EngineError::io("write", dest, e)
    })
}

/// The first step of BACKUP DATABASE PLUS ARCHIVELOG: switches to a new WAL segment so the
/// current one is archived, and waits until it is in the repository, so that the archivelog
/// backup taken next holds all WAL up to now.
pub fn archive_current(
    repo: &Repository,
    db: &DbRecord,
    conninfo: Option<&str>,
    timeout: Duration,
) -> Result<String, EngineError> {
    let target = recman_pg::resolve_conninfo(conninfo)?;
    let mut session = recman_pg::Session::connect(&target)?;
    // Names the segment the switch completed; on an idle server, which has nothing to switch,
    // the last completed one, archived already. The SQL differs by major (version table).
    let rows = session.simple_query(session.version.switch_wal_sql)?;
    let name = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .ok_or_else(|| {
            EngineError::from(crate::refusal::Cluster::NoSwitchedWal {
                server: session.target().to_string(),
            })
        })?;
    let deadline = Instant::now() + timeout;
    loop {
        let cat = repo.catalog();
        if cat.wal(db.id, &name)?.is_some() || !cat.wal_backup_sources(db.id, &name)?.is_empty() {
            return Ok(name);
        }
        if Instant::now() >= deadline {
            return Err(EngineError::Transient(format!(
                "wal segment {name} was not archived into repository {} within {}s; hint: check archive_command and the server log",
                repo.location(),
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
