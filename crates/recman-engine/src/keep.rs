//! Archival backups (RMAN's KEEP FOREVER / KEEP UNTIL TIME): retention never removes them
//! while the keep lasts, nor the archived WAL from their start to their stop that makes them
//! consistent. The keep is a catalog setting per backup, so older catalogs need no migration.

use crate::error::EngineError;
use crate::retention_policy::{Obsolete, wal_position};
use recman_catalog::{BackupRecord, Repository};

fn key(backup_id: &str) -> String {
    format!("keep.{backup_id}")
}

/// Until when a backup is kept: None forever, Some(unix micros).
pub fn set_keep(repo: &Repository, backup_id: &str, until: Option<i64>) -> Result<(), EngineError> {
    let value = until.map_or_else(|| "forever".to_string(), |t| t.to_string());
    repo.catalog().set_config(&key(backup_id), &value)?;
    // In an immutable repository the keep is also a lock: the objects stay for as long.
    crate::immutable::extend_for_keep(repo, backup_id, until)?;
    Ok(())
}

/// True when the backup is kept at `now`.
pub fn is_kept(repo: &Repository, backup_id: &str, now: i64) -> Result<bool, EngineError> {
    Ok(match repo.catalog().config(&key(backup_id))?.as_deref() {
        None => false,
        Some("forever") => true,
        Some(t) => t.parse::<i64>().is_ok_and(|until| until > now),
    })
}

/// Moves kept backups out of `obs.backups` and their WAL out of `obs.wal`.
pub fn apply(
    repo: &Repository,
    backups: &[BackupRecord],
    obs: &mut Obsolete,
    now: i64,
) -> Result<(), EngineError> {
    let mut ranges = Vec::new();
    let mut kept_ids = Vec::new();
    for b in backups {
        if is_kept(repo, &b.id, now)? {
            let first = wal_position(&b.start_wal).unwrap_or(0);
            let last = b
                .stop_wal
                .as_deref()
                .and_then(wal_position)
                .unwrap_or(u64::MAX);
            ranges.push((first, last));
            kept_ids.push(b.id.clone());
        }
    }
    if kept_ids.is_empty() {
        return Ok(());
    }
    obs.backups.retain(|id| {
        if kept_ids.contains(id) {
            obs.kept.push(id.clone());
            false
        } else {
            true
        }
    });
    obs.wal.retain(|w| {
        wal_position(w).is_none_or(|p| !ranges.iter().any(|(f, l)| p >= *f && p <= *l))
    });
    Ok(())
}

fn unavailable_key(backup_id: &str) -> String {
    format!("unavailable.{backup_id}")
}

/// RMAN's CHANGE … KEEP FOREVER / NOKEEP on a backup already taken.
pub fn clear_keep(repo: &Repository, backup_id: &str) -> Result<(), EngineError> {
    repo.catalog().clear_config(&key(backup_id))?;
    Ok(())
}

/// RMAN's CHANGE … UNAVAILABLE / AVAILABLE: an unavailable backup (on a tape sent offsite, say)
/// stays in the catalog but restore never chooses it.
pub fn set_unavailable(
    repo: &Repository,
    backup_id: &str,
    unavailable: bool,
) -> Result<(), EngineError> {
    if unavailable {
        repo.catalog()
            .set_config(&unavailable_key(backup_id), "unavailable")?;
    } else {
        repo.catalog().clear_config(&unavailable_key(backup_id))?;
    }
    Ok(())
}

/// The ids of the backups marked unavailable.
pub fn unavailable_ids(repo: &Repository) -> Result<Vec<String>, EngineError> {
    Ok(repo
        .catalog()
        .config_all()?
        .into_iter()
        .filter_map(|(k, _)| k.strip_prefix("unavailable.").map(str::to_string))
        .collect())
}
