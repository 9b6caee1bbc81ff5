//! BACKUP ARCHIVELOG: archived WAL from the repository's archive into backup sets (RMAN's
//! archived-log backup sets). The first step of BACKUP DATABASE PLUS ARCHIVELOG,
//! archiving the current segment, is [`crate::archive::archive_current`].
//!
//! An archivelog backup is laid out like a database backup, so that crosscheck, validate,
//! list, delete and `catalog start-with` need nothing special: pieces under
//! `<db>/backup/<id>/`, written atomically, then `manifest.json` (its entries are the WAL file
//! names), then one catalog transaction that makes the backup AVAILABLE together with its
//! pieces and the `backup_wal` rows naming what each set holds. Its type is [`ARCHIVELOG`]:
//! restore never starts from one, and retention keeps it while it holds WAL a kept backup
//! needs. Once a WAL file is in an AVAILABLE set, archive-get can read it from there, which is
//! what makes `--delete-input` and `delete archivelog all --backed-up N` safe.

use crate::backup_types::ARCHIVELOG;
use std::time::{Duration, Instant};

use recman_catalog::{BackupRecord, BackupStatus, DbRecord, MediaStatus, Repository, WalRecord};
use recman_format::manifest::*;
use recman_format::{Compression, PieceHeader, SetFile};
use recman_pg::Lsn;

use crate::error::EngineError;
use crate::pipeline::{OutputShape, SetWriter};
use crate::progress::Progress;
use crate::retention_policy::wal_position;
use crate::util::{backup_dir, hostname, now_micros, rfc3339};

const CHUNK: usize = 1 << 20;
/// Used for LSN bounds when no full-size segment tells the real one.
const DEFAULT_SEGMENT: u64 = 16 << 20;

#[derive(Clone, Debug)]
pub struct ArchivelogOptions {
    pub compression: Compression,
    pub tag: Option<String>,
    /// Only WAL held by fewer than N AVAILABLE backups (RMAN's NOT BACKED UP N TIMES).
    pub not_backed_up: Option<u32>,
    /// Remove the backed-up segments from the archive once the backup is complete.
    pub delete_input: bool,
    /// Most WAL files in one backup set.
    pub filesperset: u32,
    /// FORMAT with a location: the pieces are written in its directory under its names.
    pub format: Option<crate::piece_format::PieceFormat>,
}

impl Default for ArchivelogOptions {
    fn default() -> Self {
        ArchivelogOptions {
            compression: Compression::None,
            tag: None,
            not_backed_up: None,
            delete_input: false,
            filesperset: 32,
            format: None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct ArchivelogReport {
    /// None when there was nothing to back up.
    pub record: Option<BackupRecord>,
    pub wal: Vec<String>,
    pub sets: usize,
    /// Archived segments removed by `delete_input`.
    pub deleted: Vec<String>,
    pub elapsed: Duration,
}

/// Backs up the AVAILABLE archived WAL of `db` that `opts` selects into one new backup.
/// Takes the repository lock.
pub fn backup_archivelog(
    repo: &Repository,
    db: &DbRecord,
    opts: &ArchivelogOptions,
    progress: &dyn Progress,
) -> Result<ArchivelogReport, EngineError> {
    let t0 = Instant::now();
    if opts.filesperset == 0 || opts.not_backed_up == Some(0) {
        return Err(crate::refusal::Input::AtLeastOne {
            options: "--filesperset and --not-backed-up",
        }
        .into());
    }
    let _lock = repo.lock("backup archivelog")?;
    // Before any piece is written: the manifest at the end needs the MAC key.
    repo.mac_key()?;
    let cat = repo.catalog();
    // Under the lock no backup can be running: a RUNNING one was interrupted.
    for id in cat.fail_running_backups(
        db.id,
        "interrupted: the process running it ended before it completed",
    )? {
        let _ = repo.remove_prefix(&backup_dir(&db.name, &id));
        progress.message(&format!(
            "marked interrupted backup {id} FAILED and removed its pieces"
        ));
    }
    crate::retention::finish_pending(repo)?;
    let counts = cat.wal_backup_counts(db.id)?;
    let wal: Vec<WalRecord> = cat
        .wal_states(db.id)?
        .into_iter()
        .filter(|(_, st)| *st == MediaStatus::Available)
        .map(|(w, _)| w)
        .filter(|w| {
            opts.not_backed_up
                .is_none_or(|n| counts.get(&w.name).copied().unwrap_or(0) < n)
        })
        .collect();
    if wal.is_empty() {
        return Ok(ArchivelogReport {
            elapsed: t0.elapsed(),
            ..Default::default()
        });
    }
    let (id, tag) = new_id_and_tag(repo, db, opts.tag.as_deref())?;
    let mut rec = running_record(db, &id, &tag, &wal, opts);
    cat.insert_backup(&rec)?;
    let dir = backup_dir(&db.name, &id);
    match write_sets(repo, db, opts, progress, &mut rec, &wal, &dir) {
        Ok(sets) => {
            let names: Vec<String> = wal.iter().map(|w| w.name.clone()).collect();
            let mut deleted = Vec::new();
            if opts.delete_input {
                // History files stay: PostgreSQL asks for them at every recovery start and
                // they are tiny. Segments are now readable from the set just completed.
                let gone: Vec<(String, String)> = wal
                    .iter()
                    .filter(|w| w.name.len() == 24 && wal_position(&w.name).is_some())
                    .map(|w| (w.name.clone(), w.path.clone()))
                    .collect();
                let r = crate::retention::delete_objects(repo, db.id, &db.name, &[], &gone)?;
                deleted = r.wal;
            }
            Ok(ArchivelogReport {
                record: Some(rec),
                wal: names,
                sets,
                deleted,
                elapsed: t0.elapsed(),
            })
        }
        Err(e) => {
            rec.status = BackupStatus::Failed;
            rec.error = Some(e.to_string());
            rec.stop_time = Some(now_micros());
            let _ = cat.update_backup(&rec);
            // Nothing of a failed backup may be mistaken for a usable one later.
            let _ = repo.remove_prefix(&dir);
            Err(crate::backup::explain_failed(e, &rec, &dir))
        }
    }
}

/// A backup id and tag, in the same forms as BACKUP DATABASE's, unused in the catalog.
fn new_id_and_tag(
    repo: &Repository,
    db: &DbRecord,
    tag: Option<&str>,
) -> Result<(String, String), EngineError> {
    let cat = repo.catalog();
    let (id, stamp) = loop {
        let now = chrono::Utc::now();
        let stamp = now.format("%Y%m%dT%H%M%S").to_string();
        let id = format!("B{stamp}{:03}", now.timestamp_subsec_millis());
        // A database backup may have started in the same millisecond (PLUS ARCHIVELOG).
        if cat.backup(&id)?.is_none() {
            break (id, stamp);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let tag = match tag {
        Some(t) => t.to_uppercase(),
        None => {
            let base = format!("TAG{stamp}");
            let mut tag = base.clone();
            let mut n = 1;
            while !cat.backup_by_tag(db.id, &tag)?.is_empty() {
                n += 1;
                tag = format!("{base}_{n}");
            }
            tag
        }
    };
    Ok((id, tag))
}

/// The LSN where a segment starts, from its name and the segment size.
fn segment_lsn(name: &str, seg_size: u64) -> Option<u64> {
    let log = u64::from_str_radix(name.get(8..16)?, 16).ok()?;
    let seg = u64::from_str_radix(name.get(16..24)?, 16).ok()?;
    Some((log << 32) + seg * seg_size)
}

/// The WAL segment size, from the size of a full segment among `wal`.
fn segment_size(wal: &[WalRecord]) -> u64 {
    wal.iter()
        .filter(|w| w.name.len() == 24 && wal_position(&w.name).is_some())
        .map(|w| w.size)
        .find(|s| s.is_power_of_two() && *s >= 1 << 20)
        .unwrap_or(DEFAULT_SEGMENT)
}

fn running_record(
    db: &DbRecord,
    id: &str,
    tag: &str,
    wal: &[WalRecord],
    opts: &ArchivelogOptions,
) -> BackupRecord {
    let segments: Vec<&WalRecord> = wal
        .iter()
        .filter(|w| w.name.len() == 24 && wal_position(&w.name).is_some())
        .collect();
    let seg_size = segment_size(wal);
    let first = segments.iter().min_by_key(|w| wal_position(&w.name));
    let last = segments.iter().max_by_key(|w| wal_position(&w.name));
    let start_lsn = first
        .and_then(|w| segment_lsn(&w.name, seg_size))
        .unwrap_or(0);
    let stop_lsn = last
        .and_then(|w| segment_lsn(&w.name, seg_size))
        .map(|l| l + seg_size);
    BackupRecord {
        id: id.to_string(),
        db_id: db.id,
        tag: tag.to_string(),
        backup_type: ARCHIVELOG.into(),
        status: BackupStatus::Running,
        start_lsn,
        stop_lsn,
        timeline: last.or(first).map(|w| w.timeline).unwrap_or(1),
        start_wal: first
            .map(|w| w.name.clone())
            .unwrap_or_else(|| wal[0].name.clone()),
        stop_wal: last.map(|w| w.name.clone()),
        start_time: now_micros(),
        stop_time: None,
        stop_next_xid: None,
        db_bytes: wal.iter().map(|w| w.size).sum(),
        written_bytes: 0,
        file_count: wal.len() as u64,
        channels: 1,
        compression: opts.compression.to_string(),
        filesperset: opts.filesperset,
        maxopenfiles: 1,
        pid: std::process::id(),
        host: hostname(),
        error: None,
    }
}

/// Writes the sets, then the manifest, then completes the catalog record. Returns the
/// number of sets.
fn write_sets(
    repo: &Repository,
    db: &DbRecord,
    opts: &ArchivelogOptions,
    progress: &dyn Progress,
    rec: &mut BackupRecord,
    wal: &[WalRecord],
    dir: &str,
) -> Result<usize, EngineError> {
    progress.message(&format!(
        "archivelog backup {} of database {}: {} archived wal file(s), {} bytes",
        rec.id,
        db.name,
        wal.len(),
        rec.db_bytes
    ));
    progress.start("backup archivelog", rec.db_bytes);
    let output = match &opts.format {
        Some(f) => {
            std::fs::create_dir_all(&f.dir).map_err(|e| {
                EngineError::from(crate::refusal::Input::FormatDir {
                    dir: f.dir.display().to_string(),
                    why: e.to_string(),
                })
            })?;
            Some((crate::devices::media_for(repo, &f.device())?, f.device()))
        }
        None => None,
    };
    let job = WalSets {
        repo,
        db,
        opts,
        progress,
        rec,
        dir,
        output,
    };
    let mut written = Written::default();
    for (i, group) in wal.chunks(opts.filesperset as usize).enumerate() {
        job.write_set(i as u32 + 1, group, &mut written)?;
    }
    progress.finish();
    let Written {
        pieces,
        held,
        entries,
        msets,
        mut rows,
    } = written;
    rec.written_bytes = pieces.iter().map(|p| p.size).sum();
    rec.stop_time = Some(now_micros());
    let manifest = manifest_of(db, rec, wal, entries, msets);
    // Manifest last: its presence marks a complete backup in the repository.
    let mpath = format!("{dir}/manifest.json");
    let mut mf = repo.create_atomic(&mpath)?;
    crate::manifest_io::write(repo, &mut mf, &manifest, &mpath)?;
    mf.commit()?;
    rec.status = BackupStatus::Available;
    repo.catalog().complete_wal_backup(rec, &pieces, &held)?;
    crate::pipeline::stats::record_job(repo, &rec.id, "BACKUP", &rec.id, &mut rows);
    Ok(pieces.len())
}

/// What the sets of an archivelog backup share while they are written.
struct WalSets<'a> {
    repo: &'a Repository,
    db: &'a DbRecord,
    opts: &'a ArchivelogOptions,
    progress: &'a dyn Progress,
    rec: &'a BackupRecord,
    dir: &'a str,
    /// FORMAT's media and device type, when it names a directory; None: the repository.
    output: Option<(std::sync::Arc<dyn recman_media::Media>, String)>,
}

/// What the sets written so far hold, for the manifest and the catalog.
#[derive(Default)]
struct Written {
    pieces: Vec<recman_catalog::PieceRecord>,
    /// Each WAL file with the set that holds it.
    held: Vec<(String, u32)>,
    entries: Vec<ManifestEntry>,
    msets: Vec<ManifestSet>,
    rows: Vec<recman_catalog::IoStatRow>,
}

impl WalSets<'_> {
    /// Writes set `set_no` (one piece) of the WAL files `group`, and records its piece.
    fn write_set(
        &self,
        set_no: u32,
        group: &[WalRecord],
        written: &mut Written,
    ) -> Result<(), EngineError> {
        let (repo, db, opts, rec) = (self.repo, self.db, self.opts, self.rec);
        let rel = recman_catalog::layout::piece(self.dir, set_no, 1);
        let header = self.header(set_no, group);
        let written_as = match &opts.format {
            Some(f) => f.expand(&crate::piece_format::PieceVars {
                backup_id: &rec.id,
                db_name: &db.name,
                system_identifier: db.system_identifier,
                set_no,
                piece_no: 1,
                created_unix: header.created_unix,
            })?,
            None => rel.clone(),
        };
        let media = match &self.output {
            Some((m, _)) => m.as_ref(),
            None => repo.media().as_ref(),
        };
        let mut pw = SetWriter::create(
            media,
            repo.location(),
            &written_as,
            &header,
            OutputShape::default(),
        )?;
        self.write_files(&mut pw, set_no, group, written)?;
        let piece = pw.finish()?;
        written.rows.push(piece.output_row(1, set_no, 1));
        let mut record = piece.record(&rec.id, set_no, 1, 1, group.len() as u32);
        let mut mpiece = piece.manifest(1);
        if let Some((_, device)) = &self.output {
            // Recorded under its repository name, found through its copy on the FORMAT
            // directory; before the manifest, so the backup is never AVAILABLE without it.
            record.path = rel.clone();
            mpiece.path = rel.clone();
            mpiece.device = Some(device.clone());
            repo.catalog().add_copy(&recman_catalog::CopyRecord {
                object: rel.clone(),
                device: device.clone(),
                name: written_as.clone(),
                size: record.size,
                crc32c: record.crc32c,
                primary: true,
                created: now_micros(),
            })?;
        }
        written.pieces.push(record);
        written.msets.push(ManifestSet {
            set_no,
            channel: 1,
            pieces: vec![mpiece],
        });
        Ok(())
    }

    /// The header of set `set_no`'s piece, which names its WAL files.
    fn header(&self, set_no: u32, group: &[WalRecord]) -> PieceHeader {
        let (db, rec) = (self.db, self.rec);
        PieceHeader {
            backup_id: rec.id.clone(),
            db_name: db.name.clone(),
            system_identifier: db.system_identifier,
            set_no,
            piece_no: 1,
            compression: self.opts.compression,
            created_unix: rec.start_time / 1_000_000,
            mac: None,
            files: group
                .iter()
                .enumerate()
                .map(|(k, w)| SetFile {
                    index: k as u32,
                    path: w.name.clone(),
                })
                .collect(),
        }
    }

    /// Reads each WAL file of the set from the archive into its piece.
    fn write_files(
        &self,
        pw: &mut SetWriter,
        set_no: u32,
        group: &[WalRecord],
        written: &mut Written,
    ) -> Result<(), EngineError> {
        let (repo, db) = (self.repo, self.db);
        for (k, w) in group.iter().enumerate() {
            // Stopped: the error path records the backup FAILED and removes its pieces.
            crate::stop::check()?;
            let data = crate::archive::read_wal(repo, db, &w.name)?.ok_or_else(|| {
                EngineError::NotFound(format!(
                    "archived wal file {} left repository {} during the backup; hint: run `recman crosscheck archivelog all` and back up again",
                    w.name,
                    repo.location()
                ))
            })?;
            let crc = pw.whole_file(k as u32, &data, CHUNK)?;
            self.progress.advance(data.len() as u64);
            written.held.push((w.name.clone(), set_no));
            written.entries.push(ManifestEntry {
                path: w.name.clone(),
                kind: EntryKind::File,
                mode: 0o600,
                uid: 0,
                gid: 0,
                mtime: w.archived_at / 1_000_000,
                size: Some(data.len() as u64),
                crc32c: Some(crc),
                set_no: Some(set_no),
                link_target: None,
                volatile_blocks: Vec::new(),
                incremental: false,
                sections: Vec::new(),
            });
        }
        Ok(())
    }
}

/// The manifest of an archivelog backup: its entries are the WAL file names.
fn manifest_of(
    db: &DbRecord,
    rec: &BackupRecord,
    wal: &[WalRecord],
    entries: Vec<ManifestEntry>,
    msets: Vec<ManifestSet>,
) -> BackupManifest {
    BackupManifest {
        format: MANIFEST_FORMAT.into(),
        version: MANIFEST_VERSION,
        backup_id: rec.id.clone(),
        db_name: db.name.clone(),
        system_identifier: db.system_identifier,
        pg_version: db.pg_version,
        tag: rec.tag.clone(),
        backup_type: rec.backup_type.clone(),
        start_lsn: Lsn(rec.start_lsn).to_string(),
        stop_lsn: Lsn(rec.stop_lsn.unwrap_or(rec.start_lsn)).to_string(),
        timeline: rec.timeline,
        start_wal: rec.start_wal.clone(),
        stop_wal: rec.stop_wal.clone().unwrap_or_default(),
        start_time: rfc3339(rec.start_time),
        stop_time: rfc3339(rec.stop_time.unwrap_or_default()),
        stop_next_xid: 0,
        wal_segment_size: segment_size(wal),
        compression: rec.compression.clone(),
        channels: 1,
        filesperset: rec.filesperset,
        maxopenfiles: 1,
        checksums_enabled: false,
        incremental_level: None,
        cumulative: false,
        parent: None,
        parent_start_lsn: None,
        backup_label: String::new(),
        tablespace_map: String::new(),
        read: None,
        origin: None,
        tablespaces: Vec::new(),
        entries,
        sets: msets,
        corrupt_blocks: Vec::new(),
    }
}
