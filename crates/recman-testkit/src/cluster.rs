//! Throwaway PostgreSQL clusters: creating, starting and stopping them.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

use crate::binary::*;
use crate::host::*;

/// A port no other cluster or test server of this process uses, and free on 127.0.0.1 at
/// the time (clusters do not listen on TCP; the port names the socket file).
pub fn free_port() -> u16 {
    recman_media::testkit::pick_port().expect("bind 127.0.0.1:0 to pick a port")
}

/// Options for [`Cluster::init_with`]. `Default` is a cluster with data
/// checksums and *no* WAL archiving.
#[derive(Clone, Debug)]
pub struct ClusterOpts {
    /// Archive WAL into this repository with `recman --repo <repo>
    /// archive-push %p` (archive_mode=on); `None` sets archive_mode=off.
    pub archive_repo: Option<PathBuf>,
    /// `initdb --data-checksums` (default true).
    pub data_checksums: bool,
    /// Extra initdb arguments, e.g. `--wal-segsize=64`.
    pub initdb_args: Vec<String>,
    /// Lines appended to postgresql.conf after the harness's own, so they
    /// win (e.g. `archive_command = 'false'` to test archive failures).
    pub extra_conf: Vec<String>,
    /// Start the cluster once created (default true).
    pub start: bool,
}

impl Default for ClusterOpts {
    fn default() -> Self {
        ClusterOpts {
            archive_repo: None,
            data_checksums: true,
            initdb_args: Vec::new(),
            extra_conf: Vec::new(),
            start: true,
        }
    }
}

impl ClusterOpts {
    /// Default options plus archiving into `repo`.
    pub fn archiving(repo: &Path) -> Self {
        ClusterOpts {
            archive_repo: Some(repo.to_path_buf()),
            ..Default::default()
        }
    }
}

/// The `archive_command` value the harness uses for `repo`.
pub fn archive_command(repo: &Path) -> String {
    format!(
        "\"{}\" --repo \"{}\" archive-push %p",
        recman_bin().display(),
        repo.display()
    )
}

/// Quotes a value for postgresql.conf.
pub(crate) fn conf_quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// Quotes an SQL literal.
pub fn sql_literal(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// Quotes an SQL identifier.
pub fn sql_ident(v: &str) -> String {
    format!("\"{}\"", v.replace('"', "\"\""))
}

/// Last `n` lines of a file, or a note why there are none.
pub fn file_tail(path: &Path, n: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("(no log at {}: {e})", path.display()),
    }
}

/// One throwaway PostgreSQL cluster. See the module docs for its layout.
pub struct Cluster {
    /// Temp dir holding the socket dir, the server log and (except for
    /// adopted data dirs) `pgdata`.
    pub dir: PathBuf,
    pub pgdata: PathBuf,
    pub port: u16,
    pub sockdir: PathBuf,
    /// Server log (pg_ctl -l).
    pub log: PathBuf,
    /// Repository WAL is archived to, if any (clusters made by init).
    pub archive_repo: Option<PathBuf>,
    pub(crate) tmp: Option<TempDir>,
}

impl Cluster {
    /// A started cluster archiving WAL into `repo` via recman. The
    /// repository should exist before WAL is archived (`recman create
    /// catalog`), otherwise archiving fails and PostgreSQL retries.
    pub fn init(repo: &Path) -> Cluster {
        Cluster::init_with(ClusterOpts::archiving(repo))
    }

    /// initdb + harness config (+ start unless `opts.start` is false).
    pub fn init_with(opts: ClusterOpts) -> Cluster {
        let tmp = cluster_tempdir("recman-pg-");
        let dir = tmp.path().to_path_buf();
        let pgdata = dir.join("pgdata");
        let sockdir = dir.join("sock");
        fs::create_dir(&sockdir).expect("create socket dir");
        chown_to_cluster_user(&sockdir);
        let port = free_port();

        let mut initdb = Command::new(pg_bin("initdb"));
        initdb
            .arg("-D")
            .arg(&pgdata)
            .args(["--auth=trust", "-U", "postgres", "--encoding=UTF8"])
            .arg("--locale=C")
            // Durability of initdb's own files is not what we test; syncing
            // them costs seconds per cluster on CI disks.
            .arg("--no-sync");
        // Only quietens the "start the server with" lines; initdb learnt it in 14.
        if server_major() >= 14 {
            initdb.arg("--no-instructions");
        }
        // Explicit both ways: initdb enables checksums by default from PostgreSQL 18 on.
        if opts.data_checksums {
            initdb.arg("--data-checksums");
        } else if server_major() >= 18 {
            initdb.arg("--no-data-checksums");
        }
        initdb.args(&opts.initdb_args);
        as_cluster_user(&mut initdb);
        let out = run_output(&mut initdb);
        assert!(
            out.status.success(),
            "initdb failed for {}\n{}",
            pgdata.display(),
            show_output(&out)
        );

        let mut conf = String::from("\n# --- recman test harness ---\n");
        let mut set = |k: &str, v: &str| {
            writeln!(conf, "{k} = {v}").unwrap();
        };
        set("listen_addresses", "''");
        set("port", &port.to_string());
        set("unix_socket_directories", &conf_quote(path_str(&sockdir)));
        // fsync stays on: recman's durability paths are under test.
        set("synchronous_commit", "off");
        set("wal_level", "replica");
        set("max_wal_senders", "5");
        // Small, so that pgbench runs cross checkpoints and recycle WAL.
        set("max_wal_size", "'64MB'");
        set("min_wal_size", "'32MB'");
        set("shared_buffers", "'32MB'");
        set("max_connections", "40");
        set("log_checkpoints", "on");
        set("log_line_prefix", "'%m [%p] '");
        match &opts.archive_repo {
            Some(repo) => {
                set("archive_mode", "on");
                set("archive_command", &conf_quote(&archive_command(repo)));
            }
            None => set("archive_mode", "off"),
        }
        for line in &opts.extra_conf {
            conf.push_str(line);
            conf.push('\n');
        }
        let conf_path = pgdata.join("postgresql.conf");
        fs::OpenOptions::new()
            .append(true)
            .open(&conf_path)
            .and_then(|mut f| f.write_all(conf.as_bytes()))
            .unwrap_or_else(|e| panic!("append to {}: {e}", conf_path.display()));

        let cluster = Cluster {
            log: dir.join("server.log"),
            dir,
            pgdata,
            port,
            sockdir,
            archive_repo: opts.archive_repo.clone(),
            tmp: Some(tmp),
        };
        if opts.start {
            cluster.start();
        }
        cluster
    }

    /// Adopts a data dir made by `recman restore` and starts it (see
    /// [`Cluster::adopt`]); it may still be in recovery when this returns:
    /// call [`Cluster::wait_recovery_done`].
    pub fn from_restored(pgdata: PathBuf) -> Cluster {
        let c = Cluster::adopt(pgdata);
        c.start();
        c
    }

    /// Adopts a data dir without starting it. The data dir is not owned:
    /// drop stops the server but leaves `pgdata` to whoever made it. Its
    /// config still names the source's port and socket dir, so
    /// [`Cluster::start`] overrides both on the command line instead of
    /// editing the restored files. Ownership and permissions are left as the
    /// restore made them: PostgreSQL refusing them is a finding.
    pub fn adopt(pgdata: PathBuf) -> Cluster {
        let tmp = cluster_tempdir("recman-pg-restored-");
        let dir = tmp.path().to_path_buf();
        let sockdir = dir.join("sock");
        fs::create_dir(&sockdir).expect("create socket dir");
        chown_to_cluster_user(&sockdir);
        Cluster {
            log: dir.join("server.log"),
            dir,
            pgdata,
            port: free_port(),
            sockdir,
            archive_repo: None,
            tmp: Some(tmp),
        }
    }

    pub(crate) fn pg_ctl(&self) -> Command {
        let mut cmd = Command::new(pg_bin("pg_ctl"));
        cmd.arg("-D").arg(&self.pgdata);
        as_cluster_user(&mut cmd);
        cmd
    }

    /// Server log tail, for panic messages.
    pub fn log_tail(&self) -> String {
        file_tail(&self.log, LOG_TAIL_LINES)
    }

    pub(crate) fn failure(&self, what: &str, detail: &str) -> String {
        format!(
            "{what} (cluster dir {}, pgdata {}, port {})\n{detail}\n--- server log tail ({}) ---\n{}",
            self.dir.display(),
            self.pgdata.display(),
            self.port,
            self.log.display(),
            self.log_tail()
        )
    }

    /// `pg_ctl start -w`; Err carries pg_ctl's output and the log tail.
    pub fn try_start(&self) -> Result<(), String> {
        let opts = format!(
            "-p {} -c unix_socket_directories='{}' -c listen_addresses=''",
            self.port,
            self.sockdir.display()
        );
        let mut cmd = self.pg_ctl();
        cmd.arg("-l").arg(&self.log).args([
            "-w",
            "-t",
            &PG_CTL_TIMEOUT_S.to_string(),
            "-o",
            &opts,
            "start",
        ]);
        let out = run_output(&mut cmd);
        if out.status.success() {
            Ok(())
        } else {
            Err(self.failure("PostgreSQL did not start", &show_output(&out)))
        }
    }

    /// Starts the server, waiting until it accepts connections (a server in
    /// archive recovery may accept them before recovery is done).
    pub fn start(&self) {
        if let Err(e) = self.try_start() {
            panic!("{e}");
        }
    }

    pub(crate) fn stop_mode(&self, mode: &str) -> Result<(), String> {
        let mut cmd = self.pg_ctl();
        cmd.args([
            "-m",
            mode,
            "-w",
            "-t",
            &PG_CTL_TIMEOUT_S.to_string(),
            "stop",
        ]);
        let out = run_output(&mut cmd);
        if out.status.success() {
            Ok(())
        } else {
            Err(self.failure(&format!("pg_ctl stop -m {mode} failed"), &show_output(&out)))
        }
    }

    /// Clean shutdown (fast mode: ends sessions, checkpoints).
    pub fn stop(&self) {
        if let Err(e) = self.stop_mode("fast") {
            panic!("{e}");
        }
    }

    /// Crash-like shutdown: the next start runs crash recovery.
    pub fn stop_immediate(&self) {
        if let Err(e) = self.stop_mode("immediate") {
            panic!("{e}");
        }
    }

    pub fn restart(&self) {
        self.stop();
        self.start();
    }

    /// True when `pg_ctl status` finds a live postmaster.
    pub fn is_running(&self) -> bool {
        self.pgdata.join("postmaster.pid").exists()
            && self
                .pg_ctl()
                .arg("status")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
    }
}
