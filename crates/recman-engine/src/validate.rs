//! VALIDATE: reading without writing. `validate_database` checks every page of a data
//! directory (RMAN's BACKUP VALIDATE: the backup channel, its output a null sink); `validate_backup` (validate_backup.rs) reads every
//! piece of a backup as a restore would.

use crate::channel::run_channel;
use crate::channel_shared::ChannelShared;
use crate::channel_shared::Unit;
use crate::context::Context;
use crate::error::EngineError;
use crate::pagecheck::describe_corrupt;
use crate::progress::Progress;
use recman_catalog::{BackupStatus, CorruptBlock};
use recman_format::PieceHeader;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Mutex;

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
    read: ValidateRead,
    check_logical: bool,
    progress: &dyn Progress,
) -> Result<ValidateDatabaseReport, EngineError> {
    let source = crate::source::LocalSource::new(pgdata);
    validate_source(&source, conninfo, io, read, check_logical, progress)
}

/// How `validate database` spreads its reads: channels (each its own thread and I/O engine)
/// and files open at once per channel.
#[derive(Clone, Copy, Debug)]
pub struct ValidateRead {
    pub channels: u32,
    pub maxopenfiles: u32,
}

/// As [`validate_database`], reading the cluster through `source` (its agent, or a local
/// directory).
pub fn validate_source(
    source: &dyn crate::source::DataSource,
    conninfo: Option<&str>,
    io: &crate::io::IoSettings,
    read: ValidateRead,
    check_logical: bool,
    progress: &dyn Progress,
) -> Result<ValidateDatabaseReport, EngineError> {
    let facts = source.facts()?;
    let mut session = conninfo
        .and_then(|c| recman_pg::resolve_conninfo(Some(c)).ok())
        .and_then(|t| recman_pg::Session::connect(&t).ok())
        .filter(|s| s.system_identifier == facts.system_identifier);
    let checksums = checksums_of(&facts, session.as_ref(), progress);
    let redo = redo_of(&facts);
    let scan = source.scan()?;
    let mut report = ValidateDatabaseReport {
        checksums_enabled: checksums,
        ..Default::default()
    };
    progress.start("validate", scan.total_bytes());
    // BACKUP VALIDATE: the backup's channels over the backup's plan (sets balanced by bytes,
    // a dominant file in sections shared by the channels), writing nothing.
    let channels = read.channels.max(1);
    let sizes: Vec<u64> = scan.files.iter().map(|f| f.size).collect();
    let sets = crate::plan::plan(
        &sizes,
        crate::plan::PlanSettings {
            channels,
            filesperset: u32::MAX,
            maxopenfiles: read.maxopenfiles.max(1),
            section_size: None,
        },
    )
    .sets;
    let queue = Mutex::new(Unit::all(&sets).into_iter().collect::<VecDeque<_>>());
    let read_way = crate::adapt::Adaptive::default();
    let shared = ChannelShared {
        format: None,
        repo: None,
        output: None,
        files: &scan.files,
        source,
        relation_source: None,
        header: PieceHeader {
            backup_id: String::new(),
            db_name: String::new(),
            system_identifier: facts.system_identifier,
            set_no: 0,
            piece_no: 0,
            compression: recman_format::Compression::None,
            created_unix: 0,
            mac: None,
            files: Vec::new(),
        },
        backup_dir: String::new(),
        checksums,
        logical: check_logical,
        start_lsn: redo,
        progress,
        io,
        increment: None,
        tracking: None,
        queue: &queue,
        live: None,
        read_way: &read_way,
    };
    let outcomes =
        crate::pipeline::pool::each(channels as usize, "validate", |w| run_channel(&shared, w))?;
    if let Some(n) = outcomes.iter().find_map(|o| o.notice.as_ref()) {
        progress.notice(n);
    }
    count(&outcomes, &scan, session.as_mut(), &mut report);
    report.io = aggregate(outcomes, &sets, io);
    progress.finish();
    if read_way.used() {
        progress.message(&read_way.read_summary());
    }
    Ok(report)
}

/// Whether the cluster's pages carry checksums: pg_control says, else the server does; with
/// neither, only page headers are checked.
fn checksums_of(
    facts: &recman_pg::DataDirFacts,
    session: Option<&recman_pg::Session>,
    progress: &dyn Progress,
) -> bool {
    match (facts.checksums_enabled, session) {
        (Some(c), _) => c,
        (None, Some(s)) => s.checksums_enabled,
        (None, None) => {
            progress.message("could not tell whether data checksums are enabled (global/pg_control fails its CRC and no server answered): checking page headers only");
            false
        }
    }
}

/// The redo point of a running cluster's last checkpoint: pages newer than it are not corrupt.
fn redo_of(facts: &recman_pg::DataDirFacts) -> Option<u64> {
    // A running cluster may be writing the pages we read; those newer than the last
    // checkpoint's redo point are repaired from WAL by crash recovery, so they are not corrupt.
    let running = facts
        .state
        .as_deref()
        .is_some_and(|s| s != "shut down" && s != "shut down in recovery");
    if running {
        facts.checkpoint_redo.map(|l| l.0)
    } else {
        None
    }
}

/// Counts the channels' files, pages and corrupt blocks into `report`, the blocks named by
/// their relations where a server answers.
fn count(
    outcomes: &[crate::channel::ChannelOutcome],
    scan: &crate::scan::Scan,
    mut session: Option<&mut recman_pg::Session>,
    report: &mut ValidateDatabaseReport,
) {
    // A file read in sections comes back once per section: it counts once, its size is where
    // its last section ended, and its pages and corrupt blocks are those of all sections.
    let mut seen = std::collections::HashMap::<usize, u64>::new();
    for fo in outcomes
        .iter()
        .flat_map(|o| o.sets.iter().flat_map(|s| s.files.iter()))
    {
        if fo.vanished {
            continue;
        }
        report.pages += fo.pages;
        let first = !seen.contains_key(&fo.index);
        let end = seen.entry(fo.index).or_default();
        *end = (*end).max(fo.size);
        let f = &scan.files[fo.index];
        if first {
            report.files += 1;
            if f.relfile.is_some() {
                report.relation_files += 1;
            }
        }
        let Some(rf) = &f.relfile else { continue };
        if fo.verdicts.corrupt.is_empty() {
            continue;
        }
        let relation = session
            .as_deref_mut()
            .and_then(|s| s.relation_name(rf.db_oid, rf.tablespace_oid, rf.relfilenode));
        for (block, fault) in &fo.verdicts.corrupt {
            report.corrupt.blocks.push(CorruptBlock {
                backup_id: String::new(),
                path: f.rel.clone(),
                block: *block,
                kind: fault.kind().to_string(),
                relation: relation.clone(),
                detail: fault.to_string(),
            });
        }
    }
    report.bytes = seen.values().sum();
    report
        .corrupt
        .blocks
        .sort_by(|a, b| (&a.path, a.block).cmp(&(&b.path, b.block)));
}

/// The channels' AGGREGATE rows as one, with the buffers the plan gave them.
fn aggregate(
    outcomes: Vec<crate::channel::ChannelOutcome>,
    sets: &[crate::plan::PlannedSet],
    io: &crate::io::IoSettings,
) -> Option<recman_catalog::IoStatRow> {
    let mux = sets.iter().map(|s| s.mux).max().unwrap_or(1);
    let plan = crate::io::BufferPlan::for_mux(mux, io);
    outcomes
        .into_iter()
        .filter_map(|mut o| o.stats.pop())
        .reduce(|mut a, b| {
            a.absorb(&b);
            a
        })
        .map(|mut agg| {
            agg.job_type = "VALIDATE".into();
            agg.buffer_size = plan.size as u64;
            agg.buffer_count = plan.per_file as u64;
            agg
        })
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
        EngineError::NotFound(match which {
            Some(w) => format!("no backup with id or tag {w:?} in database {:?}; hint: `recman list backup` shows them", ctx.db.name),
            None => format!("database {:?} has no available backup; hint: take one with `recman backup database`", ctx.db.name),
        })
    })
}
