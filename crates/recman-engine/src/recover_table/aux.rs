//! recover table's use of the shared auxiliary instance ([`crate::auxiliary`]): its first
//! phase reads the catalogs as a hot standby paused at the target, which needs the limits
//! the source ran with; rows come back split into fields.

use crate::auxiliary::{self, Auxiliary};
use crate::error::EngineError;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub struct AuxInstance {
    inner: Auxiliary,
}

/// Settings a hot standby must have at least at the source's values (PostgreSQL checks them
/// against pg_control), read with pg_controldata.
fn hot_standby_settings(inst: &Auxiliary) -> Result<Vec<String>, EngineError> {
    let mut c = inst.program("pg_controldata");
    c.arg("-D").arg(&inst.pgdata);
    let out = run(&mut c, "pg_controldata")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut settings = vec!["hot_standby = 'on'".to_string()];
    for (label, name) in [
        ("max_connections setting:", "max_connections"),
        ("max_worker_processes setting:", "max_worker_processes"),
        ("max_wal_senders setting:", "max_wal_senders"),
        ("max_prepared_xacts setting:", "max_prepared_transactions"),
        ("max_locks_per_xact setting:", "max_locks_per_transaction"),
    ] {
        if let Some(v) = text
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .map(str::trim)
        {
            settings.push(format!("{name} = {v}"));
        }
    }
    Ok(settings)
}

impl AuxInstance {
    /// Configures the restored `workdir/data`; `hot_standby` lets it answer queries while
    /// recovery is paused at the target.
    pub fn configure(
        workdir: &Path,
        hot_standby: bool,
        extra: &[&str],
    ) -> Result<AuxInstance, EngineError> {
        let port = auxiliary::pick_port(None)?;
        let mut settings: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let inner = Auxiliary::configure(workdir, port, &settings)?;
        if hot_standby {
            settings = hot_standby_settings(&inner)?;
            auxiliary::append_settings(&inner.pgdata, "recover table: a hot standby", &settings)?;
        }
        Ok(AuxInstance { inner })
    }

    pub fn start(&mut self) -> Result<(), EngineError> {
        self.inner.start()
    }

    pub fn failed(&self, what: &str) -> EngineError {
        EngineError::Failed {
            kind: crate::error::ErrorKind::Transient,
            message: format!(
                "the auxiliary instance in {} {what}: {}; hint: read {} for the cause (recovery may have ended before the target, or a setting of the source does not fit this host)",
                self.inner.pgdata.display(),
                self.inner.log_reason(),
                self.inner.log.display()
            ),
        }
    }

    /// Runs `sql` in database `db`; rows as text, fields split at '|'.
    pub fn sql(&self, db: &str, sql: &str) -> Result<Vec<Vec<String>>, EngineError> {
        let out = self.inner.psql(db, sql).map_err(|e| EngineError::Failed {
            kind: crate::error::ErrorKind::InvalidInput,
            message: format!(
                "the auxiliary instance in {} refused `{sql}`: {e}; hint: the table may not fit what recover table does, see docs/recovery.md",
                self.inner.pgdata.display()
            ),
        })?;
        Ok(out
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('|').map(str::to_string).collect())
            .collect())
    }

    /// A client program (pg_dump) pointed at the instance's database `db`.
    pub fn client(&self, program: &str, db: &str) -> Command {
        let mut c = self.inner.program(program);
        c.args(self.inner.conn_args()).arg("-d").arg(db);
        c
    }

    /// Waits until `sql` answers `t` (recovery paused at the target, or promoted).
    pub fn wait_for(&self, db: &str, sql: &str, what: &str) -> Result<(), EngineError> {
        let t0 = Instant::now();
        // pg_ctl start returns before the server writes its pid file: a server not seen for a
        // few seconds in a row has stopped, one not seen once may not have begun.
        let mut unseen: Option<Instant> = None;
        loop {
            let alive = self.alive();
            if alive {
                unseen = None;
            } else if unseen.is_none() {
                unseen = Some(Instant::now());
            }
            match self.inner.psql(db, sql) {
                Ok(v) if v.trim() == "t" => return Ok(()),
                _ if unseen.is_some_and(|u| u.elapsed() > Duration::from_secs(5)) => {
                    return Err(self.failed(&format!("stopped before {what}")));
                }
                _ if t0.elapsed() > auxiliary::DEFAULT_RECOVERY_TIMEOUT => {
                    return Err(self.failed(&format!("did not reach {what} in time")));
                }
                _ => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    fn alive(&self) -> bool {
        let mut c = self.inner.program("pg_ctl");
        c.arg("-D").arg(&self.inner.pgdata).arg("status");
        matches!(c.output(), Ok(o) if o.status.success())
    }

    /// Stops the instance; its directory is removed by recover table.
    pub fn stop(&mut self) -> Result<(), EngineError> {
        self.inner.stop()
    }
}

pub fn run(c: &mut Command, what: &str) -> Result<Output, EngineError> {
    c.output().map_err(|e| EngineError::Failed {
        kind: crate::error::ErrorKind::NotFound,
        message: format!(
            "cannot run {what} ({}): {e}; hint: install PostgreSQL's client and server programs of the backup's major, or name their directory in RECMAN_PG_BINDIR",
            c.get_program().to_string_lossy()
        ),
    })
}
