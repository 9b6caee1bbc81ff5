//! METRICS: the repository's state as gauges read from the catalog (nothing connects to
//! PostgreSQL). The front end writes them out (the CLI in Prometheus text format); the series
//! and sample alert rules are in docs/monitoring.md.

/// Microseconds since the epoch: the `now` that [`collect`] takes.
pub use crate::clock::now_micros;
use crate::env::Env;
use crate::error::{ExecError, env};
use recman_catalog::{BackupRecord, BackupStatus, Repository};
use recman_engine::EngineError;
use std::collections::BTreeMap;

/// One sample of a gauge.
#[derive(Debug, Clone, PartialEq)]
pub struct Gauge {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

#[derive(Default)]
struct Gauges(Vec<Gauge>);

impl Gauges {
    fn add(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        v: f64,
    ) {
        self.0.push(Gauge {
            name,
            help,
            labels: labels.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            value: v,
        });
    }
}

/// The backup types metrics group by: LEVEL0 is a whole copy of the data, like FULL.
fn kind(backup_type: &str) -> Option<&'static str> {
    match backup_type {
        "FULL" | "LEVEL0" => Some("full"),
        "LEVEL1" => Some("incremental"),
        "ARCHIVELOG" => Some("archivelog"),
        _ => None,
    }
}

fn secs(micros: i64) -> f64 {
    micros as f64 / 1e6
}

/// METRICS for the repository, or for the database the front end names.
pub fn metrics(e: &dyn Env) -> Result<Vec<Gauge>, ExecError> {
    let repo = env(e.repository())?;
    let file = env(e.config_file_settings())?;
    Ok(collect(
        &repo,
        e.database().as_deref(),
        now_micros(),
        &file,
    )?)
}

/// The gauges of the repository (or of the one database `only` names) at `now`; `file` is the
/// config file's layer of the settings, for the targets.
pub fn collect(
    repo: &Repository,
    only: Option<&str>,
    now: i64,
    file: &[(&'static str, String)],
) -> Result<Vec<Gauge>, EngineError> {
    let mut e = Gauges::default();
    let cat = repo.catalog();
    let all = crate::settings::resolve_all(repo, file)?;
    let target = |n: &str| crate::settings::duration_micros(n, &crate::settings::setting(&all, n));
    let (rpo_target, rto_target) = (target("rpo-target")?, target("rto-target")?);
    e.add(
        "recman_metrics_timestamp_seconds",
        "When these metrics were read from the catalog.",
        &[],
        secs(now),
    );
    for db in cat.databases()? {
        if only.is_some_and(|n| n != db.name) {
            continue;
        }
        let d = db.name.as_str();
        let backups = cat.backups(db.id)?;
        database_backups(&mut e, repo, d, &backups, now)?;
        drill_series(&mut e, repo, &db)?;
        if let Some(t) = rpo_target {
            e.add(
                "recman_rpo_target_seconds",
                "The RPO target (configure rpo-target): the archive or receive lag, and the newest backup's age, it allows.",
                &[("database", d)],
                secs(t),
            );
        }
        if let Some(t) = rto_target {
            e.add(
                "recman_rto_target_seconds",
                "The RTO target (configure rto-target): the restore and recovery time a drill may take.",
                &[("database", d)],
                secs(t),
            );
        }
        let open = cat.failures(db.id, false)?;
        for priority in ["CRITICAL", "HIGH", "LOW"] {
            e.add(
                "recman_failures_open",
                "Open failures by priority, as the last check (recman check, LIST FAILURE) recorded them.",
                &[("database", d), ("priority", priority)],
                open.iter().filter(|f| f.priority == priority).count() as f64,
            );
        }
        let wal = cat.wal_list(db.id)?;
        let wal_bytes: u64 = wal.iter().map(|w| w.stored_size).sum();
        e.add(
            "recman_wal_archived_files",
            "WAL files (segments and history files) in the repository's archive.",
            &[("database", d)],
            wal.len() as f64,
        );
        e.add(
            "recman_repository_wal_bytes",
            "Bytes of archived WAL as stored in the repository.",
            &[("database", d)],
            wal_bytes as f64,
        );
        // Segments only: not timeline history or backup history files.
        let segments = wal
            .iter()
            .filter(|w| w.name.len() == 24 && w.name.bytes().all(|c| c.is_ascii_hexdigit()));
        // A batch stores segments in parallel, so a later segment can be stamped before an
        // earlier one: the newest reach is the latest stamp, the newest segment the highest
        // name (timeline first, so a promotion's segments sort after their parent's).
        let newest_at = segments.clone().map(|w| w.archived_at).max();
        if let (Some(at), Some(last)) = (newest_at, segments.max_by(|a, b| a.name.cmp(&b.name))) {
            e.add(
                "recman_wal_last_archived_timestamp_seconds",
                "When the newest WAL segment reached the archive.",
                &[("database", d)],
                secs(at),
            );
            e.add(
                "recman_wal_archive_lag_seconds",
                "Seconds since a WAL segment last reached the archive (grows while archiving is stuck, and on an idle cluster that switches no WAL).",
                &[("database", d)],
                secs(now - at).max(0.0),
            );
            e.add(
                "recman_wal_last_archived_segment_info",
                "The newest archived WAL segment, by name, as a label.",
                &[("database", d), ("segment", &last.name)],
                1.0,
            );
        }
        if let Some(r) = cat.receive_position(db.id)? {
            e.add(
                "recman_wal_receive_flushed_lsn_bytes",
                "The WAL position `recman receive` last made durable in the repository, as a byte position (the LSN).",
                &[("database", d), ("mode", &r.mode)],
                r.flushed_lsn as f64,
            );
            e.add(
                "recman_wal_receive_lag_seconds",
                "Seconds since `recman receive` last recorded its position (grows while the receiver or its primary is down).",
                &[("database", d), ("mode", &r.mode)],
                secs(now - r.updated_at).max(0.0),
            );
        }
        cost_series(&mut e, repo, &db)?;
    }
    last_job(&mut e, repo)?;
    Ok(e.0)
}

/// What the repository's store was sent (issue 41): requests by kind and payload bytes by
/// direction, summed over the backups (`work="backup"`) and the days of archiving
/// (`work="archive"`) the catalog recorded. Counters: rows are only ever added to. None for a
/// database without any (a disk or tape repository's).
fn cost_series(
    e: &mut Gauges,
    repo: &Repository,
    db: &recman_catalog::DbRecord,
) -> Result<(), EngineError> {
    use recman_catalog::CostScope;
    use recman_catalog::meter::{Kind, Usage};
    let costs = repo.catalog().costs(db.id)?;
    if costs.is_empty() {
        return Ok(()); // a disk or tape repository: no request, no series
    }
    for (scope, work) in [
        (CostScope::Backup, "backup"),
        (CostScope::Archive, "archive"),
    ] {
        let mut sum = Usage::default();
        for c in costs.iter().filter(|c| c.scope == scope) {
            sum.add(&c.usage);
        }
        let labels = |extra: (&'static str, &'static str)| {
            [("database", db.name.as_str()), ("work", work), extra]
        };
        for k in Kind::ALL {
            e.add(
                "recman_repository_requests_total",
                "Requests sent to the repository's object store, by kind (PUT, GET, HEAD, LIST, DELETE) and by the work that made them.",
                &labels(("kind", k.as_str())),
                sum.of(k).requests as f64,
            );
        }
        let total = sum.total();
        e.add(
            "recman_repository_bytes_total",
            "Payload bytes sent to and received from the repository's object store, by the work that moved them.",
            &labels(("direction", "sent")),
            total.bytes_sent as f64,
        );
        e.add(
            "recman_repository_bytes_total",
            "Payload bytes sent to and received from the repository's object store, by the work that moved them.",
            &labels(("direction", "received")),
            total.bytes_received as f64,
        );
    }
    Ok(())
}

/// Restore drills' results: the newest drill's outcome, and the last passed one's measured
/// RTO (restore and recovery), which REPORT SLO shows beside the RTO target.
fn drill_series(
    e: &mut Gauges,
    repo: &Repository,
    db: &recman_catalog::DbRecord,
) -> Result<(), EngineError> {
    let drills = repo.catalog().drills(db.id)?;
    let d = db.name.as_str();
    if let Some(newest) = drills.last() {
        e.add(
            "recman_drill_last_ok",
            "1 when the newest restore drill passed, 0 when it failed.",
            &[("database", d)],
            if newest.status == "PASSED" { 1.0 } else { 0.0 },
        );
    }
    if let Some((passed, rto)) = crate::slo::last_passed_drill(&drills) {
        e.add(
            "recman_drill_last_success_timestamp_seconds",
            "When the newest passed restore drill started.",
            &[("database", d)],
            secs(passed.started_at),
        );
        e.add(
            "recman_drill_last_duration_seconds",
            "The measured RTO: restore and recovery time of the newest passed drill.",
            &[("database", d)],
            rto,
        );
    }
    Ok(())
}

fn database_backups(
    e: &mut Gauges,
    repo: &Repository,
    d: &str,
    backups: &[BackupRecord],
    now: i64,
) -> Result<(), EngineError> {
    let mut by_status: BTreeMap<&str, u64> = BTreeMap::new();
    for s in BackupStatus::ALL {
        by_status.insert(s.as_str(), 0);
    }
    let mut newest: BTreeMap<&'static str, &BackupRecord> = BTreeMap::new();
    let (mut stored, mut corrupt) = (0u64, 0u64);
    for b in backups {
        *by_status.entry(b.status.as_str()).or_default() += 1;
        if b.status != BackupStatus::Available {
            continue;
        }
        stored += b.written_bytes;
        corrupt += repo.catalog().corrupt_blocks(&b.id)?.len() as u64;
        let (Some(k), Some(stop)) = (kind(&b.backup_type), b.stop_time) else {
            continue;
        };
        if newest
            .get(k)
            .is_none_or(|n| n.stop_time.unwrap_or(0) < stop)
        {
            newest.insert(k, b);
        }
    }
    for (status, n) in by_status {
        e.add(
            "recman_backups",
            "Backups in the catalog by status.",
            &[("database", d), ("status", status)],
            n as f64,
        );
    }
    e.add(
        "recman_repository_backup_bytes",
        "Bytes of the available backups' pieces in the repository.",
        &[("database", d)],
        stored as f64,
    );
    e.add(
        "recman_corrupt_blocks",
        "Corrupt blocks recorded by the available backups (RMAN's V$DATABASE_BLOCK_CORRUPTION).",
        &[("database", d)],
        corrupt as f64,
    );
    for (k, b) in newest {
        let l = [("database", d), ("type", k)];
        let stop = b.stop_time.unwrap_or(b.start_time);
        let duration = secs(stop - b.start_time).max(0.0);
        e.add(
            "recman_backup_last_success_timestamp_seconds",
            "When the newest available backup of the type finished.",
            &l,
            secs(stop),
        );
        e.add(
            "recman_backup_last_success_age_seconds",
            "Seconds since the newest available backup of the type finished.",
            &l,
            secs(now - stop).max(0.0),
        );
        e.add(
            "recman_backup_last_size_bytes",
            "Bytes the newest available backup of the type wrote to the repository.",
            &l,
            b.written_bytes as f64,
        );
        e.add(
            "recman_backup_last_input_bytes",
            "Bytes the newest available backup of the type read (data files or WAL).",
            &l,
            b.db_bytes as f64,
        );
        e.add(
            "recman_backup_last_duration_seconds",
            "Run time of the newest available backup of the type.",
            &l,
            duration,
        );
        e.add(
            "recman_backup_last_speed_bytes_per_second",
            "Input bytes per second of the newest available backup of the type.",
            &l,
            if duration > 0.0 {
                b.db_bytes as f64 / duration
            } else {
                0.0
            },
        );
        e.add(
            "recman_backup_last_corrupt_blocks",
            "Corrupt blocks the newest available backup of the type recorded.",
            &l,
            repo.catalog().corrupt_blocks(&b.id)?.len() as f64,
        );
    }
    Ok(())
}

/// The I/O of the job that recorded statistics last: bytes and rate per kind of row.
fn last_job(e: &mut Gauges, repo: &Repository) -> Result<(), EngineError> {
    let Some((job, job_type)) = repo.catalog().last_io_job()? else {
        return Ok(());
    };
    let rows = repo.catalog().io_stats(&job)?;
    let job_type = job_type.to_lowercase();
    e.add(
        "recman_last_job_info",
        "The newest job with I/O statistics.",
        &[("job", &job), ("type", &job_type)],
        1.0,
    );
    for kind in ["INPUT", "OUTPUT"] {
        let rs: Vec<_> = rows.iter().filter(|r| r.kind == kind).collect();
        if rs.is_empty() {
            continue;
        }
        let bytes: u64 = rs.iter().map(|r| r.bytes).sum();
        let open = rs.iter().map(|r| r.open_time).min().unwrap_or(0);
        let close = rs.iter().map(|r| r.close_time).max().unwrap_or(0);
        let span = secs(close - open);
        let k = kind.to_lowercase();
        let l = [("type", job_type.as_str()), ("direction", k.as_str())];
        e.add(
            "recman_last_job_bytes",
            "Bytes the newest job read (input) or wrote (output).",
            &l,
            bytes as f64,
        );
        e.add(
            "recman_last_job_rate_bytes_per_second",
            "Bytes per second of the newest job, from its first open to its last close.",
            &l,
            if span > 0.0 { bytes as f64 / span } else { 0.0 },
        );
    }
    Ok(())
}
