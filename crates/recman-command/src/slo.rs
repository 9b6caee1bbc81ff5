//! REPORT SLO: for each database, what recovery would cost now beside what was promised. The
//! measured RPO is the WAL not yet safe in the repository (the receiver's exposure when one
//! has run, else the archive's lag), the measured RTO the last passed drill, and the predicted
//! restore time what `restore --preview` estimates. The failure checks use the same measures
//! (`rto-exceeded`), so the report and LIST FAILURE never disagree about a target.

use crate::env::Env;
use crate::error::{ExecError, env};
use recman_catalog::{DbRecord, DrillRecord, Repository};
use recman_engine::{Context, EngineError};

/// The targets, from the settings in force (unset: None).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Targets {
    /// Microseconds.
    pub rpo: Option<i64>,
    /// Microseconds.
    pub rto: Option<i64>,
}

impl Targets {
    pub fn resolve(repo: &Repository, e: &dyn Env) -> Result<Targets, ExecError> {
        let file = env(e.config_file_settings())?;
        let all = crate::settings::resolve_all(repo, &file)?;
        let get = |n: &str| crate::settings::duration_micros(n, &crate::settings::setting(&all, n));
        Ok(Targets {
            rpo: get("rpo-target")?,
            rto: get("rto-target")?,
        })
    }
}

/// One database's row of REPORT SLO. Seconds throughout; None: not known (the notes say why).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SloRow {
    pub database: String,
    /// `receiver` (`recman receive` has recorded a position) or `archive`.
    pub rpo_source: &'static str,
    pub rpo_seconds: Option<f64>,
    pub rpo_bytes: Option<u64>,
    /// When the newest archived segment reached the archive (unix seconds), as the metrics'
    /// `recman_wal_last_archived_timestamp_seconds` says.
    pub last_archived_at: Option<f64>,
    pub rpo_target_seconds: Option<f64>,
    pub rpo_met: Option<bool>,
    /// The last passed drill's restore and recovery.
    pub rto_seconds: Option<f64>,
    pub rto_drill: Option<i64>,
    pub predicted_seconds: Option<f64>,
    pub predicted_basis: String,
    pub rto_target_seconds: Option<f64>,
    pub rto_met: Option<bool>,
    pub predicted_met: Option<bool>,
    pub notes: Vec<String>,
}

fn secs(micros: i64) -> f64 {
    micros as f64 / 1e6
}

fn met(measured: Option<f64>, target: Option<i64>) -> Option<bool> {
    Some(measured? <= secs(target?))
}

/// The newest drill that passed, and its measured RTO in seconds.
pub fn last_passed_drill(drills: &[DrillRecord]) -> Option<(&DrillRecord, f64)> {
    drills
        .iter()
        .rev()
        .find(|d| d.status == "PASSED")
        .map(|d| (d, (d.restore_ms + d.recovery_ms) as f64 / 1000.0))
}

/// What a restore of the newest backup to the end of the archived WAL is predicted to take:
/// `restore database --preview`'s estimate (piece reads at past restores' rate).
pub fn predicted_restore(ctx: &Context) -> (Option<f64>, String) {
    let opts = recman_engine::RestoreOptions {
        to: Default::default(),
        target: recman_engine::RecoveryTarget::Latest,
        from_tag: None,
        channels: 1,
        tablespace_map: Vec::new(),
        timeline: None,
        preserve_archive_mode: false,
        from_copy: None,
        switch_to_copy: false,
        recman_exe: Default::default(),
        restore_command_args: Vec::new(),
        allow_wal_gap: true,
        force: false,
        write_mode: None,
    };
    match recman_engine::plan_restore(ctx, &opts) {
        Ok(p) => (p.estimate.seconds, p.estimate.basis),
        Err(e) => (None, format!("unknown: no restore could be planned ({e})")),
    }
}

/// The segment's end as a WAL position, for 24-hex-digit names.
fn segment_end(name: &str, seg_size: u64) -> Option<u64> {
    Some(recman_engine::segment_lsn(name, seg_size)? + seg_size)
}

/// The server's current WAL position, when `conninfo` reaches the database's own cluster.
fn current_lsn(db: &DbRecord, conninfo: Option<&str>) -> Option<u64> {
    let t = recman_pg::resolve_conninfo(conninfo).ok()?;
    let mut s = recman_pg::Session::connect(&t).ok()?;
    if s.system_identifier != db.system_identifier {
        return None;
    }
    let rows = s.simple_query("SELECT pg_current_wal_lsn()::text").ok()?;
    let text = rows.into_iter().next()?.into_iter().next()??;
    text.parse::<recman_pg::Lsn>().ok().map(|l| l.0)
}

/// The archive's lag: since the newest segment was archived, and the WAL the server wrote
/// after it (when the server answers).
fn archive_rpo(
    repo: &Repository,
    db: &DbRecord,
    conninfo: Option<&str>,
    now: i64,
    row: &mut SloRow,
) -> Result<(), EngineError> {
    let wal = repo.catalog().wal_list(db.id)?;
    let segments: Vec<_> = wal
        .iter()
        .filter(|w| recman_engine::is_segment_name(&w.name))
        .collect();
    let (Some(at), Some(last)) = (
        segments.iter().map(|w| w.archived_at).max(),
        segments.iter().max_by(|a, b| a.name.cmp(&b.name)),
    ) else {
        row.notes.push(format!(
            "no wal of database {} is archived, so the rpo is unbounded; hint: check archive_command (recman check)",
            db.name
        ));
        return Ok(());
    };
    row.last_archived_at = Some(secs(at));
    row.rpo_seconds = Some(secs(now - at).max(0.0));
    match current_lsn(db, conninfo) {
        Some(cur) => {
            row.rpo_bytes = segment_end(&last.name, last.size).map(|end| cur.saturating_sub(end))
        }
        None => row.notes.push(
            "the wal written since the last archived segment is not known: the server did not answer; hint: pass --target".into(),
        ),
    }
    Ok(())
}

/// The receiver's exposure, as `report rpo` gives it.
fn receiver_rpo(
    repo: &Repository,
    db: &DbRecord,
    conninfo: Option<&str>,
    now: i64,
    row: &mut SloRow,
) -> Result<(), EngineError> {
    let rows = recman_engine::receive::rpo(repo, Some(&db.name), conninfo, now)?;
    if let Some(r) = rows.into_iter().next() {
        row.rpo_seconds = r.age_seconds;
        row.rpo_bytes = r.exposure_bytes;
    }
    Ok(())
}

/// One database's row at `now`.
pub fn measure(
    ctx: &Context,
    targets: Targets,
    now: i64,
    predict: bool,
) -> Result<SloRow, EngineError> {
    let (repo, db) = (&ctx.repo, &ctx.db);
    let conninfo = ctx.conninfo.as_deref();
    let receiving = repo.catalog().receive_position(db.id)?.is_some();
    let mut row = SloRow {
        database: db.name.clone(),
        rpo_source: if receiving { "receiver" } else { "archive" },
        rpo_seconds: None,
        rpo_bytes: None,
        last_archived_at: None,
        rpo_target_seconds: targets.rpo.map(secs),
        rpo_met: None,
        rto_seconds: None,
        rto_drill: None,
        predicted_seconds: None,
        predicted_basis: String::new(),
        rto_target_seconds: targets.rto.map(secs),
        rto_met: None,
        predicted_met: None,
        notes: Vec::new(),
    };
    if receiving {
        receiver_rpo(repo, db, conninfo, now, &mut row)?;
    } else {
        archive_rpo(repo, db, conninfo, now, &mut row)?;
    }
    row.rpo_met = met(row.rpo_seconds, targets.rpo);
    let drills = repo.catalog().drills(db.id)?;
    match last_passed_drill(&drills) {
        Some((d, rto)) => {
            row.rto_seconds = Some(rto);
            row.rto_drill = Some(d.id);
        }
        None => row.notes.push(format!(
            "no drill of database {} has passed, so its rto is not measured; hint: recman drill",
            db.name
        )),
    }
    if predict {
        (row.predicted_seconds, row.predicted_basis) = predicted_restore(ctx);
    }
    row.rto_met = met(row.rto_seconds, targets.rto);
    row.predicted_met = met(row.predicted_seconds, targets.rto);
    Ok(row)
}

/// REPORT SLO's rows: every database of the repository, or the one the front end names.
pub fn report_slo(e: &dyn Env) -> Result<Vec<SloRow>, ExecError> {
    let repo = env(e.repository())?;
    let targets = Targets::resolve(&repo, e)?;
    let dbs = crate::env::reported_databases(&repo, e)?;
    let now = crate::clock::now_micros();
    let mut rows = Vec::new();
    for db in dbs {
        let ctx = Context {
            repo: env(e.repository())?,
            db,
            pgdata: None,
            conninfo: e.target(),
            tls: e.tls(),
        };
        rows.push(measure(&ctx, targets, now, true)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_ends_where_the_next_begins() {
        let seg = 16 << 20;
        assert_eq!(segment_end("000000010000000000000003", seg), Some(4 * seg));
        assert_eq!(
            segment_end("0000000100000001000000FF", seg),
            Some((1 << 32) + 256 * seg)
        );
        assert_eq!(segment_end("00000002.history", seg), None);
    }

    #[test]
    fn a_target_is_met_when_nothing_exceeds_it() {
        assert_eq!(met(Some(5.0), Some(5_000_000)), Some(true));
        assert_eq!(met(Some(5.1), Some(5_000_000)), Some(false));
        assert_eq!(met(None, Some(5_000_000)), None);
        assert_eq!(met(Some(5.0), None), None);
    }
}
