//! VALIDATE: reading without writing. `validate_database` checks every page of a data
//! directory (RMAN's BACKUP VALIDATE); `validate_backup` (validate_backup.rs) reads every
//! piece of a backup as a restore would.

use crate::backup::describe_corrupt;
use crate::io::input::{Event, InputFile, InputMux};
use crate::pagecheck::{PageRules, PageVerdicts, check_chunk};
use crate::{Context, EngineError, Progress, scan_data_dir};
use recman_catalog::{BackupStatus, CorruptBlock};
use std::collections::HashMap;
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
            progress.message("could not tell whether data checksums are enabled (global/pg_control fails its CRC and no server answered): checking page headers only");
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
    let mut input = InputMux::new(engine.as_mut(), plan, mux, inputs, &mut throttle)
        .direct_reads(io.direct_reads);
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
