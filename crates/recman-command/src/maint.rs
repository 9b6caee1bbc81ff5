//! REPORT OBSOLETE and NEED BACKUP, DELETE, CROSSCHECK and CATALOG START WITH: what each
//! selects and removes is decided here; the front end only shows the [`MaintOutcome`]s, in
//! the order they happen, and asks the user before anything is deleted
//! ([`crate::Env::confirm`]).

use crate::execute::{Env, ExecError, Outcome, Printer, env};
use crate::{CatalogWhat, CrosscheckWhat, DeleteWhat, PolicyOverride, ReportWhat};
use recman_catalog::{BackupRecord, BackupStatus, MediaStatus, PieceRecord, Repository};
use recman_engine::retention::{MICROS_PER_DAY, obsolete_in_catalog};
use recman_engine::{
    BackupCheck, Context, DeleteReport, EngineError, ObjectCheck, Obsolete, RebuildReport,
    RetentionPolicy,
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
}

fn out(p: &mut dyn Printer, o: MaintOutcome) {
    p.outcome(Outcome::Maint(o));
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// The retention policy in force, or the command's own.
fn policy_for(
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

/// What `policy` makes obsolete; `pieces`: also read each backup's pieces.
pub fn find_obsolete(
    ctx: &Context,
    policy: RetentionPolicy,
    pieces: bool,
    now: i64,
) -> Result<ObsoleteReport, EngineError> {
    let (obs, backups, wal) = obsolete_in_catalog(&ctx.repo, ctx.db.id, policy, now)?;
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
pub fn report(what: ReportWhat, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    match what {
        ReportWhat::Obsolete { policy, json } => {
            let report = find_obsolete(&ctx, policy_for(&ctx, e, &policy)?, !json, now())?;
            out(
                p,
                MaintOutcome::Obsolete {
                    report,
                    purpose: ObsoleteFor::Report,
                    json,
                },
            );
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
    p: &mut dyn Printer,
    redundancy: Option<u32>,
    days: Option<f64>,
    drill_days: Option<f64>,
) -> Result<(), ExecError> {
    let cat = ctx.repo.catalog();
    if let Some(d) = drill_days {
        let recs = cat.drills(ctx.db.id).map_err(EngineError::from)?;
        out(
            p,
            MaintOutcome::NeedDrill {
                days: d,
                db: ctx.db.name.clone(),
                line: crate::drill::drill_need(&recs, d, now()),
            },
        );
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
        let need = newest.map(|t| (now() - t) as f64 / MICROS_PER_DAY as f64);
        let short = need.is_none_or(|n| n > d).then(|| (row(), need));
        out(p, MaintOutcome::NeedDays { days: d, short });
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
        out(
            p,
            MaintOutcome::NeedRedundancy {
                redundancy: r,
                short,
            },
        );
    }
    Ok(())
}

fn delete_wal(ctx: &Context, wal: &[WalItem]) -> Result<DeleteReport, EngineError> {
    let wal: Vec<(String, String)> = wal
        .iter()
        .map(|w| (w.name.clone(), w.path.clone()))
        .collect();
    recman_engine::retention::delete_objects(&ctx.repo, ctx.db.id, &ctx.db.name, &[], &wal)
}

pub fn delete(what: DeleteWhat, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let _lock = ctx.repo.lock("delete").map_err(EngineError::from)?;
    let cat = ctx.repo.catalog();
    match what {
        DeleteWhat::Obsolete { policy, noprompt } => {
            let resumed = recman_engine::retention::finish_pending(&ctx.repo)?;
            let f = find_obsolete(&ctx, policy_for(&ctx, e, &policy)?, true, now())?;
            let empty = f.is_empty();
            let (backups, wal) = (f.obsolete.backups.clone(), f.wal.clone());
            out(
                p,
                MaintOutcome::Obsolete {
                    report: f,
                    purpose: ObsoleteFor::Delete,
                    json: false,
                },
            );
            if empty || !env(e.confirm(noprompt, "obsolete backups"))? {
                return Ok(());
            }
            let wal: Vec<(String, String)> = wal.into_iter().map(|w| (w.name, w.path)).collect();
            let mut r = recman_engine::retention::delete_objects(
                &ctx.repo,
                ctx.db.id,
                &ctx.db.name,
                &backups,
                &wal,
            )?;
            r.resumed += resumed;
            out(p, MaintOutcome::Deleted(r));
        }
        DeleteWhat::Backup { which, noprompt } => {
            let mut chosen: Vec<BackupRecord> =
                match cat.backup(&which).map_err(EngineError::from)? {
                    Some(b) if b.db_id == ctx.db.id => vec![b],
                    _ => cat
                        .backup_by_tag(ctx.db.id, &which)
                        .map_err(EngineError::from)?,
                };
            if chosen.is_empty() {
                return Err(EngineError::NotFound(format!(
                    "no backup of database {} has id or tag {which:?}; hint: `recman list backup` shows them",
                    ctx.db.name
                ))
                .into());
            }
            if let Some(b) = chosen.iter().find(|b| b.status == BackupStatus::Running) {
                return Err(EngineError::Busy(format!(
                    "backup {} is still running; hint: wait for it to end",
                    b.id
                ))
                .into());
            }
            chosen.sort_by(|a, b| a.id.cmp(&b.id));
            let ids: Vec<String> = chosen.iter().map(|b| b.id.clone()).collect();
            out(p, MaintOutcome::BackupsToDelete(chosen));
            if !env(e.confirm(noprompt, "backups"))? {
                return Ok(());
            }
            let r = recman_engine::retention::delete_objects(
                &ctx.repo,
                ctx.db.id,
                &ctx.db.name,
                &ids,
                &[],
            )?;
            out(p, MaintOutcome::Deleted(r));
        }
        DeleteWhat::Expired { noprompt } => {
            recman_engine::retention::finish_pending(&ctx.repo)?;
            let backups: Vec<String> = cat
                .backups(ctx.db.id)
                .map_err(EngineError::from)?
                .into_iter()
                .filter(|b| b.status == BackupStatus::Expired)
                .map(|b| b.id)
                .collect();
            let wal: Vec<String> = cat
                .wal_states(ctx.db.id)
                .map_err(EngineError::from)?
                .into_iter()
                .filter(|(_, s)| *s == MediaStatus::Expired)
                .map(|(w, _)| w.name)
                .collect();
            let empty = backups.is_empty() && wal.is_empty();
            out(
                p,
                MaintOutcome::ExpiredToDelete {
                    backups: backups.clone(),
                    wal: wal.clone(),
                },
            );
            if empty || !env(e.confirm(noprompt, "expired records"))? {
                return Ok(());
            }
            let (nb, nw) = cat
                .delete_expired_records(ctx.db.id, &backups, &wal)
                .map_err(EngineError::from)?;
            out(
                p,
                MaintOutcome::ExpiredDeleted {
                    backups: nb,
                    wal: nw,
                },
            );
        }
        DeleteWhat::Archivelog {
            which: _,
            backed_up,
            noprompt,
        } => {
            recman_engine::retention::finish_pending(&ctx.repo)?;
            if let Some(n) = backed_up {
                return delete_backed_up(&ctx, n, noprompt, e, p);
            }
            // WAL no AVAILABLE backup needs: as if every available backup were kept.
            let keep_all = RetentionPolicy::Redundancy(u32::MAX);
            let f = find_obsolete(&ctx, keep_all, false, now())?;
            out(p, MaintOutcome::UnneededWal(f.wal.clone()));
            if f.wal.is_empty() || !env(e.confirm(noprompt, "archived logs"))? {
                return Ok(());
            }
            out(p, MaintOutcome::Deleted(delete_wal(&ctx, &f.wal)?));
        }
    }
    Ok(())
}

/// Archived segments held by at least `n` available backups. Safe for recovery because
/// archive-get reads them from those backups. Timeline history files stay: recovery asks for
/// them first, and they are tiny. Called under the repository lock.
fn delete_backed_up(
    ctx: &Context,
    n: u32,
    noprompt: bool,
    e: &dyn Env,
    p: &mut dyn Printer,
) -> Result<(), ExecError> {
    if n == 0 {
        return Err(EngineError::Invalid(
            "--backed-up must be at least 1; hint: `delete archivelog all` without it removes the wal no available backup needs".into(),
        )
        .into());
    }
    let cat = ctx.repo.catalog();
    let counts = cat
        .wal_backup_counts(ctx.db.id)
        .map_err(EngineError::from)?;
    let chosen: Vec<(WalItem, u32)> = cat
        .wal_states(ctx.db.id)
        .map_err(EngineError::from)?
        .into_iter()
        .filter(|(w, st)| {
            *st == MediaStatus::Available
                && !w.name.ends_with(".history")
                && counts.get(&w.name).copied().unwrap_or(0) >= n
        })
        .map(|(w, _)| {
            let c = counts.get(&w.name).copied().unwrap_or(0);
            let item = WalItem {
                name: w.name,
                path: w.path,
                archived_at: w.archived_at,
            };
            (item, c)
        })
        .collect();
    let wal: Vec<WalItem> = chosen.iter().map(|(w, _)| w.clone()).collect();
    out(
        p,
        MaintOutcome::BackedUpWal {
            times: n,
            wal: chosen,
        },
    );
    if wal.is_empty() || !env(e.confirm(noprompt, "archived logs"))? {
        return Ok(());
    }
    out(p, MaintOutcome::Deleted(delete_wal(ctx, &wal)?));
    Ok(())
}

pub fn crosscheck(what: CrosscheckWhat, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let _lock = ctx.repo.lock("crosscheck").map_err(EngineError::from)?;
    match what {
        CrosscheckWhat::Backup { verify } => {
            let r = recman_engine::crosscheck_backups(&ctx.repo, &ctx.db, verify)?;
            out(p, MaintOutcome::CrosscheckedBackups(r));
        }
        CrosscheckWhat::Archivelog { verify, .. } => {
            let r = recman_engine::crosscheck_wal(&ctx.repo, &ctx.db, verify)?;
            out(p, MaintOutcome::CrosscheckedWal(r));
        }
    }
    Ok(())
}

pub fn catalog(what: CatalogWhat, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    let CatalogWhat::StartWith { path } = what;
    let (repo, created) = env(e.repository_for_rebuild())?;
    let _lock = repo.lock("catalog start-with").map_err(EngineError::from)?;
    let start = match path {
        Some(p) => start_prefix(&repo, &p)?,
        None => String::new(),
    };
    if created {
        out(
            p,
            MaintOutcome::CatalogCreated(repo.catalog().path().to_path_buf()),
        );
    }
    out(
        p,
        MaintOutcome::CatalogSearching {
            location: repo.location().to_string(),
            start: start.clone(),
        },
    );
    let r = recman_engine::rebuild_catalog(&repo, &start)?;
    let skipped = r.skipped.len();
    out(p, MaintOutcome::Cataloged(r));
    if skipped > 0 {
        return Err(ExecError::NotCataloged(skipped));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Command;
    use crate::execute::{EnvError, Executed, execute};
    use std::path::PathBuf;

    /// A disk repository with one registered database; `yes` answers the prompt.
    struct Repo {
        root: PathBuf,
        yes: bool,
    }

    impl Env for Repo {
        fn context(&self) -> Result<Context, EnvError> {
            let repo = Repository::open(&self.root)?;
            let db = repo.catalog().database("db")?.expect("registered");
            Ok(Context {
                repo,
                db,
                pgdata: None,
                conninfo: None,
            })
        }
        fn repository(&self) -> Result<Repository, EnvError> {
            Ok(Repository::open(&self.root)?)
        }
        fn pgdata(&self) -> Option<PathBuf> {
            None
        }
        fn target(&self) -> Option<String> {
            None
        }
        fn restore_invocation(
            &self,
            _: &Repository,
        ) -> Result<(PathBuf, PathBuf, Vec<String>), EnvError> {
            unreachable!("no restore here")
        }
        fn progress(&self) -> &dyn recman_engine::Progress {
            &recman_engine::NoProgress
        }
        fn confirm(&self, noprompt: bool, _: &str) -> Result<bool, EnvError> {
            Ok(noprompt || self.yes)
        }
    }

    #[derive(Default)]
    struct Seen(Vec<MaintOutcome>);

    impl Printer for Seen {
        fn outcome(&mut self, o: Outcome) {
            match o {
                Outcome::Maint(m) => self.0.push(m),
                other => panic!("unexpected outcome {other:?}"),
            }
        }
    }

    fn full(id: &str, db_id: i64, at: i64) -> BackupRecord {
        BackupRecord {
            id: id.into(),
            db_id,
            tag: id.to_uppercase(),
            backup_type: "FULL".into(),
            status: BackupStatus::Available,
            start_lsn: at as u64,
            stop_lsn: Some(at as u64 + 1),
            timeline: 1,
            start_wal: "000000010000000000000001".into(),
            stop_wal: Some("000000010000000000000001".into()),
            start_time: at,
            stop_time: Some(at + 1),
            stop_next_xid: None,
            db_bytes: 0,
            written_bytes: 0,
            file_count: 0,
            channels: 1,
            compression: "none".into(),
            filesperset: 64,
            maxopenfiles: 8,
            pid: 0,
            host: String::new(),
            error: None,
        }
    }

    /// DELETE OBSOLETE under REDUNDANCY 1 lists the two older of three full backups, removes
    /// nothing when the answer is no, and removes exactly those two when it is yes.
    #[test]
    fn delete_obsolete_lists_then_removes_only_after_yes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let repo = Repository::create(&root).unwrap();
        let db = repo
            .catalog()
            .register_database("db", 7, 150000, "/pgdata")
            .unwrap();
        for (i, id) in ["b1", "b2", "b3"].iter().enumerate() {
            repo.catalog()
                .insert_backup(&full(id, db.id, 1_000_000 * (i as i64 + 1)))
                .unwrap();
        }
        drop(repo);
        let delete = Command::Delete(DeleteWhat::Obsolete {
            policy: PolicyOverride {
                redundancy: Some(1),
                recovery_window: None,
            },
            noprompt: false,
        });
        let ids = |env: &Repo| -> Vec<String> {
            let ctx = env.context().unwrap();
            let mut v: Vec<String> = ctx
                .repo
                .catalog()
                .backups(ctx.db.id)
                .unwrap()
                .into_iter()
                .map(|b| b.id)
                .collect();
            v.sort();
            v
        };

        let no = Repo {
            root: root.clone(),
            yes: false,
        };
        let mut seen = Seen::default();
        assert_eq!(
            execute(delete.clone(), &no, &mut seen).unwrap(),
            Executed::Done
        );
        let [MaintOutcome::Obsolete { report, .. }] = seen.0.as_slice() else {
            panic!("{:?}", seen.0)
        };
        let listed: Vec<&str> = report.backups.iter().map(|(b, _)| b.id.as_str()).collect();
        assert_eq!(listed, ["b1", "b2"]);
        assert_eq!(ids(&no), ["b1", "b2", "b3"], "a no deletes nothing");

        let yes = Repo { root, yes: true };
        let mut seen = Seen::default();
        execute(delete, &yes, &mut seen).unwrap();
        let Some(MaintOutcome::Deleted(r)) = seen.0.last() else {
            panic!("{:?}", seen.0)
        };
        let mut gone = r.backups.clone();
        gone.sort();
        assert_eq!(gone, ["b1", "b2"]);
        assert_eq!(ids(&yes), ["b3"]);
    }
}
