//! Reading archived WAL back, for archive-get, the read-ahead spool and validation: every copy
//! the catalog knows is tried, each read through the piece scanner and verified, and only a
//! file that was never archived is "not found" (DESIGN.md, invariant 8).

use super::WAL_SEGMENT_HINT;
use crate::error::EngineError;
use crate::util::wal_path;
use recman_catalog::{DbRecord, Repository};
use recman_format::IndexedPiece;
use recman_format::seal::MacKey;
use std::io::BufReader;

/// Reads one archived WAL file and returns its verified content.
pub(crate) fn read_wal(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
) -> Result<Option<Vec<u8>>, EngineError> {
    let mut out = Vec::new();
    Ok(read_wal_into(repo, db, name, &mut out)?.map(|_| out))
}

/// Like [`read_wal`], into `out` (cleared first; a caller reading many files reuses one
/// buffer, which spares a fresh 16 MiB mapping and its page faults per segment); returns the
/// CRC-32C the content was verified against.
///
/// Every copy the catalog knows is tried before giving up: the archived object in the
/// repository and its copies on other devices, then each ARCHIVELOG backup set holding the
/// file (each of its pieces' copies too). `Ok(None)` only when the file was never archived:
/// PostgreSQL takes that answer as the end of the archive. A file the catalog records, or
/// whose copies exist but are all damaged or unreadable, is an error naming each copy tried,
/// so that recovery stops instead of ending early (DESIGN.md, invariant 8).
pub(crate) fn read_wal_into(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    out: &mut Vec<u8>,
) -> Result<Option<u32>, EngineError> {
    out.clear();
    let rel = wal_path(&db.name, name);
    let mut failures: Vec<String> = Vec::new();
    // Whether a device did not answer: then running recovery again later may succeed.
    let mut unreachable_device = false;
    let recorded = repo.catalog().wal(db.id, name)?.map(|w| (w.size, w.crc32c));
    let mac = repo.mac_key()?;
    for src in crate::pieces::sources(repo, &rel)? {
        let f = match src.media.open(&src.name) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                unreachable_device |= e.kind() == crate::error::ErrorKind::Transient;
                failures.push(format!("{}: {e}", src.describe()));
                continue;
            }
        };
        match read_wal_object(&rel, f, recorded, mac.as_deref(), out) {
            Ok(crc) => return Ok(Some(crc)),
            Err(why) => failures.push(format!("{} on {}: {why}", src.name, src.describe())),
        }
    }
    // Gone from the archive (BACKUP ARCHIVELOG DELETE INPUT) or damaged there: a backup set
    // may hold it.
    if let Some((data, crc)) = read_wal_from_backups(repo, db, name, &mut failures)? {
        *out = data;
        return Ok(Some(crc));
    }
    // Before the switch to recman: the WAL archive of the tool the backups were imported from.
    if let Some(data) = crate::foreign::read_foreign_wal(repo, db, name, &mut failures)? {
        *out = data;
        return Ok(Some(crc32c::crc32c(out)));
    }
    if failures.is_empty() && recorded.is_none() {
        return Ok(None);
    }
    let kind = if failures.is_empty() {
        failures.push(format!(
            "{rel} is recorded in the catalog but no device holds it"
        ));
        crate::error::ErrorKind::NotFound
    } else if unreachable_device {
        crate::error::ErrorKind::Transient
    } else {
        crate::error::ErrorKind::Corrupt
    };
    Err(EngineError::remedy(
        kind,
        format!(
            "archived wal file {name} of database {:?} could not be delivered intact from repository {}: {}",
            db.name,
            repo.location(),
            crate::util::cut_list(&failures, "; ")
        ),
        crate::action::Hint::new()
            .text("recovery must not go on without it: restore it from another copy (`recman list archivelog`, `recman crosscheck`), or ")
            .act(crate::action::Action::RecoverUntil),
    ))
}

/// Reads one archived WAL object through the piece scanner: its chunks in order, each file's
/// CRC against its end record and against what the catalog recorded (`recorded`: size and
/// CRC-32C), the piece whole, and with `mac` the MAC its header carries. The error says what
/// is wrong with it.
pub(super) fn read_wal_object(
    rel: &str,
    f: Box<dyn recman_media::MediaReader>,
    recorded: Option<(u64, u32)>,
    mac: Option<&MacKey>,
    out: &mut Vec<u8>,
) -> Result<u32, String> {
    use crate::pipeline::stages::FileRef;
    use crate::pipeline::{OpenPiece, Scan, Sink, Wording};
    /// Gathers the segment's bytes, which must come in order without a gap.
    struct WalSink<'a> {
        out: &'a mut Vec<u8>,
        crc: Option<u32>,
        mac: Option<String>,
    }
    impl Sink for WalSink<'_> {
        fn begin(&mut self, h: &recman_format::PieceHeader) -> Result<(), EngineError> {
            self.mac = h.mac.clone();
            self.out.clear();
            // A segment's size up front: untouched capacity costs nothing, regrowth copies.
            self.out.reserve(WAL_SEGMENT_HINT);
            Ok(())
        }
        fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError> {
            if offset != self.out.len() as u64 {
                return Err(EngineError::Corrupt(format!(
                    "{} has a gap at offset {offset}",
                    file.name
                )));
            }
            self.out.extend_from_slice(data);
            Ok(())
        }
        fn file_end(&mut self, _: &FileRef, _: u64, crc: u32) -> Result<(), EngineError> {
            self.crc = Some(crc);
            Ok(())
        }
    }
    /// The catalog's size and checksum of the one file, when it has them.
    struct Recorded(Option<(u64, u32)>);
    impl crate::pipeline::scanner::Expect for Recorded {
        fn file_matches(&self, _: &str, _: u32, size: u64, crc: u32) -> bool {
            self.0.is_none_or(|r| r == (size, crc))
        }
    }
    let expect = Recorded(recorded);
    let scan = Scan {
        rel,
        piece: None,
        files: &expect,
        wording: Wording {
            hint: "the archived copy is damaged",
            then: None,
        },
        channel: 0,
        set_no: None,
    };
    let mut sink = WalSink {
        out,
        crc: None,
        mac: None,
    };
    let piece = OpenPiece::open(rel, f).map_err(|e| e.to_string())?;
    piece
        .scan(&scan, &mut [], &mut sink)
        .map_err(|e| e.to_string())?;
    if let Some(key) = mac {
        check_mac(key, rel, sink.mac.as_deref(), sink.out)?;
    }
    match sink.crc {
        Some(crc) if sink.out.len() as u64 == recorded.map_or(sink.out.len() as u64, |r| r.0) => {
            Ok(crc)
        }
        _ => Err("it does not hold the whole file".into()),
    }
}

/// Checks an archived WAL file's content against the MAC its header carries (`recorded`).
pub(crate) fn check_mac(
    key: &MacKey,
    rel: &str,
    recorded: Option<&str>,
    content: &[u8],
) -> Result<(), String> {
    let Some(recorded) = recorded else {
        return Err("it carries no MAC, but the repository requires one: it was archived without the MAC key, or its MAC was cut off (tampered?)".into());
    };
    let mut m = key.content(rel);
    m.update(content);
    if !m.verify(recorded) {
        return Err("its MAC does not verify: it was changed after it was archived (tampered?), or archived under another MAC key".into());
    }
    Ok(())
}

/// Reads archived WAL file `name` from the newest AVAILABLE backup set that holds it, verified
/// against the size and checksum the set recorded. Each copy of each piece is tried; what
/// fails is added to `failures` and the next one tried. None when no copy delivered it.
fn read_wal_from_backups(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    failures: &mut Vec<String>,
) -> Result<Option<(Vec<u8>, u32)>, EngineError> {
    let cat = repo.catalog();
    for (backup_id, set_no) in cat.wal_backup_sources(db.id, name)? {
        for p in cat
            .pieces(&backup_id)?
            .iter()
            .filter(|p| p.set_no == set_no)
        {
            for src in crate::pieces::sources(repo, &p.path)? {
                let f = match src.media.open(&src.name) {
                    Ok(f) => f,
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => {
                        failures.push(format!(
                            "backup piece {} on {}: {e}",
                            p.path,
                            src.describe()
                        ));
                        continue;
                    }
                };
                match read_from_piece(f, name) {
                    Ok(Some(data)) => return Ok(Some(data)),
                    Ok(None) => break,
                    Err(why) => failures.push(format!(
                        "backup piece {} on {}: {why}",
                        p.path,
                        src.describe()
                    )),
                }
            }
        }
    }
    Ok(None)
}

/// Reads WAL file `name` out of an opened piece: None when the piece does not hold it.
pub(crate) fn read_from_piece(
    f: Box<dyn recman_media::MediaReader>,
    name: &str,
) -> Result<Option<(Vec<u8>, u32)>, String> {
    let mut piece = IndexedPiece::open(BufReader::new(f)).map_err(|e| e.to_string())?;
    let Some(file) = piece.index().file_by_path(name).cloned() else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for loc in &file.chunks {
        if loc.file_offset != out.len() as u64 {
            return Err(format!(
                "wal file {name} has a gap at offset {}",
                loc.file_offset
            ));
        }
        out.extend_from_slice(&piece.read_chunk(loc).map_err(|e| e.to_string())?);
    }
    let crc = crc32c::crc32c(&out);
    if file.size != Some(out.len() as u64) || file.crc32c != Some(crc) {
        return Err(format!(
            "wal file {name} in it does not match its recorded size and checksum"
        ));
    }
    Ok(Some((out, crc)))
}
