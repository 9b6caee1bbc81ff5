//! DRILL and DUPLICATE DATABASE in the command model: both are a restore (`RestoreDatabase`'s
//! target and source options) plus what happens to the restored directory after it.

use crate::command::RestoreDatabase;
use std::path::PathBuf;

/// `drill`: restore into a scratch directory, start, recover, check, remove, record.
#[derive(Debug, Clone, PartialEq)]
pub struct Drill {
    /// The target (`until_*`), `from_tag` and `channels`; `to` is unused.
    pub restore: RestoreDatabase,
    /// SQL checks, each run in database postgres; a check passes when it returns a row whose
    /// first value is not false.
    pub check_sql: Vec<String>,
    /// Leave the instance running and its directory in place.
    pub keep: bool,
    /// The scratch directory (absent or empty); None: one in the system's temp dir.
    pub dir: Option<PathBuf>,
}

impl Drill {
    pub fn new() -> Self {
        Drill {
            restore: RestoreDatabase::into(None),
            check_sql: Vec::new(),
            keep: false,
            dir: None,
        }
    }
}

impl Default for Drill {
    fn default() -> Self {
        Drill::new()
    }
}

/// `duplicate database`: a standby (or a clone) restored into `restore.to`.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateDatabase {
    pub restore: RestoreDatabase,
    pub for_standby: bool,
    pub primary_conninfo: Option<String>,
    pub slot: Option<String>,
    pub port: Option<u16>,
}

/// Whether a drill is due: None when the newest passed drill is within `days` of `now` (unix
/// micros); else the line REPORT NEED BACKUP prints.
pub fn drill_need(recs: &[recman_catalog::DrillRecord], days: f64, now: i64) -> Option<String> {
    let newest = recs
        .iter()
        .filter(|r| r.status == "PASSED")
        .map(|r| r.started_at)
        .max();
    let age = newest.map(|t| (now - t) as f64 / 86_400e6);
    match age {
        Some(a) if a <= days => None,
        Some(a) => Some(format!(
            "no restore drill passed in the last {days} days (newest passed {a:.1} days ago); run `recman drill`"
        )),
        None => Some(format!(
            "no restore drill passed in the last {days} days (none ever passed); run `recman drill`"
        )),
    }
}
