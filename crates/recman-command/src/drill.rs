//! Whether a restore drill is due: the line REPORT NEED BACKUP prints. (The DRILL and
//! DUPLICATE DATABASE commands' options are in `command.rs`.)

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

/// The data directory of a drill's or duplicate's instance inside its working directory `dir`:
/// where `pg_ctl -D` finds the instance a drill kept running.
pub fn pgdata_in(dir: &std::path::Path) -> std::path::PathBuf {
    recman_engine::auxiliary::pgdata_in(dir)
}
