//! Block media recovery (RMAN's RECOVER … BLOCK and RECOVER CORRUPTION LIST): damaged pages of
//! a stopped cluster are replaced, in place, by their images brought forward to the cluster's
//! own last checkpoint.
//!
//! How: the newest backup before that checkpoint is restored whole into an auxiliary directory
//! (v1 restores the whole backup, not only the relations named), the stopped cluster's own
//! pg_wal is copied in for the WAL not archived yet, and PostgreSQL recovers it there to the
//! cluster's shutdown checkpoint and shuts down (its restartpoint puts every page on disk). Each
//! named page is then read from the auxiliary copy, checked, written over the damaged one
//! (fsync), read back and checked again, and the repair recorded in the catalog.
//!
//! Only a cleanly stopped cluster is repaired: its pages are then exactly what WAL says up to
//! its shutdown checkpoint, so a page replayed to that checkpoint fits them. A block whose WAL
//! since the backup is neither archived nor in pg_wal is refused and left as it is.

mod auxcopy;
mod blockref;

pub use blockref::BlockRef;

use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
use crate::restore::{RecoveryTarget, RestoreOptions};
use recman_catalog::BlockRepair;
use recman_page::BLCKSZ;
use recman_pg::Lsn;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What `recover block` is asked for.
#[derive(Clone, Debug)]
pub struct BlockRecoverOptions {
    /// The blocks; with `corruption_list`, added to the catalog's list.
    pub blocks: Vec<BlockRef>,
    /// Every block the last `validate database` recorded as corrupt, and those the newest
    /// backup accepted (`--maxcorrupt`) that still fail their check.
    pub corruption_list: bool,
    /// Where the auxiliary copy is restored; default `<PGDATA>.recman-aux` beside the cluster.
    pub auxiliary_dir: Option<PathBuf>,
    /// The recman executable restore_command calls, and the global options it passes on.
    pub recman_exe: PathBuf,
    pub restore_command_args: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct BlockRecoverReport {
    pub backup_id: String,
    /// The cluster's checkpoint the pages were brought forward to.
    pub recovered_to: Lsn,
    pub repaired: Vec<BlockRepair>,
    pub auxiliary_dir: PathBuf,
    /// Restore and recovery of the auxiliary copy.
    pub elapsed: Duration,
    /// Piece bytes read from the backup, and the backup's piece bytes in all.
    pub read: (u64, u64),
}

/// Repairs the blocks `opts` names in the stopped cluster at `ctx.pgdata`.
pub fn recover_blocks(
    ctx: &Context,
    opts: &BlockRecoverOptions,
    progress: &dyn Progress,
) -> Result<BlockRecoverReport, EngineError> {
    let t0 = Instant::now();
    let pgdata = ctx.pgdata.clone().ok_or_else(|| {
        EngineError::from(crate::refusal::Cluster::NeedsDataDir {
            what: "recover block".to_string(),
            agent_ok: false,
        })
    })?;
    let mut blocks = opts.blocks.clone();
    if opts.corruption_list {
        let listed = ctx.repo.catalog().block_corruption(ctx.db.id)?;
        for c in listed {
            blocks.push(BlockRef::new(&c.path, c.block)?);
        }
        blocks.extend(still_bad_from_backup(ctx, &pgdata)?);
        if blocks.is_empty() {
            return Err(EngineError::NotFound(format!(
                "no corrupt block is recorded for database {:?} (by the last validate database, or still bad of those its newest backup accepted); hint: `recman validate database` checks every page and records what it finds",
                ctx.db.name
            )));
        }
    }
    blocks.sort();
    blocks.dedup();
    if blocks.is_empty() {
        return Err(crate::refusal::Backups::NoBlockNamed.into());
    }
    let names = list(&blocks);
    let facts = check_stopped(&pgdata, &names)?;
    if facts.system_identifier != ctx.db.system_identifier {
        return Err(crate::refusal::Cluster::DataDirOfOtherDatabase {
            dir: pgdata.display().to_string(),
            sysid: facts.system_identifier,
            db: ctx.db.name.clone(),
            db_sysid: ctx.db.system_identifier,
        }
        .into());
    }
    for b in &blocks {
        let file = pgdata.join(&b.path);
        let len = std::fs::metadata(&file)
            .map_err(|e| EngineError::io("read", &file, e))?
            .len();
        if b.offset() + BLCKSZ as u64 > len {
            return Err(crate::refusal::Backups::BlockPastEnd {
                block: b.block,
                file: file.display().to_string(),
                len,
            }
            .into());
        }
    }
    let target = facts.checkpoint_redo.ok_or_else(|| {
        EngineError::from(crate::refusal::Cluster::NoCheckpoint {
            pgdata: pgdata.display().to_string(),
            blocks: names.to_string(),
        })
    })?;
    let aux_dir = opts.auxiliary_dir.clone().unwrap_or_else(|| {
        let mut s = pgdata.clone().into_os_string();
        s.push(".recman-aux");
        PathBuf::from(s)
    });
    let restore = RestoreOptions {
        to: aux_dir.clone(),
        target: RecoveryTarget::Lsn(target),
        from_tag: None,
        channels: 1,
        tablespace_map: Vec::new(),
        timeline: None,
        preserve_archive_mode: false,
        from_copy: None,
        switch_to_copy: false,
        recman_exe: opts.recman_exe.clone(),
        restore_command_args: opts.restore_command_args.clone(),
        // The WAL after the last archived segment is the cluster's own pg_wal, checked below.
        allow_wal_gap: true,
        force: false,
        write_mode: None,
    };
    let mut files: Vec<String> = blocks.iter().map(|b| b.path.clone()).collect();
    files.dedup();
    let aux = auxcopy::AuxCopy::prepare(ctx, &pgdata, restore, &names, &files, progress)?;
    let outcome = aux.recover(&facts, &names, progress).and_then(|()| {
        let mut repaired = Vec::new();
        for b in &blocks {
            repaired.push(repair_block(ctx, &pgdata, &aux, b, target, &facts)?);
            progress.message(&format!("repaired block {b}"));
        }
        Ok(repaired)
    });
    let backup_id = aux.backup_id.clone();
    let read = aux.read;
    aux.remove(progress);
    Ok(BlockRecoverReport {
        backup_id,
        recovered_to: target,
        repaired: outcome?,
        auxiliary_dir: aux_dir,
        elapsed: t0.elapsed(),
        read,
    })
}

/// The blocks the newest backup recorded as corrupt (accepted by `--maxcorrupt`) that still
/// fail their check in the cluster; a block since dropped, truncated or rewritten is not.
fn still_bad_from_backup(ctx: &Context, pgdata: &Path) -> Result<Vec<BlockRef>, EngineError> {
    let cat = ctx.repo.catalog();
    let newest = cat
        .backups(ctx.db.id)?
        .into_iter()
        .filter(|b| b.status == recman_catalog::BackupStatus::Available)
        .max_by_key(|b| b.start_time);
    let Some(newest) = newest else {
        return Ok(Vec::new());
    };
    let checksums = recman_pg::read_data_dir_facts(pgdata)?
        .checksums_enabled
        .unwrap_or(false);
    let mut out = Vec::new();
    for c in cat.corrupt_blocks(&newest.id)? {
        let Ok(b) = BlockRef::new(&c.path, c.block) else {
            continue;
        };
        let mut page = vec![0u8; BLCKSZ];
        let read = std::fs::File::open(pgdata.join(&b.path))
            .and_then(|f| f.read_exact_at(&mut page, b.offset()));
        if read.is_ok() && recman_page::verify_page(&page, b.block, checksums).is_err() {
            out.push(b);
        }
    }
    Ok(out)
}

/// Keeps what `validate database` found in `pgdata` as the corruption list of `ctx.db` (what
/// `recover corruption-list` repairs), when `pgdata` is that cluster's; false when it is not.
pub fn record_corruption(
    ctx: &Context,
    pgdata: &Path,
    blocks: &[recman_catalog::CorruptBlock],
) -> Result<bool, EngineError> {
    let facts = recman_pg::read_data_dir_facts(pgdata)?;
    if facts.system_identifier != ctx.db.system_identifier {
        return Ok(false);
    }
    ctx.repo.catalog().set_block_corruption(ctx.db.id, blocks)?;
    Ok(true)
}

fn list(blocks: &[BlockRef]) -> String {
    let all: Vec<String> = blocks.iter().map(|b| b.to_string()).collect();
    crate::util::cut_list(&all, ", ")
}

/// The cluster's facts when it is stopped cleanly; a refusal naming the blocks otherwise.
fn check_stopped(pgdata: &Path, names: &str) -> Result<recman_pg::DataDirFacts, EngineError> {
    let pidfile = pgdata.join("postmaster.pid");
    if let Ok(text) = std::fs::read_to_string(&pidfile)
        && let Some(pid) = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<i32>().ok())
        && pid > 0
        && Path::new(&format!("/proc/{pid}")).exists()
    {
        return Err(crate::refusal::Cluster::Running {
            pgdata: pgdata.display().to_string(),
            pid,
            blocks: names.to_string(),
        }
        .into());
    }
    let facts = recman_pg::read_data_dir_facts(pgdata)?;
    match facts.state.as_deref() {
        Some("shut down") => Ok(facts),
        state => Err(crate::refusal::Cluster::NotShutDownCleanly {
            pgdata: pgdata.display().to_string(),
            state: state.unwrap_or("unknown").to_string(),
            blocks: names.to_string(),
        }
        .into()),
    }
}

/// Copies block `b` from the recovered auxiliary copy into the cluster, then checks it there.
fn repair_block(
    ctx: &Context,
    pgdata: &Path,
    aux: &auxcopy::AuxCopy,
    b: &BlockRef,
    target: Lsn,
    facts: &recman_pg::DataDirFacts,
) -> Result<BlockRepair, EngineError> {
    let checksums = facts.checksums_enabled.unwrap_or(false);
    let src = aux.pgdata.join(&b.path);
    let mut page = vec![0u8; BLCKSZ];
    let f = std::fs::File::open(&src).map_err(|e| {
        EngineError::NotFound(format!(
            "block {b}: the recovered copy has no file {} ({e}); the block was left as it is; hint: the relation may have been dropped or truncated since, or restore the cluster whole",
            src.display()
        ))
    })?;
    f.read_exact_at(&mut page, b.offset()).map_err(|e| {
        EngineError::NotFound(format!(
            "block {b}: the recovered copy {} does not hold it ({e}); the block was left as it is; hint: the relation was truncated after the damage, or restore the cluster whole",
            src.display()
        ))
    })?;
    check_page(&page, b, checksums, "in the recovered copy")?;
    let lsn = recman_page::page_lsn(&page);
    if lsn > target.0 {
        return Err(EngineError::Corrupt(format!(
            "block {b}: the recovered page has lsn {}, past the cluster's checkpoint {target}; the block was left as it is; hint: restore the cluster whole",
            Lsn(lsn)
        )));
    }
    let dst = pgdata.join(&b.path);
    let out = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&dst)
        .map_err(|e| EngineError::io("open for writing", &dst, e))?;
    out.write_all_at(&page, b.offset())
        .and_then(|()| out.sync_data())
        .map_err(|e| EngineError::io("write", &dst, e))?;
    let mut back = vec![0u8; BLCKSZ];
    out.read_exact_at(&mut back, b.offset())
        .map_err(|e| EngineError::io("read back", &dst, e))?;
    if back != page {
        return Err(EngineError::Corrupt(format!(
            "block {b}: what was read back from {} differs from what was written; hint: check the device",
            dst.display()
        )));
    }
    check_page(&back, b, checksums, "after writing")?;
    let repair = BlockRepair {
        path: b.path.clone(),
        block: b.block,
        backup_id: aux.backup_id.clone(),
        page_lsn: lsn,
        recovered_to_lsn: target.0,
        repaired_at: chrono::Utc::now().timestamp_micros(),
    };
    ctx.repo.catalog().record_block_repair(ctx.db.id, &repair)?;
    Ok(repair)
}

fn check_page(page: &[u8], b: &BlockRef, checksums: bool, when: &str) -> Result<(), EngineError> {
    recman_page::verify_page(page, b.block, checksums).map_err(|fault| {
        EngineError::Corrupt(format!(
            "block {b} fails its check {when} ({fault}); the block was left as it is; hint: an older backup may hold a good image (`recman list backup`), or restore the cluster whole"
        ))
    })
}
