//! A scratch PostgreSQL instance on a restored directory: started on a free port with its own
//! socket directory and trust authentication for local connections only, no archiving and
//! small memory; asked SQL through psql; stopped and removed by its owner.

use crate::EngineError;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Where PostgreSQL's programs of major `major` are: `RECMAN_PG_BIN`, else Debian's
/// `/usr/lib/postgresql/MAJOR/bin`, else the PATH.
pub fn pg_bin_dir(major: u32) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("RECMAN_PG_BIN") {
        return Some(PathBuf::from(d));
    }
    let d = PathBuf::from(format!("/usr/lib/postgresql/{major}/bin"));
    d.join("pg_ctl").exists().then_some(d)
}

pub struct AuxInstance {
    pub dir: PathBuf,
    pub port: u16,
    bin: Option<PathBuf>,
    /// The owner of the restored files: pg_ctl runs as it when recman runs as root.
    owner: (u32, u32),
    pub superuser: String,
    started: bool,
}

fn free_port() -> Result<u16, EngineError> {
    // A port the kernel hands out is free now; PostgreSQL binds it a moment later.
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| EngineError::io("find a free port on", Path::new("127.0.0.1"), e))?;
    Ok(l.local_addr().map(|a| a.port()).unwrap_or(0))
}

impl AuxInstance {
    /// Writes the scratch settings into the restored directory `dir`; `extra` lines come last.
    pub fn configure(
        dir: &Path,
        major: u32,
        superuser: &str,
        extra: &[&str],
    ) -> Result<AuxInstance, EngineError> {
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(dir).map_err(|e| EngineError::io("read", dir, e))?;
        let port = free_port()?;
        let hba = dir.join("recman_aux_hba.conf");
        std::fs::write(&hba, "local all all trust\n")
            .map_err(|e| EngineError::io("write", &hba, e))?;
        let _ = std::os::unix::fs::chown(&hba, Some(md.uid()), Some(md.gid()));
        let mut settings = vec![
            format!("port = {port}"),
            "listen_addresses = ''".to_string(),
            format!("unix_socket_directories = '{}'", dir.display()),
            format!("hba_file = '{}'", hba.display()),
            "archive_mode = 'off'".into(),
            "shared_buffers = '32MB'".into(),
            "primary_conninfo = ''".into(),
            "primary_slot_name = ''".into(),
            "synchronous_standby_names = ''".into(),
            "max_wal_senders = 10".into(),
            "logging_collector = off".into(),
            "hot_standby = on".into(),
        ];
        settings.extend(extra.iter().map(|s| s.to_string()));
        let auto = dir.join("postgresql.auto.conf");
        let mut text = std::fs::read_to_string(&auto).unwrap_or_default();
        text.push_str("# recman auxiliary instance: scratch settings\n");
        for s in &settings {
            text.push_str(s);
            text.push('\n');
        }
        std::fs::write(&auto, text).map_err(|e| EngineError::io("write", &auto, e))?;
        // Replication slots of the source would hold WAL in a scratch copy for nothing.
        let _ = std::fs::remove_dir_all(dir.join("pg_replslot"));
        let _ = std::fs::create_dir(dir.join("pg_replslot"));
        let _ = std::os::unix::fs::chown(dir.join("pg_replslot"), Some(md.uid()), Some(md.gid()));
        Ok(AuxInstance {
            dir: dir.to_path_buf(),
            port,
            bin: pg_bin_dir(major),
            owner: (md.uid(), md.gid()),
            superuser: superuser.to_string(),
            started: false,
        })
    }

    pub fn program(&self, name: &str) -> Command {
        let p = match &self.bin {
            Some(b) => b.join(name),
            None => PathBuf::from(name),
        };
        Command::new(p)
    }

    fn as_owner(&self, c: &mut Command) {
        let root = std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(false);
        if root {
            // PostgreSQL refuses to run as root; the restored files belong to its user.
            c.uid(self.owner.0).gid(self.owner.1);
        }
        c.current_dir(&self.dir);
    }

    fn log(&self) -> PathBuf {
        self.dir.join("recman_aux.log")
    }

    /// The last lines of the instance's log, for an error.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(8)..].join(" | ")
    }

    pub fn start(&mut self) -> Result<(), EngineError> {
        let log = self.log();
        std::fs::write(&log, "").map_err(|e| EngineError::io("write", &log, e))?;
        let _ = std::os::unix::fs::chown(&log, Some(self.owner.0), Some(self.owner.1));
        let mut c = self.program("pg_ctl");
        c.arg("start")
            .arg("-w")
            .arg("-t")
            .arg("600")
            .arg("-D")
            .arg(&self.dir)
            .arg("-l")
            .arg(&log);
        self.as_owner(&mut c);
        self.started = true;
        let out = run(&mut c, "pg_ctl start")?;
        if !out.status.success() {
            return Err(self.failed("did not start"));
        }
        Ok(())
    }

    pub fn failed(&self, what: &str) -> EngineError {
        EngineError::Failed {
            kind: crate::ErrorKind::Transient,
            message: format!(
                "the auxiliary instance in {} {what}; its log ends: {}; hint: read {} for the cause (recovery may have ended before the target, or a setting of the source does not fit this host)",
                self.dir.display(),
                self.log_tail(),
                self.log().display()
            ),
        }
    }

    /// Runs `sql` in database `db`; rows as text, fields split at '|'.
    pub fn sql(&self, db: &str, sql: &str) -> Result<Vec<Vec<String>>, EngineError> {
        let mut c = self.psql(db);
        c.arg("-XAtq")
            .arg("-v")
            .arg("ON_ERROR_STOP=1")
            .arg("-c")
            .arg(sql);
        let out = run(&mut c, "psql")?;
        if !out.status.success() {
            return Err(EngineError::Failed {
                kind: crate::ErrorKind::InvalidInput,
                message: format!(
                    "the auxiliary instance in {} refused `{sql}`: {}; hint: the table may not fit what recover table does, see docs/recovery-table.md",
                    self.dir.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('|').map(str::to_string).collect())
            .collect())
    }

    /// A client program pointed at the instance.
    pub fn client(&self, program: &str, db: &str) -> Command {
        let mut c = self.program(program);
        c.arg("-h")
            .arg(&self.dir)
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-U")
            .arg(&self.superuser)
            .arg("-d")
            .arg(db);
        c
    }

    fn psql(&self, db: &str) -> Command {
        self.client("psql", db)
    }

    /// Waits until `sql` answers `t` (recovery paused at the target, or promoted).
    pub fn wait_for(&self, db: &str, sql: &str, what: &str) -> Result<(), EngineError> {
        let t0 = Instant::now();
        loop {
            match self.sql(db, sql) {
                Ok(rows)
                    if rows.first().and_then(|r| r.first()).map(String::as_str) == Some("t") =>
                {
                    return Ok(());
                }
                _ if !self.running() => return Err(self.failed(&format!("stopped before {what}"))),
                _ if t0.elapsed() > Duration::from_secs(3600) => {
                    return Err(self.failed(&format!("did not reach {what} within an hour")));
                }
                _ => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    fn running(&self) -> bool {
        let mut c = self.program("pg_ctl");
        c.arg("status").arg("-D").arg(&self.dir);
        self.as_owner(&mut c);
        run(&mut c, "pg_ctl status").is_ok_and(|o| o.status.success())
    }

    /// Stops the instance at once: it is scratch, nothing in it is kept.
    pub fn stop(&mut self) {
        if !self.started {
            return;
        }
        let mut c = self.program("pg_ctl");
        c.arg("stop")
            .arg("-m")
            .arg("immediate")
            .arg("-w")
            .arg("-D")
            .arg(&self.dir);
        self.as_owner(&mut c);
        let _ = run(&mut c, "pg_ctl stop");
        self.started = false;
    }
}

impl Drop for AuxInstance {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn run(c: &mut Command, what: &str) -> Result<Output, EngineError> {
    c.output().map_err(|e| EngineError::Failed {
        kind: crate::ErrorKind::NotFound,
        message: format!(
            "cannot run {what} ({}): {e}; hint: install PostgreSQL's client and server programs of the backup's major, or name their directory in RECMAN_PG_BIN",
            c.get_program().to_string_lossy()
        ),
    })
}
