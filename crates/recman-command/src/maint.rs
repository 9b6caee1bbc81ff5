//! REPORT OBSOLETE and NEED BACKUP, CROSSCHECK and CATALOG START WITH, and the outcomes of
//! DELETE (whose work is in `delete.rs`): what each selects and removes is decided here; the
//! front end only shows the [`MaintOutcome`]s, in the order they happen, and asks the user
//! before anything is deleted ([`Env::confirm`]).

use crate::catalog::{CatalogWhat, CrosscheckWhat, PolicyOverride, ReportWhat};
use crate::clock::now_micros;
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::say::Say;
use recman_catalog::{BackupRecord, BackupStatus, PieceRecord, Repository};
use recman_engine::retention::{MICROS_PER_DAY, obsolete_in_catalog};
use recman_engine::{
    BackupCheck, Context, DeleteReport, EngineError, Imported, ObjectCheck, Obsolete,
    RebuildReport, RetentionPolicy,
};

/// An archived WAL file a listing names.
#[derive(Debug, Clone, PartialEq)]
pub struct WalItem {
    pub name: String,
    pub path: String,
    pub archived_at: i64,
}

/// The objects a retention policy no longer needs, with the pieces of each backup.
#[derive(Debug)]
pub struct ObsoleteReport {
    pub policy: RetentionPolicy,
    pub obsolete: Obsolete,
    /// Obsolete backups with their pieces (pieces left empty for a JSON report).
    pub backups: Vec<(BackupRecord, Vec<PieceRecord>)>,
    pub wal: Vec<WalItem>,
}

impl ObsoleteReport {
    pub fn is_empty(&self) -> bool {
        self.backups.is_empty() && self.wal.is_empty()
    }
}

/// Which command lists obsolete objects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ObsoleteFor {
    Report,
    Delete,
}

/// A database short of backups (REPORT NEED BACKUP): its name, the measure and what was
/// found (days of WAL recovery needs, or the number of full backups).
#[derive(Debug, Clone, PartialEq)]
pub struct NeedRow {
    pub db: String,
    /// The data directory, or "database" when none is registered.
    pub name: String,
}

/// How far the primary's standbys have got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replayed {
    /// The lowest position a standby replayed (pg_stat_replication) or a physical slot still
    /// holds (a standby disconnected now); None: no standby and no physical slot.
    pub position: Option<u64>,
    /// Standbys connected, and physical slots.
    pub standbys: u32,
    pub slots: u32,
}

#[derive(Debug)]
pub enum MaintOutcome {
    Obsolete {
        report: ObsoleteReport,
        purpose: ObsoleteFor,
        json: bool,
    },
    /// NEED BACKUP --drill-days: `line` says why a drill is due, None when one passed lately.
    NeedDrill {
        days: f64,
        db: String,
        line: Option<String>,
    },
    /// NEED BACKUP --days: `short` when recovery needs more days of WAL than `days` (`need`
    /// None: no backup at all).
    NeedDays {
        days: f64,
        short: Option<(NeedRow, Option<f64>)>,
    },
    /// NEED BACKUP by redundancy: `short` with the number of full backups when too few.
    NeedRedundancy {
        redundancy: u32,
        short: Option<(NeedRow, usize)>,
    },
    /// DELETE BACKUP: the backups about to go.
    BackupsToDelete(Vec<BackupRecord>),
    Deleted(DeleteReport),
    /// DELETE EXPIRED: the records about to go (empty: none found).
    ExpiredToDelete {
        backups: Vec<String>,
        wal: Vec<String>,
    },
    ExpiredDeleted {
        backups: usize,
        wal: usize,
    },
    /// DELETE ARCHIVELOG ALL: WAL no available backup needs (empty: none).
    UnneededWal(Vec<WalItem>),
    /// DELETE ARCHIVELOG under `applied-on-all-standby`: how far the standbys replayed, and
    /// the segments kept for them.
    KeptForStandbys {
        replayed: Replayed,
        kept: Vec<String>,
    },
    /// DELETE OBSOLETE on an object store: what one listing of the bucket changed in a cache
    /// that was behind it (`location` names the repository).
    Resynced {
        location: String,
        resync: recman_engine::Resync,
    },
    /// DELETE ARCHIVELOG ALL BACKED UP N TIMES: each file with its number of backups.
    BackedUpWal {
        times: u32,
        wal: Vec<(WalItem, u32)>,
    },
    CrosscheckedBackups(Vec<BackupCheck>),
    CrosscheckedWal(Vec<ObjectCheck>),
    /// CATALOG START WITH found its catalog missing or damaged and made a new one.
    CatalogCreated(std::path::PathBuf),
    /// CATALOG START WITH searches `location`/`start`*.
    CatalogSearching {
        location: String,
        start: String,
    },
    Cataloged(RebuildReport),
    /// CATALOG IMPORT (or START WITH on another tool's location): what was imported.
    Imported(recman_engine::import::ImportReport),
    /// CATALOG IMPORT --copy, per backup: what was copied; None when it was copied before.
    Copied {
        id: String,
        copied: Option<recman_engine::import::CopiedBackup>,
    },
}

/// The retention policy in force, or the command's own.
pub(crate) fn policy_for(
    ctx: &Context,
    e: &dyn Env,
    o: &PolicyOverride,
) -> Result<RetentionPolicy, ExecError> {
    Ok(match (o.redundancy, o.recovery_window) {
        (Some(n), _) => format!("redundancy {n}").parse()?,
        (None, Some(d)) => format!("recovery-window {d}").parse()?,
        (None, None) => {
            crate::settings::retention_policy(&ctx.repo, &env(e.config_file_settings())?)?
        }
    })
}

/// Whether retention counts imported backups, as the settings say now.
pub(crate) fn imported_for(ctx: &Context, e: &dyn Env) -> Result<Imported, ExecError> {
    Ok(crate::settings::imported_retention(
        &ctx.repo,
        &env(e.config_file_settings())?,
    )?)
}

/// What `policy` makes obsolete; `pieces`: also read each backup's pieces.
pub fn find_obsolete(
    ctx: &Context,
    policy: RetentionPolicy,
    imported: Imported,
    pieces: bool,
    now: i64,
) -> Result<ObsoleteReport, EngineError> {
    let (obs, backups, wal) = obsolete_in_catalog(&ctx.repo, ctx.db.id, policy, imported, now)?;
    let mut chosen = Vec::new();
    for b in backups.into_iter().filter(|b| obs.backups.contains(&b.id)) {
        let ps = if pieces {
            ctx.repo
                .catalog()
                .piece_states(&b.id)?
                .into_iter()
                .map(|(p, _)| p)
                .collect()
        } else {
            Vec::new()
        };
        chosen.push((b, ps));
    }
    let wal = wal
        .into_iter()
        .filter(|(w, _)| obs.wal.binary_search(&w.name).is_ok())
        .map(|(w, _)| WalItem {
            name: w.name,
            path: w.path,
            archived_at: w.archived_at,
        })
        .collect();
    Ok(ObsoleteReport {
        policy,
        obsolete: obs,
        backups: chosen,
        wal,
    })
}

/// REPORT OBSOLETE and NEED BACKUP (the others are the front end's or the server's).
pub fn report(
    what: ReportWhat,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    match what {
        ReportWhat::Obsolete { policy, json } => {
            let (policy, imported) = (policy_for(&ctx, e, &policy)?, imported_for(&ctx, e)?);
            let report = find_obsolete(&ctx, policy, imported, !json, now_micros())?;
            p.say(MaintOutcome::Obsolete {
                report,
                purpose: ObsoleteFor::Report,
                json,
            });
        }
        ReportWhat::NeedBackup {
            redundancy,
            days,
            drill_days,
        } => need_backup(&ctx, e, p, redundancy, days, drill_days)?,
        _ => unreachable!("only OBSOLETE and NEED BACKUP come here"),
    }
    Ok(())
}

fn need_backup(
    ctx: &Context,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
    redundancy: Option<u32>,
    days: Option<f64>,
    drill_days: Option<f64>,
) -> Result<(), ExecError> {
    let cat = ctx.repo.catalog();
    if let Some(d) = drill_days {
        let recs = cat.drills(ctx.db.id).map_err(EngineError::from)?;
        p.say(MaintOutcome::NeedDrill {
            days: d,
            db: ctx.db.name.clone(),
            line: crate::drill::drill_need(&recs, d, now_micros()),
        });
        if redundancy.is_none() && days.is_none() {
            return Ok(());
        }
    }
    let avail: Vec<BackupRecord> = cat
        .backups(ctx.db.id)
        .map_err(EngineError::from)?
        .into_iter()
        .filter(|b| b.status == BackupStatus::Available)
        .collect();
    let row = || NeedRow {
        db: ctx.db.name.clone(),
        name: if ctx.db.pgdata.is_empty() {
            "database".to_string()
        } else {
            ctx.db.pgdata.clone()
        },
    };
    if let Some(d) = days {
        let newest = avail.iter().filter_map(|b| b.stop_time).max();
        let need = newest.map(|t| (now_micros() - t) as f64 / MICROS_PER_DAY as f64);
        let short = need.is_none_or(|n| n > d).then(|| (row(), need));
        p.say(MaintOutcome::NeedDays { days: d, short });
    } else {
        let r = match redundancy {
            Some(r) => r,
            None => {
                match crate::settings::retention_policy(&ctx.repo, &env(e.config_file_settings())?)?
                {
                    RetentionPolicy::Redundancy(r) => r,
                    _ => 1,
                }
            }
        };
        let n = avail.iter().filter(|b| b.backup_type == "FULL").count();
        let short = (n < r as usize).then(|| (row(), n));
        p.say(MaintOutcome::NeedRedundancy {
            redundancy: r,
            short,
        });
    }
    Ok(())
}

pub fn crosscheck(
    what: CrosscheckWhat,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let _lock = ctx.repo.lock("crosscheck").map_err(EngineError::from)?;
    match what {
        CrosscheckWhat::Backup { verify } => {
            let r = recman_engine::crosscheck_backups(&ctx.repo, &ctx.db, verify)?;
            crate::failures::learn(&ctx, e, &[crate::failures::kind::Kind::PieceMissing]);
            p.say(MaintOutcome::CrosscheckedBackups(r));
        }
        CrosscheckWhat::Archivelog { verify, .. } => {
            let r = recman_engine::crosscheck_wal(&ctx.repo, &ctx.db, verify)?;
            p.say(MaintOutcome::CrosscheckedWal(r));
        }
    }
    Ok(())
}

pub fn catalog(
    what: CatalogWhat,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let path = match what {
        CatalogWhat::StartWith { path } => path,
        CatalogWhat::Import {
            location,
            stanza,
            pgbackrest_config,
            copy,
        } => {
            let opts = recman_engine::import::ImportOptions {
                location,
                stanza,
                pgbackrest_config,
                db_name: e.database(),
            };
            return import(&opts, copy, e, p);
        }
    };
    // START WITH naming another tool's backups (outside the repository) imports them.
    if let Some(loc) = path.as_deref().filter(|l| is_foreign_location(e, l)) {
        let opts = recman_engine::import::ImportOptions {
            location: loc.to_path_buf(),
            db_name: e.database(),
            ..Default::default()
        };
        return import(&opts, false, e, p);
    }
    let (repo, created) = env(e.repository_for_rebuild())?;
    let _lock = repo.lock("catalog start-with").map_err(EngineError::from)?;
    let start = match path {
        Some(p) => start_prefix(&repo, &p)?,
        None => String::new(),
    };
    if created {
        p.say(MaintOutcome::CatalogCreated(
            repo.catalog().path().to_path_buf(),
        ));
    }
    p.say(MaintOutcome::CatalogSearching {
        location: repo.location().to_string(),
        start: start.clone(),
    });
    let r = recman_engine::rebuild_catalog(&repo, &start)?;
    let skipped = r.skipped.len();
    p.say(MaintOutcome::Cataloged(r));
    if skipped > 0 {
        return Err(ExecError::NotCataloged(skipped));
    }
    Ok(())
}

/// Whether a START WITH path is another tool's backups rather than a place in the repository:
/// an existing path outside a disk repository that holds pgBackRest's or pg_basebackup's
/// files.
fn is_foreign_location(e: &dyn Env, p: &std::path::Path) -> bool {
    let Some(root) = e.repository_root() else {
        return false;
    };
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    abs.exists()
        && !abs.starts_with(&root)
        && (abs.is_file()
            || abs.join("backup_manifest").is_file()
            || abs.join("backup").is_dir()
            || abs.join("backup.info").is_file()
            || abs.join("archive.info").is_file())
}

/// CATALOG IMPORT: records the backups and WAL archive at `opts.location`, read in place;
/// with `copy`, then brings each into recman's format.
fn import(
    opts: &recman_engine::import::ImportOptions,
    copy: bool,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let repo = env(e.repository())?;
    let lock = repo.lock("catalog import").map_err(EngineError::from)?;
    let r = recman_engine::import::import(&repo, opts)?;
    let (ids, db_name) = (r.backups.clone(), r.database.clone());
    p.say(MaintOutcome::Imported(r));
    if !copy {
        return Ok(());
    }
    let db = repo
        .catalog()
        .database(&db_name)
        .map_err(EngineError::from)?
        .ok_or_else(|| EngineError::NotFound(format!("database {db_name} is not registered")))?;
    // The copy needs a context of its own; the lock above stays held until it is done.
    let ctx = Context {
        repo: env(e.repository())?,
        db,
        pgdata: None,
        conninfo: None,
        tls: None,
    };
    // Newest first: an imported incremental reads the backups under it through their origin.
    for b in ids.iter().rev() {
        let c = recman_engine::import::copy_imported(&ctx, &b.id, e.progress())?;
        p.say(MaintOutcome::Copied {
            id: b.id.clone(),
            copied: c,
        });
    }
    drop(lock);
    Ok(())
}

/// The object-name prefix a START WITH path means: a path inside a disk repository, or a
/// name prefix relative to the repository (the only form a remote repository takes).
fn start_prefix(repo: &Repository, p: &std::path::Path) -> Result<String, ExecError> {
    if repo.is_remote() || !p.is_absolute() && !p.exists() {
        return Ok(p.to_string_lossy().trim_start_matches('/').to_string());
    }
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| ExecError::Env(Box::new(e)))?
            .join(p)
    };
    match abs.strip_prefix(repo.root()) {
        Ok(rel) => Ok(rel.to_string_lossy().into_owned()),
        Err(_) => Err(EngineError::Invalid(format!(
            "{} is not inside repository {}; hint: give a directory of the repository, or the repository itself",
            abs.display(),
            repo.location()
        ))
        .into()),
    }
}
