//! Retention meets Object Lock in an immutable repository (docs/immutable.md): how long new
//! objects are locked, what a lock still holds when retention would delete, and CHANGE … KEEP
//! extending the locks of a backup.

use chrono::{DateTime, Duration, Utc};
use recman_catalog::Repository;
use recman_media::Retention;

use crate::error::EngineError;
use crate::retention_policy::{RetentionPolicy, wal_position};

/// How far ahead KEEP FOREVER locks: Object Lock has no "forever", and a century outlives
/// any backup that matters.
const FOREVER_YEARS: i64 = 100;

/// One object a lock keeps from being deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldObject {
    /// The backup id or WAL file name the object belongs to.
    pub owner: String,
    pub object: String,
    pub retention: Retention,
}

/// Sets the retention of every object this process writes: the repository's minimum, or the
/// recovery window of the catalog's retention policy when that is longer, since a backup is
/// needed at least for the window after it was taken. Extends the marker's lock as far.
pub fn arm(repo: &Repository) -> Result<Option<Retention>, EngineError> {
    if repo.immutable().is_none() {
        return Ok(None);
    }
    let policy = match repo.catalog().config("retention-policy")? {
        Some(p) => p.parse().unwrap_or_default(),
        None => RetentionPolicy::default(),
    };
    let window = match policy {
        RetentionPolicy::RecoveryWindow { micros } => Duration::microseconds(micros),
        _ => Duration::zero(),
    };
    Ok(repo.lock_writes_until(Utc::now() + window)?)
}

/// Until when a backup's objects are locked: the lock on its manifest, which is written last
/// with the same retention as its pieces and extended with them.
pub fn backup_lock(
    repo: &Repository,
    db_name: &str,
    backup_id: &str,
) -> Result<Option<Retention>, EngineError> {
    if repo.immutable().is_none() {
        return Ok(None);
    }
    let rel = recman_catalog::layout::manifest(db_name, backup_id);
    Ok(repo.retention_of(&rel)?)
}

/// The objects of the backups and WAL files about to be deleted that a lock still holds at
/// `now`. Owners with a held object are kept whole: a backup with a locked piece is not
/// half deleted.
pub fn held_objects(
    repo: &Repository,
    db_name: &str,
    backups: &[String],
    wal: &[(String, String)],
    now: DateTime<Utc>,
) -> Result<Vec<HeldObject>, EngineError> {
    let mut held = Vec::new();
    if repo.immutable().is_none() {
        return Ok(held);
    }
    let mut check = |owner: &str, object: String| -> Result<(), EngineError> {
        if let Some(r) = repo.retention_of(&object)?
            && r.holds_at(now)
        {
            held.push(HeldObject {
                owner: owner.to_string(),
                object,
                retention: r,
            });
        }
        Ok(())
    };
    for id in backups {
        let dir = format!("{}/", recman_catalog::layout::backup_dir(db_name, id));
        for o in repo.list_objects(&dir)? {
            check(id, o.name)?;
        }
    }
    for (name, path) in wal {
        check(name, path.clone())?;
    }
    Ok(held)
}

/// CHANGE … KEEP (and BACKUP … KEEP) in an immutable repository: every object of the backup,
/// and the archived WAL from its start to its stop that makes it consistent, locked until
/// `until` (unix micros; None: forever).
pub fn extend_for_keep(
    repo: &Repository,
    backup_id: &str,
    until: Option<i64>,
) -> Result<usize, EngineError> {
    let Some(spec) = repo.immutable() else {
        return Ok(0);
    };
    let cat = repo.catalog();
    let Some(b) = cat.backup(backup_id)? else {
        return Ok(0);
    };
    let Some(db) = cat.databases()?.into_iter().find(|d| d.id == b.db_id) else {
        return Ok(0);
    };
    let until = match until {
        Some(micros) => DateTime::from_timestamp_micros(micros).unwrap_or_else(Utc::now),
        None => Utc::now() + Duration::days(365 * FOREVER_YEARS),
    };
    let r = Retention {
        mode: spec.mode,
        until,
    };
    let mut objects: Vec<String> = repo
        .list_objects(&format!(
            "{}/",
            recman_catalog::layout::backup_dir(&db.name, backup_id)
        ))?
        .into_iter()
        .map(|o| o.name)
        .collect();
    let (from, to) = (
        wal_position(&b.start_wal),
        b.stop_wal.as_deref().and_then(wal_position),
    );
    if let (Some(from), Some(to)) = (from, to) {
        for (w, _) in cat.wal_states(db.id)? {
            if wal_position(&w.name).is_some_and(|p| p >= from && p <= to) {
                objects.push(w.path);
            }
        }
    }
    for o in &objects {
        repo.extend_retention(o, r)?;
    }
    Ok(objects.len())
}
