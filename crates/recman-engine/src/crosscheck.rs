//! CROSSCHECK: compares what the catalog lists with what the media hold. A piece or archived
//! WAL file that is present, of the recorded size and with an intact header is AVAILABLE;
//! `verify` also reads it all and compares its checksums. Anything missing or damaged is
//! EXPIRED, and a file found again is AVAILABLE again. Nothing is ever deleted here.

use crate::piece_check::{null_scan, reason};
use recman_catalog::{BackupStatus, DbRecord, MediaStatus, Repository};

use crate::error::EngineError;
use crate::pipeline::{NullSink, OpenPiece};

/// What a crosscheck found for one piece or WAL file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectCheck {
    /// Backup id for a piece, file name for WAL.
    pub key: String,
    /// Relative to the repository root.
    pub path: String,
    pub status: MediaStatus,
    /// Why it is EXPIRED.
    pub reason: Option<String>,
}

/// What a crosscheck found for one backup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupCheck {
    pub backup_id: String,
    pub status: BackupStatus,
    pub pieces: Vec<ObjectCheck>,
}

/// Crosschecks every piece of every AVAILABLE or EXPIRED backup of `db`. Call under the
/// repository lock: it records statuses. Deletions an interrupted command left are finished
/// first, so that nothing being deleted is found AVAILABLE again.
pub fn crosscheck_backups(
    repo: &Repository,
    db: &DbRecord,
    verify: bool,
) -> Result<Vec<BackupCheck>, EngineError> {
    crate::retention::finish_pending(repo)?;
    let cat = repo.catalog();
    let mut out = Vec::new();
    for b in cat.backups(db.id)? {
        if !matches!(b.status, BackupStatus::Available | BackupStatus::Expired) {
            continue;
        }
        let mut found = Vec::new();
        let mut checks = Vec::new();
        for (p, _) in cat.piece_states(&b.id)? {
            let reason = check_piece(repo, &p.path, p.size, p.crc32c, verify).err();
            let status = if reason.is_none() {
                MediaStatus::Available
            } else {
                MediaStatus::Expired
            };
            found.push((p.set_no, p.piece_no, status));
            checks.push(ObjectCheck {
                key: b.id.clone(),
                path: p.path.clone(),
                status,
                reason,
            });
        }
        let status = cat.set_piece_statuses(&b.id, &found)?;
        out.push(BackupCheck {
            backup_id: b.id,
            status,
            pieces: checks,
        });
    }
    Ok(out)
}

/// Crosschecks every archived WAL file of `db`; same rules as for pieces.
pub fn crosscheck_wal(
    repo: &Repository,
    db: &DbRecord,
    verify: bool,
) -> Result<Vec<ObjectCheck>, EngineError> {
    crate::retention::finish_pending(repo)?;
    let cat = repo.catalog();
    let mut out = Vec::new();
    let mut found = Vec::new();
    for (w, _) in cat.wal_states(db.id)? {
        let reason = check_wal(repo, &w.path, w.stored_size, w.size, w.crc32c, verify).err();
        let status = if reason.is_none() {
            MediaStatus::Available
        } else {
            MediaStatus::Expired
        };
        found.push((w.name.clone(), status));
        out.push(ObjectCheck {
            key: w.name,
            path: w.path,
            status,
            reason,
        });
    }
    cat.set_wal_statuses(db.id, &found)?;
    Ok(out)
}

/// Ok if the piece is present with `size` bytes and an intact header (and, with `verify`,
/// every record and the whole-piece checksum `crc`); Err names what is wrong.
fn check_piece(
    repo: &Repository,
    rel: &str,
    size: u64,
    crc: u32,
    verify: bool,
) -> Result<(), String> {
    let f = open_sized(repo, rel, size)?;
    let piece = OpenPiece::open(rel, f).map_err(|e| format!("damaged header: {}", reason(e)))?;
    if !verify {
        return Ok(());
    }
    let done = read_all(piece, rel)?;
    if done.summary.crc32c != crc {
        return Err(format!(
            "piece checksum {:08x} differs from the recorded {crc:08x}",
            done.summary.crc32c
        ));
    }
    Ok(())
}

/// As [`check_piece`] for an archived WAL file: `verify` also checks the original content's
/// size and checksum recorded in the piece against the catalog's.
fn check_wal(
    repo: &Repository,
    rel: &str,
    stored: u64,
    size: u64,
    crc: u32,
    verify: bool,
) -> Result<(), String> {
    let f = open_sized(repo, rel, stored)?;
    let piece = OpenPiece::open(rel, f).map_err(|e| format!("damaged header: {}", reason(e)))?;
    if !verify {
        return Ok(());
    }
    let mut sink = NullSink::default();
    piece
        .scan(&null_scan(rel), &mut [], &mut sink)
        .map_err(|e| format!("damaged: {}", reason(e)))?;
    match sink.ends.last().map(|(_, s, c)| (*s, *c)) {
        Some(e) if e == (size, crc) => Ok(()),
        Some((s, c)) => Err(format!(
            "holds {s} bytes with checksum {c:08x}, the catalog recorded {size} bytes with {crc:08x}"
        )),
        None => Err("holds no complete file".into()),
    }
}

/// Reads every record of `piece` into a null sink; Err is the reason it is damaged.
fn read_all(piece: OpenPiece, rel: &str) -> Result<crate::pipeline::Scanned, String> {
    piece
        .scan(&null_scan(rel), &mut [], &mut NullSink::default())
        .map_err(|e| format!("damaged: {}", reason(e)))
}

fn open_sized(
    repo: &Repository,
    rel: &str,
    size: u64,
) -> Result<Box<dyn recman_media::MediaReader>, String> {
    let f = crate::pieces::open(repo, rel).map_err(|e| match e {
        EngineError::Media(m) if m.is_not_found() => "missing".to_string(),
        e => format!("cannot open: {e}"),
    })?;
    let len = f.len();
    if len != size {
        return Err(format!("size {len} differs from the recorded {size}"));
    }
    Ok(f)
}

/// What [`resync_backups`] changed in the catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resync {
    /// AVAILABLE backups the listing lacks a piece or the manifest of, now EXPIRED.
    pub expired: Vec<String>,
    /// Backups whose manifest the catalog did not know, now catalogued.
    pub added: Vec<String>,
}

/// Brings the catalog's view of `db`'s backups up to an object-store repository with one
/// listing, before a decision that counts backups (DELETE OBSOLETE): the catalog there is a
/// local cache, and another host may have deleted or written backups since it last read the
/// bucket. A backup whose manifest or a piece is not listed is EXPIRED, so retention does not
/// count it; a manifest the cache does not know is catalogued. A disk repository's catalog is
/// the repository's own and is left alone. Call under the repository lock.
pub fn resync_backups(repo: &Repository, db: &DbRecord) -> Result<Resync, EngineError> {
    let mut out = Resync::default();
    if !repo.is_remote() {
        return Ok(out);
    }
    let prefix = format!("{}/backup/", db.name);
    let listed: std::collections::HashSet<String> = repo
        .list_objects(&prefix)?
        .into_iter()
        .map(|o| o.name)
        .collect();
    let cat = repo.catalog();
    let known = cat.backups(db.id)?;
    for b in &known {
        if b.status != BackupStatus::Available {
            continue;
        }
        let manifest = listed.contains(&recman_catalog::layout::manifest(&db.name, &b.id));
        let found: Vec<(u32, u32, MediaStatus)> = cat
            .piece_states(&b.id)?
            .into_iter()
            .map(|(p, _)| {
                let there = manifest && listed.contains(&p.path);
                let status = if there {
                    MediaStatus::Available
                } else {
                    MediaStatus::Expired
                };
                (p.set_no, p.piece_no, status)
            })
            .collect();
        if !manifest || found.iter().any(|f| f.2 == MediaStatus::Expired) {
            cat.set_piece_statuses(&b.id, &found)?;
            out.expired.push(b.id.clone());
        }
    }
    // Catalogued from the bucket only when the listing shows a manifest the cache does not
    // know: the rebuild lists the prefix again.
    let unknown = listed.iter().any(|name| {
        recman_catalog::layout::is_manifest(name)
            && !known
                .iter()
                .any(|b| *name == recman_catalog::layout::manifest(&db.name, &b.id))
    });
    if unknown {
        out.added = crate::rebuild::rebuild_catalog(repo, &prefix)?.backups_added;
    }
    Ok(out)
}
