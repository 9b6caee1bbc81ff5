//! CATALOG START WITH: rebuilds or extends the catalog from what the repository itself holds,
//! so that losing catalog.db never means losing the backups. Each backup's manifest.json
//! describes it completely, and each archived WAL piece names its file, database and system
//! identifier in its header. Objects already in the catalog are left as they are.
//!
//! Also here: the database incarnations (PostgreSQL timelines) read from archived history
//! files, which LIST INCARNATION shows.

use recman_catalog::Repository;
use recman_catalog::{BackupRecord, BackupStatus, CorruptBlock, DbRecord, PieceRecord, WalRecord};
use recman_format::manifest::{BackupManifest, EntryKind, MANIFEST_FORMAT};
use recman_pg::Lsn;

use crate::error::EngineError;
use crate::piece_check::{null_scan, reason};
use crate::pipeline::stages::FileRef;
use crate::pipeline::{NullSink, OpenPiece, Sink};
use recman_format::seal::ContentMac;

/// What a rebuild found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RebuildReport {
    pub databases_registered: Vec<String>,
    pub backups_added: Vec<String>,
    pub backups_known: usize,
    pub wal_added: usize,
    pub wal_known: usize,
    /// Files that could not be catalogued, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// Catalogues every manifest and archived WAL file of the repository whose name starts with
/// `start` (a prefix of object names; "" for all). Call under the repository lock.
pub fn rebuild_catalog(repo: &Repository, start: &str) -> Result<RebuildReport, EngineError> {
    let mut rep = RebuildReport::default();
    // Without the right MAC key every manifest would be skipped as untrusted: say so once.
    repo.mac_key()?;
    let objects = repo.list_objects(start)?;
    let is_manifest = recman_catalog::layout::is_manifest;
    let is_wal = recman_catalog::layout::is_wal_object;
    // Manifests first: they register databases with their PostgreSQL version.
    for o in objects.iter().filter(|o| is_manifest(&o.name)) {
        if let Err(why) = add_manifest(repo, &o.name, &mut rep) {
            rep.skipped.push((o.name.clone(), why));
        }
    }
    for o in objects.iter().filter(|o| is_wal(&o.name)) {
        if let Err(why) = add_wal(repo, &o.name, &mut rep) {
            rep.skipped.push((o.name.clone(), why));
        }
    }
    Ok(rep)
}

/// The registered database for a name and system identifier, registering it if new.
fn database_for(
    repo: &Repository,
    name: &str,
    sysid: u64,
    pg_version: u32,
    rep: &mut RebuildReport,
) -> Result<DbRecord, String> {
    let cat = repo.catalog();
    match cat.database(name).map_err(|e| e.to_string())? {
        Some(db) if db.system_identifier == sysid => Ok(db),
        Some(db) => Err(format!(
            "belongs to system identifier {sysid}, but database {name:?} is registered with {}",
            db.system_identifier
        )),
        None => {
            // The data directory is not recorded in the repository; commands that need it
            // take --pgdata anyway.
            let db = cat
                .register_database(name, sysid, pg_version, "")
                .map_err(|e| e.to_string())?;
            rep.databases_registered.push(name.to_string());
            Ok(db)
        }
    }
}

fn micros(rfc3339: &str) -> Result<i64, String> {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.timestamp_micros())
        .map_err(|e| format!("time {rfc3339:?} is not RFC 3339: {e}"))
}

fn lsn(s: &str) -> Result<u64, String> {
    s.parse::<Lsn>()
        .map(|l| l.0)
        .map_err(|_| format!("{s:?} is not an LSN"))
}

fn add_manifest(repo: &Repository, rel: &str, rep: &mut RebuildReport) -> Result<(), String> {
    let m = read_manifest(repo, rel)?;
    let db = database_for(repo, &m.db_name, m.system_identifier, m.pg_version, rep)?;
    let cat = repo.catalog();
    if cat
        .backup(&m.backup_id)
        .map_err(|e| e.to_string())?
        .is_some()
    {
        rep.backups_known += 1;
        return Ok(());
    }
    let rec = record_of(&m, db.id)?;
    let pieces = pieces_of(cat, &m)?;
    store(cat, &m, &rec, &pieces)?;
    if let Some(r) = m.read {
        cat.set_backup_read(&m.backup_id, r.read_bytes, r.tracked_bytes, r.tracked_files)
            .map_err(|e| e.to_string())?;
    }
    rep.backups_added.push(m.backup_id.clone());
    Ok(())
}

/// The manifest at `rel`, read and verified.
fn read_manifest(repo: &Repository, rel: &str) -> Result<BackupManifest, String> {
    let text = repo
        .media()
        .get(rel)
        .map_err(|e| format!("cannot read: {e}"))?;
    // A manifest that fails its MAC is skipped like a damaged one (the report names it), so
    // that a forged backup never enters the catalog. A missing or wrong key stops the rebuild
    // instead: every manifest would be skipped.
    let m: BackupManifest = crate::manifest_io::read(
        repo,
        &text,
        rel,
        &format!("backup manifest {}/{rel}", repo.location()),
        "restore it from a copy, or remove the backup's directory",
    )
    .map_err(|e| e.to_string())?;
    if m.format != MANIFEST_FORMAT {
        return Err(format!("format is {:?}, not {MANIFEST_FORMAT:?}", m.format));
    }
    Ok(m)
}

/// The files a manifest lists (not its directories and links).
fn files_of(m: &BackupManifest) -> impl Iterator<Item = &recman_format::manifest::ManifestEntry> {
    m.entries.iter().filter(|e| e.kind == EntryKind::File)
}

/// The catalog record of the backup a manifest describes, AVAILABLE.
fn record_of(m: &BackupManifest, db_id: i64) -> Result<BackupRecord, String> {
    let files = || files_of(m);
    Ok(BackupRecord {
        id: m.backup_id.clone(),
        db_id,
        tag: m.tag.clone(),
        backup_type: m.backup_type.clone(),
        status: BackupStatus::Available,
        start_lsn: lsn(&m.start_lsn)?,
        // A WAL backup set of history files only has no LSN range; its manifest writes the
        // start there.
        stop_lsn: Some(lsn(&m.stop_lsn)?).filter(|_| {
            !m.backup_type
                .eq_ignore_ascii_case(crate::backup_types::ARCHIVELOG)
                || files().any(|e| e.path.len() == 24)
        }),
        timeline: m.timeline,
        start_wal: m.start_wal.clone(),
        stop_wal: Some(m.stop_wal.clone()).filter(|s| !s.is_empty()),
        start_time: micros(&m.start_time)?,
        stop_time: Some(micros(&m.stop_time)?),
        stop_next_xid: Some(m.stop_next_xid),
        db_bytes: files().filter_map(|e| e.size).sum(),
        written_bytes: m.sets.iter().flat_map(|s| &s.pieces).map(|p| p.size).sum(),
        file_count: files().count() as u64,
        channels: m.channels,
        compression: m.compression.clone(),
        filesperset: m.filesperset,
        maxopenfiles: m.maxopenfiles,
        pid: 0,
        host: String::new(),
        error: None,
    })
}

/// The manifest's pieces as catalog rows; a piece on another device type gets its copy
/// recorded.
fn pieces_of(
    cat: &recman_catalog::Catalog,
    m: &BackupManifest,
) -> Result<Vec<PieceRecord>, String> {
    let files = || files_of(m);
    let mut pieces = Vec::new();
    for s in &m.sets {
        let in_set = || files().filter(|e| e.set_no == Some(s.set_no));
        for (i, p) in s.pieces.iter().enumerate() {
            // The manifest keeps a set's file count and raw bytes, not each piece's: they go
            // with the first piece, which is the only one sets have today.
            let first = i == 0;
            if let Some(device) = &p.device {
                cat.add_copy(&recman_catalog::CopyRecord {
                    object: p.path.clone(),
                    device: device.clone(),
                    name: p.path.clone(),
                    size: p.size,
                    crc32c: p.crc32c,
                    primary: true,
                    created: micros(&m.start_time)?,
                })
                .map_err(|e| e.to_string())?;
            }
            pieces.push(PieceRecord {
                backup_id: m.backup_id.clone(),
                set_no: s.set_no,
                piece_no: p.piece_no,
                channel: s.channel,
                path: p.path.clone(),
                size: p.size,
                crc32c: p.crc32c,
                file_count: if first { in_set().count() as u32 } else { 0 },
                raw_bytes: if first {
                    in_set().filter_map(|e| e.size).sum()
                } else {
                    0
                },
            });
        }
    }
    Ok(pieces)
}

/// Records the backup with its pieces: as imported, as a WAL backup with the segments each set
/// holds, or as a database backup with its corrupt blocks.
fn store(
    cat: &recman_catalog::Catalog,
    m: &BackupManifest,
    rec: &BackupRecord,
    pieces: &[PieceRecord],
) -> Result<(), String> {
    let files = || files_of(m);
    let corrupt: Vec<CorruptBlock> = m
        .corrupt_blocks
        .iter()
        .map(|c| CorruptBlock {
            backup_id: m.backup_id.clone(),
            path: c.path.clone(),
            block: c.block,
            kind: c.kind.clone(),
            relation: c.relation.clone(),
            detail: c.detail.clone(),
        })
        .collect();
    if let Some(o) = &m.origin {
        // An imported backup (catalog import): its origin comes back with it.
        cat.record_foreign_backup(
            rec,
            &recman_catalog::ForeignBackupRecord {
                backup_id: m.backup_id.clone(),
                tool: o.tool.clone(),
                location: o.location.clone(),
                stanza: o.stanza.clone().unwrap_or_default(),
                label: o.label.clone(),
                origin_type: o.origin_type.clone(),
            },
        )
    } else if m
        .backup_type
        .eq_ignore_ascii_case(crate::backup_types::ARCHIVELOG)
    {
        let held: Vec<(String, u32)> = files()
            .filter_map(|e| Some((e.path.clone(), e.set_no?)))
            .collect();
        cat.record_wal_backup(rec, pieces, &held)
    } else {
        cat.record_backup(rec, pieces, &corrupt)
    }
    .map_err(|e| e.to_string())
}

fn add_wal(repo: &Repository, rel: &str, rep: &mut RebuildReport) -> Result<(), String> {
    let f = repo
        .media()
        .open(rel)
        .map_err(|e| format!("cannot open: {e}"))?;
    let stored_size = f.len();
    let piece = OpenPiece::open(rel, f).map_err(|e| format!("damaged: {}", reason(e)))?;
    let h = piece.header().clone();
    let [file] = h.files.as_slice() else {
        return Err(format!(
            "holds {} files, an archived wal piece holds one",
            h.files.len()
        ));
    };
    let name = file.path.clone();
    // pg_version is unknown from a WAL piece alone; a manifest of the same database, read
    // first, has registered it with the right one.
    let db = database_for(repo, &h.db_name, h.system_identifier, 0, rep)?;
    let cat = repo.catalog();
    if cat.wal(db.id, &name).map_err(|e| e.to_string())?.is_some() {
        rep.wal_known += 1;
        return Ok(());
    }
    let key = repo.mac_key().map_err(|e| e.to_string())?;
    let mut sink = MacSink {
        inner: NullSink::default(),
        start: key.as_deref().map(|k| k.content(rel)),
        mac: None,
        next: 0,
    };
    piece
        .scan(&null_scan(rel), &mut [], &mut sink)
        .map_err(|e| format!("damaged: {}", reason(e)))?;
    if let Some(m) = sink.mac {
        // Verified here as archive-get does, so that a forged segment never enters the catalog.
        let recorded = h.mac.as_deref().ok_or(
            "it carries no MAC, but the repository requires one: it was archived without the MAC key, or its MAC was cut off (tampered?)",
        )?;
        if !m.verify(recorded) {
            return Err("its MAC does not verify: it was changed after it was archived (tampered?), or archived under another MAC key".into());
        }
    }
    let (_, size, crc32c) = sink.inner.ends.pop().ok_or("holds no complete file")?;
    // Objects stores keep no usable modification time; the piece records its creation.
    let archived_at = h.created_unix * 1_000_000;
    cat.add_wal(&WalRecord {
        db_id: db.id,
        timeline: name
            .get(..8)
            .and_then(|t| u32::from_str_radix(t, 16).ok())
            .unwrap_or(0),
        name,
        path: rel.to_string(),
        size,
        stored_size,
        crc32c,
        archived_at,
    })
    .map_err(|e| e.to_string())?;
    rep.wal_added += 1;
    Ok(())
}

/// One PostgreSQL timeline of a database (RMAN's incarnation).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Incarnation {
    pub timeline: u32,
    pub parent_timeline: Option<u32>,
    /// Where the parent timeline was left, as X/Y; None for timeline 1.
    pub switch_lsn: Option<String>,
    pub reason: Option<String>,
    /// CURRENT for the newest timeline, PARENT for its ancestors, ORPHAN for the others.
    pub status: &'static str,
}

/// The timelines of a database: timeline 1, plus one per archived `NNNNNNNN.history` file,
/// whose last line names the parent timeline and the switch point.
pub fn incarnations(repo: &Repository, db: &DbRecord) -> Result<Vec<Incarnation>, EngineError> {
    let mut out = vec![Incarnation {
        timeline: 1,
        parent_timeline: None,
        switch_lsn: None,
        reason: None,
        status: "ORPHAN",
    }];
    for w in repo.catalog().wal_list(db.id)? {
        let Some(tli) = w
            .name
            .strip_suffix(".history")
            .and_then(|t| u32::from_str_radix(t, 16).ok())
        else {
            continue;
        };
        let Some(data) = crate::archive::read_wal(repo, db, &w.name)? else {
            continue;
        };
        let text = String::from_utf8_lossy(&data);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .unwrap_or("");
        let mut fields = last.splitn(3, char::is_whitespace);
        let parent = fields.next().and_then(|p| p.trim().parse().ok());
        let switch = fields.next().map(|s| s.trim().to_string());
        let reason = fields.next().map(|s| s.trim().to_string());
        out.push(Incarnation {
            timeline: tli,
            parent_timeline: parent,
            switch_lsn: switch,
            reason,
            status: "ORPHAN",
        });
    }
    out.sort_by_key(|i| i.timeline);
    // The newest timeline is current; walking its parents marks the ancestry.
    let mut cur = out.last().map(|i| i.timeline);
    let mut first = true;
    while let Some(t) = cur {
        let Some(i) = out
            .iter_mut()
            .find(|i| i.timeline == t && i.status == "ORPHAN")
        else {
            break;
        };
        i.status = if first { "CURRENT" } else { "PARENT" };
        first = false;
        cur = i.parent_timeline;
    }
    Ok(out)
}

/// The scan of an archived WAL object that also feeds its content, in order, to the MAC of a
/// repository with a MAC key.
struct MacSink<'a> {
    inner: NullSink<'a>,
    /// The MAC before any content: each retry from another copy starts again from it.
    start: Option<ContentMac>,
    mac: Option<ContentMac>,
    next: u64,
}

impl Sink for MacSink<'_> {
    fn begin(&mut self, h: &recman_format::PieceHeader) -> Result<(), EngineError> {
        self.mac = self.start.clone();
        self.next = 0;
        self.inner.begin(h)
    }
    fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        if let Some(m) = &mut self.mac {
            // The MAC is of the content in order: an archived WAL file is written so.
            if offset != self.next {
                return Err(EngineError::Corrupt(format!(
                    "{} has a gap at offset {offset}",
                    file.name
                )));
            }
            m.update(data);
            self.next += data.len() as u64;
        }
        self.inner.chunk(file, offset, data)
    }
    fn file_end(&mut self, file: &FileRef, size: u64, crc: u32) -> Result<(), EngineError> {
        self.inner.file_end(file, size, crc)
    }
}
