//! Retention (RMAN's CONFIGURE RETENTION POLICY, REPORT/DELETE OBSOLETE): which backups and
//! archived WAL a policy no longer needs, as a pure function over catalog facts, and the
//! deletion of what it names (media first, then records, through the catalog's journal).
//!
//! A WAL position is the last 16 hex digits of a segment name (log, segment): they order
//! segments by LSN whatever the segment size and timeline, and recovery from a backup reads
//! only segments at or after the one holding its start LSN. So once the kept backups are
//! known, every segment before the oldest kept start is unneeded, on every timeline.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use recman_catalog::{
    BackupRecord, BackupStatus, DeleteKind, MediaStatus, PendingDelete, Repository, WalRecord,
};

use crate::EngineError;

pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A retention policy. The recovery window is kept in microseconds: the command line takes
/// days, fractions allowed (RMAN takes whole days only; fractions make short windows testable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetentionPolicy {
    None,
    Redundancy(u32),
    RecoveryWindow { micros: i64 },
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        RetentionPolicy::Redundancy(1)
    }
}

impl fmt::Display for RetentionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetentionPolicy::None => f.write_str("none"),
            RetentionPolicy::Redundancy(n) => write!(f, "redundancy {n}"),
            RetentionPolicy::RecoveryWindow { micros } => {
                let days = *micros as f64 / MICROS_PER_DAY as f64;
                write!(f, "recovery-window {days}")
            }
        }
    }
}

impl FromStr for RetentionPolicy {
    type Err = EngineError;

    /// Parses `none`, `redundancy N` (N ≥ 1) or `recovery-window DAYS` (DAYS > 0).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let bad = || {
            EngineError::from(crate::refusal::Input::RetentionPolicy {
                text: s.to_string(),
            })
        };
        match words.as_slice() {
            ["none"] => Ok(RetentionPolicy::None),
            ["redundancy", n] => match n.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(RetentionPolicy::Redundancy(n)),
                _ => Err(bad()),
            },
            ["recovery-window", d] => match d.parse::<f64>() {
                Ok(d) if d > 0.0 && d.is_finite() && d < 100_000.0 => {
                    Ok(RetentionPolicy::RecoveryWindow {
                        micros: (d * MICROS_PER_DAY as f64).round() as i64,
                    })
                }
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

/// What retention needs to know of one backup. `parent` is the backup an incremental applies
/// on (none for a full): a kept incremental keeps its whole chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupFacts {
    pub id: String,
    pub status: BackupStatus,
    /// Only full backups count as redundancy units and as window bases.
    pub full: bool,
    pub parent: Option<String>,
    /// Position of the WAL segment holding the start LSN (see [`wal_position`]).
    pub start_pos: u64,
    /// Unix microseconds at which the backup became consistent; None if it never did.
    pub stop_time: Option<i64>,
    /// For a backup of archived WAL (never a base): the positions of the first and last
    /// segment it holds.
    pub wal_range: Option<(u64, u64)>,
}

impl BackupFacts {
    pub fn from_record(b: &BackupRecord) -> BackupFacts {
        BackupFacts {
            id: b.id.clone(),
            status: b.status,
            // A level 0 is a full backup that level 1s may apply on.
            full: b.backup_type.eq_ignore_ascii_case("FULL")
                || b.backup_type.eq_ignore_ascii_case("LEVEL0"),
            parent: None,
            start_pos: wal_position(&b.start_wal).unwrap_or(0),
            stop_time: b.stop_time,
            wal_range: b
                .backup_type
                .eq_ignore_ascii_case(crate::ARCHIVELOG)
                .then(|| {
                    let first = wal_position(&b.start_wal).unwrap_or(0);
                    let last = b
                        .stop_wal
                        .as_deref()
                        .and_then(wal_position)
                        .unwrap_or(first);
                    (first, last)
                }),
        }
    }
}

/// What a policy finds obsolete, and what it keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Obsolete {
    /// Obsolete backups, oldest first.
    pub backups: Vec<String>,
    /// Obsolete archived WAL files, by name.
    pub wal: Vec<String>,
    /// AVAILABLE backups the policy keeps.
    pub kept: Vec<String>,
    /// Archived WAL at or after this position is kept; None: all of it is.
    pub wal_floor: Option<u64>,
}

/// The position of a WAL segment, backup-history or partial file: its log and segment hex
/// digits. None for a timeline history file or a foreign name.
pub fn wal_position(name: &str) -> Option<u64> {
    let hex = name.get(..24)?;
    if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(&hex[8..], 16).ok()
}

/// Applies `policy` at time `now` (unix microseconds) to a database's backups and archived WAL
/// names. Pure: the same facts always give the same answer.
///
/// Kept: under redundancy r, the r newest AVAILABLE full backups; under a recovery window,
/// the newest AVAILABLE full backup consistent at or before `now - window` (the base from
/// which the window's oldest point is reached) and every newer one. With too few backups, all
/// are kept (and, under a window, all archived WAL too). A kept backup keeps its parents. Obsolete: AVAILABLE backups not kept, FAILED
/// backups, and archived segments before the oldest kept backup's start segment. EXPIRED
/// backups are left to DELETE EXPIRED, RUNNING ones are never touched, and timeline history
/// files are always kept. A backup of archived WAL is kept while it holds a segment at or
/// after that floor (all of them when all WAL is kept). Policy none finds nothing obsolete.
pub fn obsolete(
    backups: &[BackupFacts],
    wal: &[String],
    policy: RetentionPolicy,
    now: i64,
) -> Obsolete {
    if policy == RetentionPolicy::None {
        return Obsolete::default();
    }
    let mut fulls: Vec<&BackupFacts> = backups
        .iter()
        .filter(|b| b.full && b.status == BackupStatus::Available && b.stop_time.is_some())
        .collect();
    // Newest first; the id breaks ties between backups completed in the same microsecond.
    fulls.sort_by(|a, b| (b.stop_time, &b.id).cmp(&(a.stop_time, &a.id)));
    // Without a base older than the window, RMAN keeps everything, WAL included: the oldest
    // backup may be all there is to start from, and WAL before it costs little to keep.
    let mut keep_all_wal = false;
    let keep_n = match policy {
        RetentionPolicy::None => unreachable!("handled above"),
        RetentionPolicy::Redundancy(r) => (r as usize).min(fulls.len()),
        RetentionPolicy::RecoveryWindow { micros } => {
            let point = now.saturating_sub(micros);
            match fulls
                .iter()
                .position(|b| b.stop_time.is_some_and(|t| t <= point))
            {
                Some(base) => base + 1,
                None => {
                    keep_all_wal = true;
                    fulls.len()
                }
            }
        }
    };
    let mut kept: HashSet<&str> = fulls[..keep_n].iter().map(|b| b.id.as_str()).collect();
    let by_id: HashMap<&str, &BackupFacts> = backups.iter().map(|b| (b.id.as_str(), b)).collect();
    // A full backup made with backup optimization holds only the files that changed; the
    // rest are in its parent, which it keeps.
    for b in &fulls[..keep_n] {
        let mut cur = *b;
        while let Some(p) = cur.parent.as_deref().and_then(|p| by_id.get(p)) {
            if !kept.insert(p.id.as_str()) {
                break;
            }
            cur = p;
        }
    }
    // Incrementals: kept when their chain reaches a kept backup, and then the chain is kept.
    for b in backups
        .iter()
        .filter(|b| !b.full && b.wal_range.is_none() && b.status == BackupStatus::Available)
    {
        let mut chain = vec![b.id.as_str()];
        let mut cur = b;
        let mut anchored = false;
        while let Some(p) = cur.parent.as_deref().and_then(|p| by_id.get(p)) {
            if kept.contains(p.id.as_str()) {
                anchored = true;
                break;
            }
            if chain.contains(&p.id.as_str()) {
                break;
            }
            chain.push(p.id.as_str());
            cur = p;
        }
        if anchored {
            kept.extend(chain);
        }
    }
    let wal_floor = backups
        .iter()
        .filter(|b| kept.contains(b.id.as_str()) && !keep_all_wal)
        .map(|b| b.start_pos)
        .min();
    // A backup of archived WAL is kept while it holds a segment the kept backups need for
    // recovery: archive-get reads WAL from it once the archive's copy is gone.
    for b in backups
        .iter()
        .filter(|b| b.status == BackupStatus::Available)
    {
        if let Some((_, last)) = b.wal_range
            && wal_floor.is_none_or(|floor| last >= floor)
        {
            kept.insert(b.id.as_str());
        }
    }
    let mut out = Obsolete::default();
    let mut ordered: Vec<&BackupFacts> = backups.iter().collect();
    ordered.sort_by(|a, b| (a.stop_time, &a.id).cmp(&(b.stop_time, &b.id)));
    for b in ordered {
        match b.status {
            BackupStatus::Available if kept.contains(b.id.as_str()) => out.kept.push(b.id.clone()),
            BackupStatus::Available | BackupStatus::Failed => out.backups.push(b.id.clone()),
            BackupStatus::Running | BackupStatus::Expired => {}
        }
    }
    out.wal_floor = wal_floor;
    if let Some(floor) = out.wal_floor {
        out.wal = wal
            .iter()
            .filter(|w| wal_position(w).is_some_and(|p| p < floor))
            .cloned()
            .collect();
        out.wal.sort();
    }
    out
}

/// Whether retention counts the backups `catalog import` recorded (`configure
/// imported-retention`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Imported {
    /// Never obsolete: recman deletes nothing it did not write unless told to (DESIGN.md,
    /// invariant 13).
    #[default]
    Kept,
    /// Counted like recman's own backups: one the policy no longer needs is obsolete, and
    /// deleting it forgets recman's record and manifest of it; the old tool's files stay.
    Counted,
}

/// What retention found, with the records it was computed from.
pub type CatalogRetention = (Obsolete, Vec<BackupRecord>, Vec<(WalRecord, MediaStatus)>);

/// Retention over the catalog's records of one database.
pub fn obsolete_in_catalog(
    repo: &Repository,
    db_id: i64,
    policy: RetentionPolicy,
    imported: Imported,
    now: i64,
) -> Result<CatalogRetention, EngineError> {
    let cat = repo.catalog();
    let backups = cat.backups(db_id)?;
    let wal = cat.wal_states(db_id)?;
    let db_name = cat
        .databases()?
        .into_iter()
        .find(|d| d.id == db_id)
        .map(|d| d.name)
        .unwrap_or_default();
    let mut facts: Vec<BackupFacts> = backups
        .iter()
        .map(|b| {
            let mut f = BackupFacts::from_record(b);
            f.parent = parent_of(repo, &db_name, b);
            f
        })
        .collect();
    crate::backup::since::completing_counts_as_full(&mut facts, &backups);
    if imported == Imported::Counted {
        imported_fulls_count(repo, &mut facts)?;
    }
    let names: Vec<String> = wal.iter().map(|(w, _)| w.name.clone()).collect();
    let mut obs = obsolete(&facts, &names, policy, now);
    if policy != RetentionPolicy::None {
        crate::keep::apply(repo, &backups, &mut obs, now)?;
        if imported == Imported::Kept {
            keep_imported(&backups, &mut obs);
        }
    }
    Ok((obs, backups, wal))
}

/// An imported backup's type is FOREIGN, which would make every one an incremental with no
/// chain to anchor it, obsolete at once: its origin's own type says which are full backups,
/// the redundancy units and window bases of the old tool's chains.
fn imported_fulls_count(repo: &Repository, facts: &mut [BackupFacts]) -> Result<(), EngineError> {
    let fulls: HashSet<String> = repo
        .catalog()
        .foreign_backups()?
        .into_iter()
        .filter(|f| f.origin_type.eq_ignore_ascii_case("full"))
        .map(|f| f.backup_id)
        .collect();
    for f in facts.iter_mut().filter(|f| fulls.contains(&f.id)) {
        f.full = true;
    }
    Ok(())
}

/// Imported backups (catalog import) are recman's to read, not to delete (DESIGN.md,
/// invariant 13): unless `configure imported-retention on` says otherwise, retention keeps
/// them, and with them the archived WAL from their start on that recovery from them reads
/// after the old tool's archive ends. One `catalog import --copy` brought into recman's format
/// is recman's own now (type FULL): retention counts it.
fn keep_imported(backups: &[BackupRecord], obs: &mut Obsolete) {
    let imported: HashSet<String> = backups
        .iter()
        .filter(|b| b.backup_type == crate::import::FOREIGN)
        .map(|b| b.id.clone())
        .collect();
    let floor = backups
        .iter()
        .filter(|b| imported.contains(&b.id) && b.status == BackupStatus::Available)
        .filter_map(|b| wal_position(&b.start_wal))
        .min();
    obs.backups.retain(|id| {
        if imported.contains(id) {
            obs.kept.push(id.clone());
            false
        } else {
            true
        }
    });
    if let Some(f) = floor {
        obs.wal.retain(|w| wal_position(w).is_some_and(|p| p < f));
        obs.wal_floor = obs.wal_floor.map(|w| w.min(f));
    }
}

/// The backup `b` builds on, as its manifest names it (the catalog row does not): a level 1's
/// parent, or the full backup an optimized full leaves unchanged files in. None for WAL
/// backups, and when the manifest cannot be read (then nothing is kept on its account).
pub fn parent_of(repo: &Repository, db_name: &str, b: &BackupRecord) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Parent {
        parent: Option<String>,
    }
    if b.backup_type.eq_ignore_ascii_case(crate::ARCHIVELOG) {
        return None;
    }
    let rel = recman_catalog::layout::manifest(db_name, &b.id);
    let bytes = repo.read_object(&rel).ok()??;
    serde_json::from_slice::<Parent>(&bytes).ok()?.parent
}

/// The outcome of removing objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteReport {
    pub backups: Vec<String>,
    pub wal: Vec<String>,
    /// Deletions left behind by an interrupted command, finished first.
    pub resumed: usize,
    /// In an immutable repository: the objects an Object Lock still holds; their backups and
    /// WAL files were left whole and are deleted by a later run.
    pub held: Vec<crate::immutable::HeldObject>,
    /// The imported backups among `backups`: recman forgot its record and manifest of each,
    /// and the old tool's files stay where it wrote them.
    pub imported: Vec<recman_catalog::ForeignBackupRecord>,
}

/// Deletes backups and archived WAL files: one transaction takes them out of the AVAILABLE
/// listings and journals them, then each object's media go, then its record. Call under the
/// repository lock. A kill at any point leaves records that claim nothing (EXPIRED with a
/// journal row) and that the next call, or [`finish_pending`], completes.
pub fn delete_objects(
    repo: &Repository,
    db_id: i64,
    db_name: &str,
    backups: &[String],
    wal: &[(String, String)],
) -> Result<DeleteReport, EngineError> {
    let resumed = finish_pending(repo)?;
    // Locked objects are left out before anything is journalled: a journalled deletion that
    // a lock refuses would block every later delete.
    let held = crate::immutable::held_objects(repo, db_name, backups, wal, chrono::Utc::now())?;
    let is_held = |owner: &str| held.iter().any(|h| h.owner == owner);
    let backups: Vec<String> = backups.iter().filter(|b| !is_held(b)).cloned().collect();
    let wal: Vec<(String, String)> = wal.iter().filter(|(n, _)| !is_held(n)).cloned().collect();
    // Read before the records go: the foreign rows are deleted with their backups. One that
    // `catalog import --copy` made recman's own has pieces of recman's, deleted like any.
    let mut imported = Vec::new();
    for id in &backups {
        let foreign = repo
            .catalog()
            .backup(id)?
            .is_some_and(|b| b.backup_type == crate::import::FOREIGN);
        if foreign {
            imported.extend(repo.catalog().foreign_backup(id)?);
        }
    }
    let mut items: Vec<PendingDelete> = backups
        .iter()
        .map(|id| PendingDelete {
            kind: DeleteKind::Backup,
            db_id,
            key: id.clone(),
            path: crate::util::backup_dir(db_name, id),
        })
        .collect();
    items.extend(wal.iter().map(|(name, path)| PendingDelete {
        kind: DeleteKind::Wal,
        db_id,
        key: name.clone(),
        path: path.clone(),
    }));
    repo.catalog().begin_delete(&items)?;
    let slow = crate::fault::slow_delete();
    for (done, it) in items.iter().enumerate() {
        if let Some(d) = slow {
            std::thread::sleep(d);
        }
        // Stopped between objects: every record already claims nothing (EXPIRED, journalled),
        // so what is left is only media that the next delete removes.
        if let Err(EngineError::Stopped { signal, .. }) = crate::stop::check() {
            return Err(EngineError::Stopped {
                signal,
                done: format!(
                    ": {done} of {} deletions done; the rest are recorded EXPIRED and the next `recman delete` finishes them",
                    items.len()
                ),
            });
        }
        finish_one(repo, it)?;
    }
    Ok(DeleteReport {
        wal: wal.iter().map(|(n, _)| n.clone()).collect(),
        backups,
        resumed,
        held,
        imported,
    })
}

/// Completes the deletions an interrupted command left in the journal; returns how many.
pub fn finish_pending(repo: &Repository) -> Result<usize, EngineError> {
    let pending = repo.catalog().pending_deletes(None)?;
    for it in &pending {
        finish_one(repo, it)?;
    }
    Ok(pending.len())
}

fn finish_one(repo: &Repository, it: &PendingDelete) -> Result<(), EngineError> {
    match it.kind {
        DeleteKind::Backup => {
            crate::pieces::remove_copies_of_backup(repo, &it.path)?;
            repo.remove_prefix(&it.path)?;
        }
        DeleteKind::Wal => {
            // Its change-tracking summary goes with it (a level 1 needing it scans instead).
            if let Some(stem) = it.path.strip_suffix(".rmw") {
                repo.remove_object(&format!("{stem}.rmb"))?;
            }
            repo.remove_object(&it.path)?;
        }
    }
    repo.catalog().finish_delete(it)?;
    Ok(())
}
