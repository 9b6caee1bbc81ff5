//! DELETE OBSOLETE / EXPIRED / BACKUP / ARCHIVELOG: what each selects, shown to the printer
//! before the front end is asked ([`Env::confirm`]), then removed under the repository
//! lock.

use crate::catalog::{DeleteWhat, PolicyOverride};
use crate::clock::now_micros;
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::maint::{MaintOutcome, ObsoleteFor, WalItem, find_obsolete, imported_for, policy_for};
use crate::say::Say;
use recman_catalog::{BackupRecord, BackupStatus, MediaStatus};
use recman_engine::{Context, DeleteReport, EngineError, Imported, RetentionPolicy};

fn delete_wal(ctx: &Context, wal: &[WalItem]) -> Result<DeleteReport, EngineError> {
    let wal: Vec<(String, String)> = wal
        .iter()
        .map(|w| (w.name.clone(), w.path.clone()))
        .collect();
    recman_engine::retention::delete_objects(&ctx.repo, ctx.db.id, &ctx.db.name, &[], &wal)
}

/// DELETE under the repository lock: each kind selects, shows what it selected, asks, then
/// removes.
pub fn delete(
    what: DeleteWhat,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let _lock = ctx.repo.lock("delete").map_err(EngineError::from)?;
    match what {
        DeleteWhat::Obsolete { policy, noprompt } => obsolete(&ctx, &policy, noprompt, e, p),
        DeleteWhat::Backup { which, noprompt } => backups(&ctx, &which, noprompt, e, p),
        DeleteWhat::Expired { noprompt } => expired(&ctx, noprompt, e, p),
        DeleteWhat::Archivelog {
            which: _,
            backed_up,
            noprompt,
        } => {
            recman_engine::retention::finish_pending(&ctx.repo)?;
            let wal = archivelog_to_delete(&ctx, backed_up, e, p)?;
            if wal.is_empty() || !env(e.confirm(noprompt, "archived logs"))? {
                return Ok(());
            }
            p.say(MaintOutcome::Deleted(delete_wal(&ctx, &wal)?));
            Ok(())
        }
    }
}

/// DELETE OBSOLETE: what the retention policy no longer needs, counted on what the
/// repository holds now.
fn obsolete(
    ctx: &Context,
    policy: &PolicyOverride,
    noprompt: bool,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let resumed = recman_engine::retention::finish_pending(&ctx.repo)?;
    // Another host may have deleted or written backups since this cache last read the
    // bucket: retention must count what is there, not what the cache remembers.
    let resync = recman_engine::resync_backups(&ctx.repo, &ctx.db)?;
    if resync != Default::default() {
        let location = ctx.repo.location().to_string();
        p.say(MaintOutcome::Resynced { location, resync });
    }
    let (policy, imported) = (policy_for(ctx, e, policy)?, imported_for(ctx, e)?);
    let f = find_obsolete(ctx, policy, imported, true, now_micros())?;
    let empty = f.is_empty();
    let (backups, wal) = (f.obsolete.backups.clone(), f.wal.clone());
    p.say(MaintOutcome::Obsolete {
        report: f,
        purpose: ObsoleteFor::Delete,
        json: false,
    });
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
    p.say(MaintOutcome::Deleted(r));
    Ok(())
}

/// DELETE BACKUP: the backups whose id or tag is `which`.
fn backups(
    ctx: &Context,
    which: &str,
    noprompt: bool,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let cat = ctx.repo.catalog();
    let mut chosen: Vec<BackupRecord> = match cat.backup(which).map_err(EngineError::from)? {
        Some(b) if b.db_id == ctx.db.id => vec![b],
        _ => cat
            .backup_by_tag(ctx.db.id, which)
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
    p.say(MaintOutcome::BackupsToDelete(chosen));
    if !env(e.confirm(noprompt, "backups"))? {
        return Ok(());
    }
    let r =
        recman_engine::retention::delete_objects(&ctx.repo, ctx.db.id, &ctx.db.name, &ids, &[])?;
    p.say(MaintOutcome::Deleted(r));
    Ok(())
}

/// DELETE EXPIRED: the catalog's records of what a crosscheck found gone.
fn expired(
    ctx: &Context,
    noprompt: bool,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let cat = ctx.repo.catalog();
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
    p.say(MaintOutcome::ExpiredToDelete {
        backups: backups.clone(),
        wal: wal.clone(),
    });
    if empty || !env(e.confirm(noprompt, "expired records"))? {
        return Ok(());
    }
    let (nb, nw) = cat
        .delete_expired_records(ctx.db.id, &backups, &wal)
        .map_err(EngineError::from)?;
    p.say(MaintOutcome::ExpiredDeleted {
        backups: nb,
        wal: nw,
    });
    Ok(())
}

/// DELETE ARCHIVELOG's choice, shown as it is made: the segments that may go.
fn archivelog_to_delete(
    ctx: &Context,
    backed_up: Option<u32>,
    e: &dyn Env,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<Vec<WalItem>, ExecError> {
    // RMAN's ARCHIVELOG DELETION POLICY: without --backed-up, the configured
    // `backed-up N times` decides which segments may go; `applied-on-all-standby`
    // keeps what a standby has not replayed, whichever chose them.
    let file = env(e.config_file_settings())?;
    let all = crate::settings::resolve_all(&ctx.repo, &file)?;
    let policy = crate::settings::setting(&all, "archivelog-deletion-policy");
    let policy = crate::settings::DeletionPolicy::parse(&policy).unwrap_or_default();
    let replayed = match policy.all_standby {
        true => Some(crate::standby_hold::replayed(ctx)?),
        false => None,
    };
    let wal = match backed_up.or(policy.copies) {
        Some(n) => backed_up_wal(ctx, n, p)?,
        None => {
            // WAL no AVAILABLE backup needs: as if every available backup were kept.
            let keep_all = RetentionPolicy::Redundancy(u32::MAX);
            let f = find_obsolete(ctx, keep_all, Imported::Kept, false, now_micros())?;
            p.say(MaintOutcome::UnneededWal(f.wal.clone()));
            f.wal
        }
    };
    Ok(match replayed {
        Some(r) => hold_for_standbys(ctx, wal, r, p)?,
        None => wal,
    })
}

/// Of `wal`, what every standby has replayed; the rest is named to the printer as kept.
fn hold_for_standbys(
    ctx: &Context,
    wal: Vec<WalItem>,
    replayed: crate::maint::Replayed,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<Vec<WalItem>, ExecError> {
    let sizes = ctx
        .repo
        .catalog()
        .wal_list(ctx.db.id)
        .map_err(EngineError::from)?
        .into_iter()
        .map(|w| (w.name, w.size))
        .collect();
    let (go, kept) = crate::standby_hold::hold(wal, &replayed, &sizes);
    p.say(MaintOutcome::KeptForStandbys { replayed, kept });
    Ok(go)
}

/// Archived segments held by at least `n` available backups. Safe for recovery because
/// archive-get reads them from those backups. Timeline history files stay: recovery asks for
/// them first, and they are tiny. Called under the repository lock.
fn backed_up_wal(
    ctx: &Context,
    n: u32,
    p: &mut (impl Say<MaintOutcome> + ?Sized),
) -> Result<Vec<WalItem>, ExecError> {
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
    p.say(MaintOutcome::BackedUpWal {
        times: n,
        wal: chosen,
    });
    Ok(wal)
}

#[cfg(test)]
#[path = "delete_tests.rs"]
mod tests;
