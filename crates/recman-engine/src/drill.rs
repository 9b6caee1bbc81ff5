//! DRILL: a real restore test. The newest backup (or the one the target needs) is restored
//! into a scratch directory, started there as an auxiliary instance, recovered to the target,
//! checked with pg_amcheck and the user's SQL, then stopped and removed. The outcome — and the
//! measured RTO, restore plus recovery time — is recorded in the catalog whatever happened, so
//! a failed drill is as visible as a passed one.

use crate::auxiliary::{self, Auxiliary};
use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
use crate::restore::RestoreOptions;
use recman_catalog::DrillRecord;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct DrillOptions {
    /// The restore to test; its `to` is replaced by the scratch directory's data directory.
    pub restore: RestoreOptions,
    /// The scratch directory (absent or empty); None: a new one in the system's temp dir.
    pub dir: Option<PathBuf>,
    /// SQL checks, each run in database `postgres` after recovery.
    pub checks: Vec<String>,
    /// Leave the instance running and its directory in place.
    pub keep: bool,
    pub recovery_timeout: Duration,
}

/// One check of a drill.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DrillCheck {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Clone, Debug)]
pub struct DrillReport {
    pub record: DrillRecord,
    pub checks: Vec<DrillCheck>,
    pub dir: PathBuf,
    /// With `keep`: the port the instance still runs on.
    pub kept_port: Option<u16>,
}

impl DrillReport {
    pub fn passed(&self) -> bool {
        self.record.status == "PASSED"
    }
    /// Restore plus recovery, the measured recovery time objective.
    pub fn rto(&self) -> Duration {
        Duration::from_millis((self.record.restore_ms + self.record.recovery_ms) as u64)
    }
}

/// What happened after the restore began; the error, if any, is recorded with what was
/// measured before it.
#[derive(Default)]
struct Measured {
    backup_id: Option<String>,
    restore_ms: i64,
    recovery_ms: i64,
    bytes: i64,
    wal_bytes: i64,
    checks: Vec<DrillCheck>,
    kept_port: Option<u16>,
}

/// Runs a drill and records it. Err only when the drill could not begin (the directory is
/// taken); every later failure is a FAILED drill in the report (and the catalog).
pub fn drill(
    ctx: &Context,
    opts: &DrillOptions,
    progress: &dyn Progress,
) -> Result<DrillReport, EngineError> {
    let dir = match &opts.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!(
            "recman-drill-{}-{}",
            ctx.db.name,
            crate::wal_prefetch::unix_nanos(std::time::SystemTime::now())
        )),
    };
    auxiliary::claim_dir(&dir)?;
    let started_at = chrono::Utc::now().timestamp_micros();
    let mut m = Measured::default();
    let result = run(ctx, opts, &dir, &mut m, progress);
    let failed_check = m.checks.iter().find(|c| !c.passed).map(|c| c.name.clone());
    let error = match (&result, failed_check) {
        (Err(e), _) => Some(e.to_string()),
        (Ok(()), Some(name)) => Some(format!("check {name} failed")),
        (Ok(()), None) => None,
    };
    let record = DrillRecord {
        id: 0,
        db_id: ctx.db.id,
        started_at,
        status: if error.is_none() { "PASSED" } else { "FAILED" }.into(),
        backup_id: m.backup_id.clone(),
        target: opts.restore.target.to_string(),
        restore_ms: m.restore_ms,
        recovery_ms: m.recovery_ms,
        bytes_restored: m.bytes,
        wal_bytes: m.wal_bytes,
        checks: serde_json::to_string(&m.checks).unwrap_or_else(|_| "[]".into()),
        error,
    };
    ctx.repo.catalog().add_drill(&record)?;
    Ok(DrillReport {
        record,
        checks: m.checks,
        dir,
        kept_port: m.kept_port,
    })
}

fn ms(d: Duration) -> i64 {
    d.as_millis().max(1) as i64
}

fn run(
    ctx: &Context,
    opts: &DrillOptions,
    dir: &std::path::Path,
    m: &mut Measured,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    let cleanup = |aux: Option<Auxiliary>| {
        if opts.keep {
            return;
        }
        match aux {
            Some(a) => {
                let _ = a.remove();
            }
            None => {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    };
    let mut ro = opts.restore.clone();
    ro.to = auxiliary::pgdata_in(dir);
    ro.force = false;
    ro.preserve_archive_mode = false;
    // Tablespaces go inside the scratch directory, never to the source's locations.
    let prepared = crate::restore::plan_restore(ctx, &ro).and_then(|plan| {
        m.backup_id = Some(plan.backup_id.clone());
        let manifest = crate::manifest_io::load_manifest(ctx, &plan.backup_id)?;
        for line in manifest.tablespace_map.lines() {
            if let Some(oid) = line.split(' ').next().filter(|o| !o.is_empty()) {
                ro.tablespace_map
                    .push((oid.to_string(), dir.join("tblspc").join(oid)));
            }
        }
        Ok(manifest.start_lsn)
    });
    let start_lsn = match prepared {
        Ok(l) => l,
        Err(e) => {
            cleanup(None);
            return Err(e);
        }
    };
    let t0 = Instant::now();
    let restored = match crate::restore::restore_database(ctx, &ro, progress) {
        Ok(r) => r,
        Err(e) => {
            cleanup(None);
            return Err(e);
        }
    };
    m.restore_ms = ms(t0.elapsed());
    m.bytes = restored.bytes as i64;
    m.backup_id = Some(restored.backup_id.clone());
    let port = match auxiliary::pick_port(None) {
        Ok(p) => p,
        Err(e) => {
            cleanup(None);
            return Err(e);
        }
    };
    let mut aux = match Auxiliary::configure(dir, port, &[]) {
        Ok(a) => a,
        Err(e) => {
            cleanup(None);
            return Err(e);
        }
    };
    progress.message(&format!(
        "drill: restored backup {} in {:.1}s; starting it on port {port} to recover to {}",
        restored.backup_id,
        m.restore_ms as f64 / 1000.0,
        opts.restore.target
    ));
    let t1 = Instant::now();
    let opened = aux
        .start()
        .and_then(|()| aux.wait_open(opts.recovery_timeout));
    if let Err(e) = opened {
        m.recovery_ms = ms(t1.elapsed());
        let _ = aux.stop();
        cleanup(Some(aux));
        return Err(EngineError::Failed {
            kind: e.kind(),
            message: format!("recovery failed: {e}"),
        });
    }
    m.recovery_ms = ms(t1.elapsed());
    m.wal_bytes = aux
        .psql(
            "postgres",
            &format!(
                "select coalesce(pg_last_wal_replay_lsn() - '{start_lsn}'::pg_lsn, 0)::bigint"
            ),
        )
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    m.checks.push(amcheck(&aux));
    for sql in &opts.checks {
        m.checks.push(sql_check(&aux, sql));
    }
    if opts.keep {
        m.kept_port = Some(aux.port);
        aux.detach();
        return Ok(());
    }
    aux.remove()
}

/// The first lines of a program's output, for the record.
fn brief(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut s = lines
        .iter()
        .take(5)
        .copied()
        .collect::<Vec<_>>()
        .join(" / ");
    if lines.len() > 5 {
        s.push_str(&format!(" / … ({} more lines)", lines.len() - 5));
    }
    s
}

fn amcheck(aux: &Auxiliary) -> DrillCheck {
    let name = "pg_amcheck --heapallindexed".to_string();
    let mut cmd = aux.program("pg_amcheck");
    cmd.args(aux.conn_args()).args([
        "--all",
        "--heapallindexed",
        "--install-missing",
        "--no-strict-names",
    ]);
    match cmd.output() {
        Ok(o) if o.status.success() => DrillCheck {
            name,
            passed: true,
            detail: "no corruption found in any database".into(),
        },
        Ok(o) => DrillCheck {
            name,
            passed: false,
            detail: brief(&format!(
                "{}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )),
        },
        Err(e) => DrillCheck {
            name,
            passed: false,
            detail: format!("cannot run pg_amcheck: {e}"),
        },
    }
}

/// A check passes when it runs without error and returns a row whose first value is not
/// false (`f`).
fn sql_check(aux: &Auxiliary, sql: &str) -> DrillCheck {
    let name = format!("sql: {sql}");
    let (passed, detail) = match aux.psql("postgres", sql) {
        Err(e) => (false, format!("error: {}", brief(&e))),
        Ok(out) => match out
            .lines()
            .next()
            .map(|l| l.split('|').next().unwrap_or(""))
        {
            None => (false, "returned no rows".to_string()),
            Some(v) if v == "f" || v.eq_ignore_ascii_case("false") => {
                (false, "returned false".to_string())
            }
            Some(v) => (true, format!("returned {v}")),
        },
    };
    DrillCheck {
        name,
        passed,
        detail,
    }
}
