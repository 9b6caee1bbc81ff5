//! VALIDATE: reading without writing. `validate_database` checks every page of a data
//! directory (RMAN's BACKUP VALIDATE); `validate_backup` reads every piece of a backup and
//! checks every chunk, every file checksum and every page, as a restore would, without
//! writing anything.

use crate::backup::describe_corrupt;
use crate::io::input::{Event, InputFile, InputMux};
use crate::pagecheck::{PageRules, PageVerdicts, check_chunk};
use crate::restore::load_manifest;
use crate::{Context, EngineError, Progress, scan_data_dir};
use recman_catalog::{BackupStatus, CorruptBlock};
use recman_format::manifest::EntryKind;
use recman_format::{PieceReader, Record};
use recman_pg::{Lsn, wal_segments_between};
use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

#[derive(Clone, Debug, Default)]
pub struct CorruptReport {
    pub blocks: Vec<CorruptBlock>,
}

impl CorruptReport {
    pub fn lines(&self) -> Vec<String> {
        self.blocks.iter().map(describe_corrupt).collect()
    }
}

#[derive(Clone, Debug, Default)]
pub struct ValidateDatabaseReport {
    pub files: u64,
    pub relation_files: u64,
    pub pages: u64,
    pub bytes: u64,
    pub checksums_enabled: bool,
    pub corrupt: CorruptReport,
    /// The read side's statistics (one AGGREGATE row): the read rate a backup cannot beat.
    pub io: Option<recman_catalog::IoStatRow>,
}

#[derive(Clone, Debug, Default)]
pub struct ValidateBackupReport {
    pub backup_id: String,
    pub tag: String,
    pub pieces: u64,
    pub files: u64,
    pub pages: u64,
    pub bytes: u64,
    pub wal_segments: u64,
    pub corrupt: CorruptReport,
}

/// Reads every file of `pgdata`; `conninfo`, when the server answers there, names relations.
pub fn validate_database(
    pgdata: &Path,
    conninfo: Option<&str>,
    io: &crate::io::IoSettings,
    maxopenfiles: u32,
    progress: &dyn Progress,
) -> Result<ValidateDatabaseReport, EngineError> {
    let facts = recman_pg::read_data_dir_facts(pgdata)?;
    let mut session = conninfo
        .and_then(|c| recman_pg::resolve_conninfo(Some(c)).ok())
        .and_then(|t| recman_pg::Session::connect(&t).ok())
        .filter(|s| s.system_identifier == facts.system_identifier);
    let checksums = match (facts.checksums_enabled, &session) {
        (Some(c), _) => c,
        (None, Some(s)) => s.checksums_enabled,
        (None, None) => {
            progress.message("could not tell whether data checksums are enabled (pg_controldata not found): checking page headers only");
            false
        }
    };
    // A running cluster may be writing the pages we read; those newer than the last
    // checkpoint's redo point are repaired from WAL by crash recovery, so they are not corrupt.
    let running = facts
        .state
        .as_deref()
        .is_some_and(|s| s != "shut down" && s != "shut down in recovery");
    let redo = if running {
        facts.checkpoint_redo.map(|l| l.0)
    } else {
        None
    };
    let scan = scan_data_dir(pgdata)?;
    let mut report = ValidateDatabaseReport {
        checksums_enabled: checksums,
        ..Default::default()
    };
    progress.start("validate", scan.total_bytes());
    let (mut engine, notice) = crate::io::open_engine(io, 64).map_err(|e| {
        EngineError::Invalid(format!(
            "cannot start i/o mode {}: {e}; hint: choose another with --io",
            io.mode
        ))
    })?;
    if let Some(n) = notice {
        progress.notice(&n);
    }
    let mut throttle = crate::io::Throttle::new(io.rate);
    let mux = maxopenfiles.max(1);
    let plan = crate::io::BufferPlan::for_mux(mux, io);
    let inputs = scan
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| InputFile {
            slot: i as u32,
            index: i,
            path: f.abs(pgdata),
            size_hint: f.size,
            range: None,
        })
        .collect();
    let started = crate::util::now_micros();
    let mut verdicts: HashMap<usize, PageVerdicts> = HashMap::new();
    let mut total = crate::io::IoCounters::default();
    let mut input = InputMux::new(engine.as_mut(), plan, mux, inputs, &mut throttle);
    while let Some(ev) = input
        .next_event()
        .map_err(|e| EngineError::Invalid(format!("validate {}: {e}", pgdata.display())))?
    {
        match ev {
            Event::Chunk {
                index,
                offset,
                data,
                file,
                ..
            } => {
                let f = &scan.files[index];
                if let Some(rf) = &f.relfile {
                    let rules = PageRules {
                        relfile: rf,
                        checksums,
                        start_lsn: redo,
                        skip: &[],
                    };
                    check_chunk(
                        Some(file),
                        &rules,
                        offset,
                        data,
                        verdicts.entry(index).or_default(),
                    )
                    .map_err(|e| EngineError::io("re-read", f.abs(pgdata), e))?;
                    report.pages += (data.len() / recman_page::BLCKSZ) as u64;
                }
                report.bytes += data.len() as u64;
                progress.advance(data.len() as u64);
            }
            Event::End {
                index, counters, ..
            } => {
                report.files += 1;
                total.add(&counters);
                let f = &scan.files[index];
                let Some(rf) = &f.relfile else { continue };
                report.relation_files += 1;
                let v = verdicts.remove(&index).unwrap_or_default();
                if v.corrupt.is_empty() {
                    continue;
                }
                let relation = session
                    .as_mut()
                    .and_then(|s| s.relation_name(rf.db_oid, rf.tablespace_oid, rf.relfilenode));
                for (block, fault) in v.corrupt {
                    report.corrupt.blocks.push(CorruptBlock {
                        backup_id: String::new(),
                        path: f.rel.clone(),
                        block,
                        kind: fault.kind().to_string(),
                        relation: relation.clone(),
                        detail: fault.to_string(),
                    });
                }
            }
            Event::Vanished { .. } => {}
        }
    }
    drop(input);
    let mut agg = crate::channel::stat_row(
        "AGGREGATE",
        1,
        None,
        &total,
        started,
        crate::util::now_micros(),
        (plan.size as u64, plan.per_file as u64),
    );
    agg.io_mode = engine.mode().to_string();
    agg.ring_submissions = engine.ring_submissions();
    agg.job_type = "VALIDATE".into();
    report.io = Some(agg);
    progress.finish();
    Ok(report)
}

/// Picks a backup by id or tag (newest with that tag); the newest available when None.
/// A backup by id or tag (the newest with that tag), or the newest AVAILABLE one when None.
pub fn find_backup(
    ctx: &Context,
    which: Option<&str>,
) -> Result<recman_catalog::BackupRecord, EngineError> {
    let all = ctx.repo.catalog().backups(ctx.db.id)?;
    let found = match which {
        Some(w) => all
            .iter()
            .rev()
            .find(|b| b.id == w || b.tag.eq_ignore_ascii_case(w)),
        None => all
            .iter()
            .rev()
            .find(|b| b.status == BackupStatus::Available),
    };
    found.cloned().ok_or_else(|| {
        EngineError::Invalid(match which {
            Some(w) => format!("no backup with id or tag {w:?} in database {:?}; hint: `recman list backup` shows them", ctx.db.name),
            None => format!("database {:?} has no available backup; hint: take one with `recman backup database`", ctx.db.name),
        })
    })
}

pub fn validate_backup(
    ctx: &Context,
    which: Option<&str>,
    progress: &dyn Progress,
) -> Result<ValidateBackupReport, EngineError> {
    let b = find_backup(ctx, which)?;
    if b.status != BackupStatus::Available {
        return Err(EngineError::Invalid(format!(
            "backup {} is {}, not AVAILABLE; nothing to validate; hint: `recman list backup` shows its error",
            b.id,
            b.status.as_str()
        )));
    }
    let m = load_manifest(ctx, &b.id)?;
    let entries: HashMap<&str, _> = m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| (e.path.as_str(), e))
        .collect();
    let mut report = ValidateBackupReport {
        backup_id: b.id.clone(),
        tag: b.tag.clone(),
        ..Default::default()
    };
    let start_lsn: Lsn = m.start_lsn.parse()?;
    let started = crate::util::now_micros();
    let mut rows: Vec<recman_catalog::IoStatRow> = Vec::new();
    let mut total = crate::io::IoCounters::default();
    progress.start("validate", entries.values().filter_map(|e| e.size).sum());
    for set in &m.sets {
        for p in &set.pieces {
            let opened = crate::util::now_micros();
            let f = crate::pieces::open(&ctx.repo, &p.path)?;
            let (timed, counters) = crate::io::TimedReader::new(f);
            let mut r = PieceReader::open(BufReader::with_capacity(1 << 20, timed))
                .map_err(|e| EngineError::piece(&p.path, e))?;
            let names: Vec<String> = r.header().files.iter().map(|f| f.path.clone()).collect();
            let mut crcs: HashMap<u32, u32> = HashMap::new();
            let mut verdicts: HashMap<u32, PageVerdicts> = HashMap::new();
            while let Some(rec) = r.next().map_err(|e| EngineError::piece(&p.path, e))? {
                match rec {
                    Record::Chunk {
                        file_index,
                        file_offset,
                        mut data,
                    } => {
                        let name = names
                            .get(file_index as usize)
                            .map(String::as_str)
                            .unwrap_or("");
                        let c = crcs.entry(file_index).or_insert(0);
                        *c = crc32c::crc32c_append(*c, &data);
                        if let Some(rf) = recman_page::classify(name) {
                            let skip = entries
                                .get(name)
                                .map(|e| e.volatile_blocks.as_slice())
                                .unwrap_or(&[]);
                            let v = verdicts.entry(file_index).or_default();
                            check_chunk(
                                None,
                                &PageRules {
                                    relfile: &rf,
                                    checksums: m.checksums_enabled,
                                    start_lsn: Some(start_lsn.0),
                                    skip,
                                },
                                file_offset,
                                &mut data,
                                v,
                            )
                            .map_err(|e| crate::util::media_io(&ctx.repo, &p.path, "check", e))?;
                            report.pages += (data.len() / recman_page::BLCKSZ) as u64;
                        }
                        report.bytes += data.len() as u64;
                        progress.advance(data.len() as u64);
                    }
                    Record::FileEnd {
                        file_index,
                        size,
                        crc32c,
                    } => {
                        let name = names.get(file_index as usize).cloned().unwrap_or_default();
                        let running = crcs.remove(&file_index).unwrap_or(0);
                        let e = entries.get(name.as_str());
                        let matches = |e: &&recman_format::manifest::ManifestEntry| match e
                            .sections
                            .iter()
                            .find(|s| s.piece_no == p.piece_no)
                        {
                            Some(sec) => sec.crc32c == crc32c && sec.offset + sec.len == size,
                            None => e.crc32c == Some(crc32c) && e.size == Some(size),
                        };
                        if running != crc32c || e.is_some_and(|e| !matches(e)) {
                            return Err(EngineError::Corrupt(format!(
                                "file {name} in backup piece {} does not match its recorded checksum; hint: the backup is damaged, take a new one and keep this one out of restores",
                                p.path
                            )));
                        }
                        report.files += 1;
                        for (block, fault) in
                            verdicts.remove(&file_index).unwrap_or_default().corrupt
                        {
                            // Blocks the backup recorded as corrupt (accepted with MAXCORRUPT) are known, not new.
                            if m.corrupt_blocks
                                .iter()
                                .any(|c| c.path == name && c.block == block)
                            {
                                continue;
                            }
                            report.corrupt.blocks.push(CorruptBlock {
                                backup_id: b.id.clone(),
                                path: name.clone(),
                                block,
                                kind: fault.kind().into(),
                                relation: None,
                                detail: format!("{fault} (in backup piece {})", p.path),
                            });
                        }
                    }
                }
            }
            let s = r.finish().map_err(|e| EngineError::piece(&p.path, e))?;
            if s.size != p.size || s.crc32c != p.crc32c {
                return Err(EngineError::Corrupt(format!(
                    "backup piece {} does not match the manifest (size {} crc {:08x}, expected {} {:08x}); hint: the backup is damaged",
                    p.path, s.size, s.crc32c, p.size, p.crc32c
                )));
            }
            report.pieces += 1;
            let c = counters.lock().expect("counters lock").clone();
            let mut row = crate::channel::stat_row(
                "INPUT",
                1,
                Some(p.path.clone()),
                &c,
                opened,
                crate::util::now_micros(),
                (1 << 20, 1),
            );
            row.set_no = Some(set.set_no);
            row.piece_no = Some(p.piece_no);
            total.add(&c);
            rows.push(row);
        }
    }
    rows.push(crate::channel::stat_row(
        "AGGREGATE",
        1,
        None,
        &total,
        started,
        crate::util::now_micros(),
        (1 << 20, 1),
    ));
    let job = format!("V{}", chrono::Utc::now().format("%Y%m%dT%H%M%S%3f"));
    for r in &mut rows {
        r.job_id = job.clone();
        r.job_type = "VALIDATE".into();
        r.backup_id = Some(b.id.clone());
        r.io_mode = "sync".into();
    }
    // A record of the job, not part of it: a read-only repository still validates.
    let _ = ctx.repo.catalog().add_io_stats(&rows);
    progress.finish();
    // A database backup is only usable with the WAL up to its stop point; a backup of archived
    // WAL is that WAL, and its pieces were just verified.
    let stop: Lsn = m.stop_lsn.parse()?;
    let needed = if m.backup_type == crate::archivelog::ARCHIVELOG {
        Vec::new()
    } else {
        wal_segments_between(m.timeline, start_lsn, stop, m.wal_segment_size)
    };
    for w in needed {
        let name = w.to_string();
        match crate::archive::read_wal(&ctx.repo, &ctx.db, &name)? {
            Some(_) => report.wal_segments += 1,
            None => {
                return Err(EngineError::Wal(format!(
                    "wal segment {name} needed to make backup {} consistent is missing from the repository; hint: the backup cannot be restored without it",
                    b.id
                )));
            }
        }
    }
    Ok(report)
}
