//! The retention policy and the facts it judges (a backup's facts, what is obsolete, a WAL
//! segment's position): below retention.rs, which decides and deletes, so that KEEP, the
//! immutability lock and the backup's parent choice name them without importing the deleter.

use crate::error::EngineError;
use recman_catalog::{BackupRecord, BackupStatus};
use std::fmt;
use std::str::FromStr;

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
                .eq_ignore_ascii_case(crate::backup_types::ARCHIVELOG)
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

/// For retention: a backup built directly on a PARTIAL one completes it, and the two restore
/// as a whole base, so it counts as a full backup (a redundancy unit that keeps its parent).
/// Without this a partial and its completion, having no full at their root, would both be
/// obsolete.
pub(crate) fn completing_counts_as_full(facts: &mut [BackupFacts], records: &[BackupRecord]) {
    let partial: std::collections::HashSet<&str> = records
        .iter()
        .filter(|r| {
            r.backup_type
                .eq_ignore_ascii_case(crate::backup_types::PARTIAL)
        })
        .map(|r| r.id.as_str())
        .collect();
    for f in facts.iter_mut() {
        if f.parent.as_deref().is_some_and(|p| partial.contains(p)) {
            f.full = true;
        }
    }
}
