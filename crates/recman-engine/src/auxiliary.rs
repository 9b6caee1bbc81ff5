//! The auxiliary instance: a restored data directory started on a free port with settings
//! safe for a scratch copy, used by `drill` (and by recover table and block recovery) to let
//! PostgreSQL replay WAL and answer queries without touching anything the source cluster owns.
//!
//! Layout of the working directory `dir` (the caller restores into [`Auxiliary::pgdata_in`]):
//! `dir/data` the data directory, `dir/sock` the unix socket directory, `dir/server.log`,
//! `dir/pg_hba.conf` (trust on the private socket only). `dir` is made 0700 so that trust on
//! its socket is trust for its owner alone.
//!
//! Why each setting (appended to postgresql.auto.conf, which wins over postgresql.conf):
//! - `archive_mode = off`: the copy shares the source's system identifier; archiving its new
//!   timeline would mix it into the source's archive.
//! - `listen_addresses = '127.0.0.1'`, `port`, `unix_socket_directories` in `dir`, `hba_file`:
//!   nothing outside this host (and no one but the owner through the socket) connects.
//! - `max_wal_senders = 0`, `synchronous_standby_names = ''`, `primary_conninfo = ''`, an empty
//!   `pg_replslot`: no replication in or out, no commit waiting for a standby that is not there,
//!   no slot holding WAL back.
//! - `hot_standby = off`: the copy answers only once recovery is over, so nothing reads a
//!   half-recovered state, and lowered limits are never checked against the source's.
//! - small `shared_buffers`, few connections: a scratch copy must not starve the host.

use crate::error::EngineError;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long recovery may take before the auxiliary instance is given up on.
pub const DEFAULT_RECOVERY_TIMEOUT: Duration = Duration::from_secs(3600);

/// The data directory inside an auxiliary working directory.
pub fn pgdata_in(dir: &Path) -> PathBuf {
    dir.join("data")
}

/// Makes `dir` the auxiliary working directory: it must be absent or empty. Made 0700.
pub fn claim_dir(dir: &Path) -> Result<(), EngineError> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| EngineError::io("read directory", dir, e))?
            .next()
            .is_none();
        if !empty {
            return Err(crate::refusal::Backups::AuxiliaryDirNotEmpty {
                dir: dir.display().to_string(),
            }
            .into());
        }
    } else {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io("create directory", dir, e))?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| EngineError::io("set permissions of", dir, e))
}

/// The port to use: `requested` when nothing listens on it, else a free one the system picks.
pub fn pick_port(requested: Option<u16>) -> Result<u16, EngineError> {
    match requested {
        Some(p) => match TcpListener::bind(("127.0.0.1", p)) {
            Ok(_) => Ok(p),
            Err(e) => Err(crate::refusal::Input::PortTaken {
                port: p,
                why: e.to_string(),
            }
            .into()),
        },
        None => TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| EngineError::io("pick a free port on", "127.0.0.1", e)),
    }
}

/// The major version written in `pgdata/PG_VERSION`.
pub fn major_of(pgdata: &Path) -> Result<u32, EngineError> {
    let p = pgdata.join("PG_VERSION");
    let text = std::fs::read_to_string(&p).map_err(|e| EngineError::io("read", &p, e))?;
    text.trim().parse().map_err(|_| {
        EngineError::from(crate::refusal::Cluster::NoMajorVersion {
            file: p.display().to_string(),
            pgdata: pgdata.display().to_string(),
        })
    })
}

/// The directory of PostgreSQL's programs for `major`: `RECMAN_PG_BINDIR`, else the
/// distribution's usual places, else whatever `PATH` finds.
pub fn bindir(major: u32) -> PathBuf {
    if let Some(d) = std::env::var_os("RECMAN_PG_BINDIR").map(PathBuf::from) {
        return d;
    }
    for d in [
        format!("/usr/lib/postgresql/{major}/bin"),
        format!("/usr/pgsql-{major}/bin"),
    ] {
        if Path::new(&d).join("postgres").is_file() {
            return PathBuf::from(d);
        }
    }
    PathBuf::new()
}

fn quote_conf(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// A restored data directory run as a scratch server. Dropping it stops a server it started
/// (immediately); [`Auxiliary::remove`] also deletes the working directory.
pub struct Auxiliary {
    pub dir: PathBuf,
    pub pgdata: PathBuf,
    pub port: u16,
    pub sockdir: PathBuf,
    pub log: PathBuf,
    bindir: PathBuf,
    /// The data directory's owner: PostgreSQL runs as it (recman may run as root).
    uid: u32,
    gid: u32,
    /// The role recman connects as (PGUSER, else the owner's name).
    user: String,
    running: bool,
}

impl Auxiliary {
    /// Writes the scratch-safe settings (and `extra`, e.g. recovery targets) into the restored
    /// directory `pgdata_in(dir)` and prepares its socket directory; nothing is started.
    pub fn configure(dir: &Path, port: u16, extra: &[String]) -> Result<Auxiliary, EngineError> {
        let pgdata = pgdata_in(dir);
        let major = major_of(&pgdata)?;
        let md = std::fs::metadata(&pgdata).map_err(|e| EngineError::io("read", &pgdata, e))?;
        if md.uid() == 0 {
            return Err(crate::refusal::Cluster::OwnedByRoot {
                pgdata: pgdata.display().to_string(),
            }
            .into());
        }
        let sockdir = dir.join("sock");
        std::fs::create_dir_all(&sockdir).map_err(|e| EngineError::io("create", &sockdir, e))?;
        let hba = dir.join("pg_hba.conf");
        std::fs::write(&hba, "local all all trust\n")
            .map_err(|e| EngineError::io("write", &hba, e))?;
        for p in [dir, sockdir.as_path(), hba.as_path()] {
            let _ = std::os::unix::fs::chown(p, Some(md.uid()), Some(md.gid()));
        }
        // Slots of the source would keep WAL and refer to standbys that are not there.
        let slots = pgdata.join("pg_replslot");
        if let Ok(rd) = std::fs::read_dir(&slots) {
            for e in rd.flatten() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let mut settings = vec![
            format!("port = {port}"),
            "listen_addresses = '127.0.0.1'".to_string(),
            format!(
                "unix_socket_directories = {}",
                quote_conf(&sockdir.display().to_string())
            ),
            format!("hba_file = {}", quote_conf(&hba.display().to_string())),
            "archive_mode = 'off'".into(),
            "max_wal_senders = 0".into(),
            "synchronous_standby_names = ''".into(),
            "primary_conninfo = ''".into(),
            "hot_standby = 'off'".into(),
            "shared_buffers = '32MB'".into(),
            "max_connections = 20".into(),
            "logging_collector = 'off'".into(),
        ];
        settings.extend(extra.iter().cloned());
        append_settings(&pgdata, "auxiliary instance (scratch-safe)", &settings)?;
        let user = std::env::var("PGUSER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| user_name(md.uid()));
        Ok(Auxiliary {
            dir: dir.to_path_buf(),
            log: dir.join("server.log"),
            pgdata,
            port,
            sockdir,
            bindir: bindir(major),
            uid: md.uid(),
            gid: md.gid(),
            user,
            running: false,
        })
    }

    /// A PostgreSQL program of the instance's major, run as the data directory's owner.
    pub fn program(&self, name: &str) -> Command {
        let exe = if self.bindir.as_os_str().is_empty() {
            PathBuf::from(name)
        } else {
            self.bindir.join(name)
        };
        let mut cmd = Command::new(exe);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.uid(self.uid).gid(self.gid);
        }
        cmd.stdin(Stdio::null()).current_dir(&self.dir);
        cmd
    }

    /// Connection arguments for libpq programs (psql, pg_amcheck, pg_dump).
    pub fn conn_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.sockdir.display().to_string(),
            "-p".into(),
            self.port.to_string(),
            "-U".into(),
            self.user.clone(),
        ]
    }

    fn run(&self, mut cmd: Command, what: &str) -> Result<Output, EngineError> {
        cmd.output().map_err(|e| {
            EngineError::io(
                "run",
                format!(
                    "{what} ({}); hint: install PostgreSQL's programs or set RECMAN_PG_BINDIR",
                    self.bindir.display()
                ),
                e,
            )
        })
    }

    /// Starts the server without waiting; see [`Auxiliary::wait_open`].
    pub fn start(&mut self) -> Result<(), EngineError> {
        let mut cmd = self.program("pg_ctl");
        cmd.arg("-D")
            .arg(&self.pgdata)
            .arg("-l")
            .arg(&self.log)
            .args(["-W", "start"]);
        let out = self.run(cmd, "pg_ctl start")?;
        if !out.status.success() {
            return Err(EngineError::Failed {
                kind: crate::error::ErrorKind::Io,
                message: format!(
                    "pg_ctl could not start the auxiliary instance in {}: {}; hint: see {}",
                    self.pgdata.display(),
                    String::from_utf8_lossy(&out.stderr).trim(),
                    self.log.display()
                ),
            });
        }
        self.running = true;
        Ok(())
    }

    /// Waits until recovery has ended and the server accepts connections (it has promoted),
    /// or fails when the server stopped, saying why from its log.
    pub fn wait_open(&self, timeout: Duration) -> Result<(), EngineError> {
        let t0 = Instant::now();
        // pg_ctl -W returns before the postmaster has written its pid file: until it is seen
        // running once, "not running" only means "not yet" (for a while).
        let mut seen = false;
        loop {
            if let Ok(v) = self.psql("postgres", "select pg_is_in_recovery()")
                && v.trim() == "f"
            {
                return Ok(());
            }
            let alive = self.server_alive();
            seen |= alive;
            if !alive && (seen || t0.elapsed() > Duration::from_secs(30)) {
                return Err(EngineError::Failed {
                    kind: crate::error::ErrorKind::Io,
                    message: format!(
                        "the auxiliary instance in {} stopped before it opened: {}; hint: see {}",
                        self.pgdata.display(),
                        self.log_reason(),
                        self.log.display()
                    ),
                });
            }
            if t0.elapsed() > timeout {
                return Err(EngineError::Transient(format!(
                    "the auxiliary instance in {} did not open within {}s; hint: see {}",
                    self.pgdata.display(),
                    timeout.as_secs(),
                    self.log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn server_alive(&self) -> bool {
        let mut cmd = self.program("pg_ctl");
        cmd.arg("-D").arg(&self.pgdata).arg("status");
        matches!(cmd.output(), Ok(o) if o.status.success())
    }

    /// The server log's FATAL/PANIC lines (the last few), else its last line.
    pub fn log_reason(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let bad: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("FATAL:") || l.contains("PANIC:"))
            .collect();
        let lines = if bad.is_empty() {
            text.lines().rev().take(1).collect::<Vec<_>>()
        } else {
            bad[bad.len().saturating_sub(2)..].to_vec()
        };
        let s = lines.join(" / ");
        if s.is_empty() {
            "the server log is empty".into()
        } else {
            s
        }
    }

    /// Runs `sql` in database `db`; Ok is psql's unaligned, tuples-only output, Err its error.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let mut cmd = self.program("psql");
        cmd.args(self.conn_args()).args([
            "-X",
            "-A",
            "-t",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            db,
            "-c",
            sql,
        ]);
        match cmd.output() {
            Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            Err(e) => Err(format!("cannot run psql: {e}")),
        }
    }

    /// Stops a server this value started (fast, then immediate).
    pub fn stop(&mut self) -> Result<(), EngineError> {
        if !self.running {
            return Ok(());
        }
        for mode in ["fast", "immediate"] {
            let mut cmd = self.program("pg_ctl");
            cmd.arg("-D")
                .arg(&self.pgdata)
                .args(["-m", mode, "-w", "-t", "120", "stop"]);
            if matches!(cmd.output(), Ok(o) if o.status.success()) || !self.server_alive() {
                self.running = false;
                return Ok(());
            }
        }
        Err(EngineError::Failed {
            kind: crate::error::ErrorKind::Io,
            message: format!(
                "could not stop the auxiliary instance in {}; hint: pg_ctl -D {} stop -m immediate",
                self.pgdata.display(),
                self.pgdata.display()
            ),
        })
    }

    /// Keeps the server running past this value (for `--keep`).
    pub fn detach(&mut self) {
        self.running = false;
    }

    /// Stops the server and deletes the working directory.
    pub fn remove(mut self) -> Result<(), EngineError> {
        self.stop()?;
        std::fs::remove_dir_all(&self.dir).map_err(|e| EngineError::io("remove", &self.dir, e))
    }
}

impl Drop for Auxiliary {
    fn drop(&mut self) {
        if self.running {
            let mut cmd = self.program("pg_ctl");
            cmd.arg("-D")
                .arg(&self.pgdata)
                .args(["-m", "immediate", "-w", "stop"]);
            let _ = cmd.output();
        }
    }
}

/// Appends `settings` to `pgdata/postgresql.auto.conf` under a comment naming `why`.
pub fn append_settings(pgdata: &Path, why: &str, settings: &[String]) -> Result<(), EngineError> {
    let auto = pgdata.join("postgresql.auto.conf");
    let mut text = std::fs::read_to_string(&auto).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("# {why}: written by recman\n"));
    for s in settings {
        text.push_str(s);
        text.push('\n');
    }
    std::fs::write(&auto, text).map_err(|e| EngineError::io("write", &auto, e))
}

/// The login name of `uid`, or the uid as text.
fn user_name(uid: u32) -> String {
    // SAFETY: getpwuid returns a pointer to static storage or null; it is read at once.
    unsafe {
        let pw = libc::getpwuid(uid);
        if pw.is_null() || (*pw).pw_name.is_null() {
            return uid.to_string();
        }
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_is_refused_with_a_hint() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let e = pick_port(Some(port)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("port {port} is taken")) && e.contains("hint"),
            "{e}"
        );
        assert!(pick_port(None).unwrap() > 0);
    }

    #[test]
    fn a_non_empty_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("x"), "").unwrap();
        let e = claim_dir(d.path()).unwrap_err().to_string();
        assert!(e.contains("is not empty") && e.contains("hint"), "{e}");
        let fresh = d.path().join("new");
        claim_dir(&fresh).unwrap();
        assert!(fresh.is_dir());
    }
}
