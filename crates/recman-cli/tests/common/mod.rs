//! Shared harness for recman's integration tests: throwaway, real PostgreSQL
//! clusters (Debian's 15 unless `RECMAN_TEST_PG_BINDIR` names another major's server) and a way to run the `recman` binary against them.
//!
//! Use it from a test file with `mod common;` and `use common::*;`.
//!
//! # Who runs what
//! PostgreSQL refuses to run as root, and `cargo test` in CI runs as root. So
//! when the test process is root, every PostgreSQL program (initdb, pg_ctl,
//! psql, pgbench, pg_amcheck, ...) *and* the recman binary run as the
//! `postgres` OS user, exactly as an operator would run recman on a database
//! host. When the tests run as an ordinary user, everything runs as that user.
//! Files a test creates itself while root are root's: hand them over with
//! [`chown_to_cluster_user`] when recman or PostgreSQL must write them.
//!
//! # Layout of a cluster
//! Each [`Cluster`] owns a temp dir under `/tmp` (short enough for the 107-byte
//! unix socket path limit) holding `pgdata/`, `sock/` (its unix socket dir) and
//! `server.log`. It listens on no TCP address (`listen_addresses=''`); its port
//! only names the socket file, yet ports are still unique per process so that
//! conninfo strings never collide. Dropping a cluster stops it (immediate mode)
//! and removes the dir; set `RECMAN_TEST_KEEP=1` to keep dirs for a post-mortem.
//! When a test panics, dropping a cluster also prints its server log tail.
//!
//! # Environment
//! - `RECMAN_TEST_PG_BINDIR`: bin dir of the PostgreSQL server to test (default
//!   `/usr/lib/postgresql/15/bin`, then `pg_config --bindir`). Programs it lacks (psql,
//!   pgbench, pg_amcheck, ...) come from the default; scripts/test-majors.sh sets it to each
//!   supported major in turn.
//! - `RECMAN_TEST_KEEP=1`: keep cluster, repo and scratch dirs.
//!
//! Children never inherit `PG*` or `RECMAN_*` variables from the test process:
//! a developer's `PGHOST` or `RECMAN_REPO` must not change what a test does.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Major of Debian's PostgreSQL, the harness's default server and the source of client tools.
pub const PG_MAJOR: u32 = 15;

/// Seconds pg_ctl may wait for a start or stop; crash recovery of a busy
/// cluster on a 2-core CI machine can take a while.
const PG_CTL_TIMEOUT_S: u32 = 120;

/// How long [`Cluster::switch_wal_and_wait_archived`] waits.
const ARCHIVE_TIMEOUT: Duration = Duration::from_secs(90);

/// Lines of server log shown in panics.
const LOG_TAIL_LINES: usize = 40;

// ---------------------------------------------------------------------------
// The OS user clusters and recman run as
// ---------------------------------------------------------------------------

/// The identity children run under when the test process is root.
#[derive(Clone, Debug)]
pub struct ClusterUser {
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

/// `Some(postgres)` when the tests run as root, `None` when children run as
/// the current user.
pub fn cluster_user() -> Option<&'static ClusterUser> {
    static USER: OnceLock<Option<ClusterUser>> = OnceLock::new();
    USER.get_or_init(|| {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let id = |flag: &str| -> u32 {
            let out = Command::new("id")
                .args([flag, "postgres"])
                .output()
                .expect("cannot run `id`");
            if !out.status.success() {
                panic!(
                    "the tests run as root but there is no `postgres` OS user; PostgreSQL \
                     refuses to run as root. Run scripts/setup.sh (installs postgresql-15) \
                     or run the tests as an ordinary user. id said: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("`id` printed a non-numeric id")
        };
        let home = Command::new("getent")
            .args(["passwd", "postgres"])
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .split(':')
                    .nth(5)
                    .map(PathBuf::from)
            })
            .filter(|h| h.is_dir())
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        Some(ClusterUser {
            uid: id("-u"),
            gid: id("-g"),
            home,
        })
    })
    .as_ref()
}

/// Makes `cmd` run as the cluster user with a scrubbed environment and a
/// working dir that user can enter (PostgreSQL programs call getcwd and fail
/// when the test's cwd, e.g. a checkout under /root, is closed to them).
pub fn as_cluster_user(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("PG") || k.starts_with("RECMAN_") {
            cmd.env_remove(&key);
        }
    }
    cmd.current_dir("/");
    if let Some(u) = cluster_user() {
        cmd.uid(u.uid)
            .gid(u.gid)
            .env("HOME", &u.home)
            .env("USER", "postgres")
            .env("LOGNAME", "postgres");
    }
    cmd
}

/// Gives `path` (not recursive) to the cluster user; a no-op when not root.
pub fn chown_to_cluster_user(path: &Path) {
    if let Some(u) = cluster_user() {
        std::os::unix::fs::lchown(path, Some(u.uid), Some(u.gid))
            .unwrap_or_else(|e| panic!("chown {} to postgres: {e}", path.display()));
    }
}

/// Gives `path` and everything below it to the cluster user.
pub fn chown_tree_to_cluster_user(path: &Path) {
    if cluster_user().is_none() {
        return;
    }
    chown_to_cluster_user(path);
    let meta =
        fs::symlink_metadata(path).unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
    if meta.is_dir() {
        for entry in
            fs::read_dir(path).unwrap_or_else(|e| panic!("read dir {}: {e}", path.display()))
        {
            chown_tree_to_cluster_user(&entry.expect("read dir entry").path());
        }
    }
}

/// Can the cluster user traverse to and read/execute `path`? (`test` run as
/// that user; path permissions are too easy to get wrong by hand.)
fn cluster_user_can(flag: &str, path: &Path) -> bool {
    as_cluster_user(Command::new("test").arg(flag).arg(path))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Makes a fresh temp dir under /tmp owned by the cluster user, mode 0700.
fn cluster_tempdir(prefix: &str) -> TempDir {
    let mut dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .expect("create temp dir in /tmp");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).expect("chmod temp dir");
    chown_to_cluster_user(dir.path());
    if keep_dirs() {
        dir.disable_cleanup(true);
    }
    dir
}

fn keep_dirs() -> bool {
    std::env::var_os("RECMAN_TEST_KEEP").is_some_and(|v| v == "1")
}

/// A temp dir for a repository: exists, is empty and is owned by the cluster
/// user; it is *not* a repository yet (the test runs `recman create catalog`).
/// Keep the `TempDir` alive as long as the path is used.
pub fn new_repo() -> (TempDir, PathBuf) {
    let dir = cluster_tempdir("recman-repo-");
    let path = dir.path().to_path_buf();
    (dir, path)
}

/// A scratch dir owned by the cluster user, e.g. to hold a restore target
/// (`recman restore database --to <dir>/restored`).
pub fn new_scratch_dir() -> (TempDir, PathBuf) {
    let dir = cluster_tempdir("recman-scratch-");
    let path = dir.path().to_path_buf();
    (dir, path)
}

/// `path` as `&str` for argument lists; temp paths are always UTF-8.
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("non-UTF-8 path")
}

// ---------------------------------------------------------------------------
// Binaries
// ---------------------------------------------------------------------------

/// Directory of Debian's PostgreSQL 15 programs: the default server, and the client tools
/// (psql, pgbench, pg_amcheck, ...) for every major, since the packaged servers of the other
/// majors (scripts/setup.sh, setup_pg_majors) carry only initdb, pg_ctl and postgres.
fn default_bindir() -> &'static Path {
    static BINDIR: OnceLock<PathBuf> = OnceLock::new();
    BINDIR.get_or_init(|| {
        let default = PathBuf::from(format!("/usr/lib/postgresql/{PG_MAJOR}/bin"));
        if default.join("initdb").is_file() {
            return default;
        }
        let out = Command::new("pg_config").arg("--bindir").output();
        match out {
            Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
            _ => panic!(
                "PostgreSQL {PG_MAJOR} not found: no {} and no pg_config on PATH; \
                 run scripts/setup.sh",
                default.display()
            ),
        }
    })
}

/// The server's bin dir: `RECMAN_TEST_PG_BINDIR` when set (scripts/test-majors.sh points it
/// at another major), else Debian's 15.
fn server_bindir() -> &'static Path {
    static BINDIR: OnceLock<PathBuf> = OnceLock::new();
    BINDIR.get_or_init(|| match std::env::var_os("RECMAN_TEST_PG_BINDIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(
                dir.join("initdb").is_file() && dir.join("postgres").is_file(),
                "RECMAN_TEST_PG_BINDIR={} holds no initdb and postgres; \
                 run scripts/setup.sh's setup_pg_majors or fix the variable",
                dir.display()
            );
            dir
        }
        None => default_bindir().to_path_buf(),
    })
}

/// Full path of a PostgreSQL program such as `initdb` or `psql`: from the server's bin dir
/// when it has it, else Debian's 15 (a client tool talking to another major).
pub fn pg_bin(name: &str) -> PathBuf {
    let own = server_bindir().join(name);
    if own.is_file() {
        own
    } else {
        default_bindir().join(name)
    }
}

/// Major version of the server binaries the tests run (15 unless `RECMAN_TEST_PG_BINDIR`
/// names another), from `postgres --version`.
pub fn server_major() -> u32 {
    static MAJOR: OnceLock<u32> = OnceLock::new();
    *MAJOR.get_or_init(|| {
        let bin = server_bindir().join("postgres");
        let out = Command::new(&bin)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        // "postgres (PostgreSQL) 17.10", Debian's with " (Debian 15.18-0+deb12u1)" after it.
        text.split_whitespace()
            .skip_while(|w| *w != "(PostgreSQL)")
            .nth(1)
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "cannot read a major from {} --version: {text:?}",
                    bin.display()
                )
            })
    })
}

/// The recman binary as the cluster user can execute it.
///
/// Cargo's binary lives in the checkout's target dir; when a directory above
/// it is closed to postgres (a checkout under /root, say), a copy under /tmp
/// is used, keyed by size and mtime so test binaries share it.
pub fn recman_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let built = PathBuf::from(env!("CARGO_BIN_EXE_recman"));
        if cluster_user().is_none() || cluster_user_can("-x", &built) {
            return built;
        }
        let meta = fs::metadata(&built)
            .unwrap_or_else(|e| panic!("recman binary {}: {e}", built.display()));
        let dir = Path::new("/tmp/recman-test-bin").join(format!(
            "{}-{}-{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        ));
        let copy = dir.join("recman");
        if !copy.is_file() {
            fs::create_dir_all(&dir).expect("create /tmp/recman-test-bin");
            for d in [dir.parent().unwrap(), dir.as_path()] {
                fs::set_permissions(d, fs::Permissions::from_mode(0o755)).expect("chmod bin dir");
            }
            // Copy then rename so concurrent test binaries never see half a file.
            let partial = dir.join(format!("recman.partial.{}", std::process::id()));
            fs::copy(&built, &partial).expect("copy recman binary");
            fs::set_permissions(&partial, fs::Permissions::from_mode(0o755))
                .expect("chmod recman copy");
            fs::rename(&partial, &copy).expect("rename recman copy");
        }
        assert!(
            cluster_user_can("-x", &copy),
            "postgres cannot execute {} (nor {})",
            copy.display(),
            built.display()
        );
        copy
    })
}

/// A `recman` command as the cluster user, env scrubbed of `PG*`/`RECMAN_*`,
/// cwd `/`. Add `.env(..)` for variables a test wants to pass.
pub fn recman_cmd<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(recman_bin());
    cmd.args(args);
    as_cluster_user(&mut cmd);
    cmd
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

fn run_output(cmd: &mut Command) -> Output {
    eprintln!("$ {}", describe(cmd));
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", describe(cmd)))
}

fn show_output(out: &Output) -> String {
    format!(
        "exit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs recman with `args`; the command line is echoed to the (captured)
/// test output.
pub fn recman<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_output(&mut recman_cmd(args))
}

/// Like [`recman`] with extra environment variables.
pub fn recman_env<I, S>(args: I, env: &[(&str, &str)]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = recman_cmd(args);
    cmd.envs(env.iter().copied());
    run_output(&mut cmd)
}

/// Runs recman, panics with its output unless it succeeds; returns stdout.
pub fn recman_ok<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = recman_cmd(args);
    let out = run_output(&mut cmd);
    assert!(
        out.status.success(),
        "recman failed: {}\n{}",
        describe(&cmd),
        show_output(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs recman, panics with its output if it succeeds; returns stderr.
pub fn recman_err<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = recman_cmd(args);
    let out = run_output(&mut cmd);
    assert!(
        !out.status.success(),
        "recman unexpectedly succeeded: {}\n{}",
        describe(&cmd),
        show_output(&out)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a PostgreSQL program (or anything) as the cluster user, panicking
/// with its output unless it succeeds; returns stdout.
pub fn run_as_cluster_user_ok(cmd: &mut Command) -> String {
    as_cluster_user(cmd);
    let out = run_output(cmd);
    assert!(
        out.status.success(),
        "command failed: {}\n{}",
        describe(cmd),
        show_output(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------------------------------------------------------------------------
// Clusters
// ---------------------------------------------------------------------------

/// A port no other cluster of this process uses, and free on 127.0.0.1 at
/// the time (clusters do not listen on TCP; the port names the socket file).
fn free_port() -> u16 {
    static USED: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("bind 127.0.0.1:0 to pick a port");
        if port >= 1024 && USED.lock().unwrap().insert(port) {
            return port;
        }
    }
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
fn conf_quote(v: &str) -> String {
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
    tmp: Option<TempDir>,
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

    fn pg_ctl(&self) -> Command {
        let mut cmd = Command::new(pg_bin("pg_ctl"));
        cmd.arg("-D").arg(&self.pgdata);
        as_cluster_user(&mut cmd);
        cmd
    }

    /// Server log tail, for panic messages.
    pub fn log_tail(&self) -> String {
        file_tail(&self.log, LOG_TAIL_LINES)
    }

    fn failure(&self, what: &str, detail: &str) -> String {
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

    fn stop_mode(&self, mode: &str) -> Result<(), String> {
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

    /// Connection string for database `postgres`.
    pub fn conninfo(&self) -> String {
        self.conninfo_db("postgres")
    }

    pub fn conninfo_db(&self, db: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={db}",
            self.sockdir.display(),
            self.port
        )
    }

    fn client(&self, program: &str) -> Command {
        let mut cmd = Command::new(pg_bin(program));
        cmd.arg("-h")
            .arg(&self.sockdir)
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-U", "postgres"]);
        as_cluster_user(&mut cmd);
        cmd
    }

    /// Runs SQL in database `db`. Statements run one by one (fed on stdin,
    /// not `-c`), so VACUUM or CREATE DATABASE work; output is unaligned,
    /// tuples only, without the trailing newline.
    pub fn try_psql_db(&self, db: &str, sql: &str) -> Result<String, String> {
        let mut cmd = self.client("psql");
        cmd.args([
            "-X",
            "-A",
            "-t",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            db,
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("cannot run psql: {e}"))?;
        let mut stdin = child.stdin.take().unwrap();
        let input = sql.to_owned();
        // A writer thread, so a large script cannot deadlock against a
        // large result filling the stdout pipe.
        let writer = thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let out = child.wait_with_output().map_err(|e| format!("psql: {e}"))?;
        let _ = writer.join();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout)
                .trim_end_matches('\n')
                .to_owned())
        } else {
            Err(format!(
                "psql on port {} db {db} failed ({}):\n{}\nSQL: {sql}",
                self.port,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            ))
        }
    }

    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        self.try_psql_db("postgres", sql)
    }

    /// Like [`Cluster::try_psql_db`], panicking with psql's stderr.
    pub fn psql_db(&self, db: &str, sql: &str) -> String {
        self.try_psql_db(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs SQL in database `postgres`, panicking with psql's stderr.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_db("postgres", sql)
    }

    /// Waits until the server answers pg_isready.
    pub fn wait_ready(&self, timeout: Duration) {
        let start = Instant::now();
        loop {
            let ok = self
                .client("pg_isready")
                .arg("-q")
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return;
            }
            if start.elapsed() > timeout {
                panic!(
                    "{}",
                    self.failure(&format!("not ready after {timeout:?}"), "")
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until `pg_is_in_recovery()` is false (recovery finished and the
    /// server promoted itself). Panics with the log tail on timeout or when
    /// the server died.
    pub fn wait_recovery_done(&self, timeout: Duration) {
        let start = Instant::now();
        let mut last;
        loop {
            last = match self.try_psql("select pg_is_in_recovery()") {
                Ok(v) if v == "f" => return,
                Ok(v) => format!("pg_is_in_recovery() = {v}"),
                Err(e) => e,
            };
            if !self.pgdata.join("postmaster.pid").exists() {
                panic!("{}", self.failure("server exited during recovery", &last));
            }
            if start.elapsed() > timeout {
                panic!(
                    "{}",
                    self.failure(&format!("recovery not done after {timeout:?}"), &last)
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// `pgbench -i -s <scale>` into database `postgres`.
    pub fn pgbench_init(&self, scale: u32) {
        let mut cmd = self.client("pgbench");
        cmd.args(["-i", "-q", "-s", &scale.to_string(), "postgres"]);
        let out = run_output(&mut cmd);
        assert!(
            out.status.success(),
            "{}",
            self.failure("pgbench -i failed", &show_output(&out))
        );
    }

    /// Starts a pgbench TPC-B-like run for `seconds` with `clients` in the
    /// background (e.g. while a backup runs). Its output goes to
    /// `<dir>/pgbench-<n>.log`; wait on the child (or kill it) yourself.
    /// pgbench exits non-zero if the server goes away under it.
    pub fn pgbench_background(&self, seconds: u32, clients: u32) -> Child {
        static N: Mutex<u32> = Mutex::new(0);
        let n = {
            let mut g = N.lock().unwrap();
            *g += 1;
            *g
        };
        let log_path = self.dir.join(format!("pgbench-{n}.log"));
        let log = fs::File::create(&log_path).expect("create pgbench log");
        let mut cmd = self.client("pgbench");
        cmd.args([
            "-n",
            "-T",
            &seconds.to_string(),
            "-c",
            &clients.to_string(),
            "-j",
            "1",
            "postgres",
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("dup pgbench log"))
        .stderr(log);
        eprintln!("$ {} &", describe(&cmd));
        cmd.spawn().expect("spawn pgbench")
    }

    /// Non-system databases that accept connections (always incl. postgres).
    pub fn databases(&self) -> Vec<String> {
        self.psql(
            "select datname from pg_database where datallowconn and not datistemplate \
             order by 1",
        )
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// Content fingerprint of every permanent user table in `db`: maps
    /// `schema.table` to `<rowcount>:<md5 of the sorted row md5s>`.
    /// Unlogged tables are left out (recovery empties them by design).
    pub fn table_checksums(&self, db: &str) -> BTreeMap<String, String> {
        let tables = self.psql_db(
            db,
            "select format('%I.%I', n.nspname, c.relname) \
             from pg_class c join pg_namespace n on n.oid = c.relnamespace \
             where c.relkind = 'r' and c.relpersistence = 'p' \
               and n.nspname not in ('pg_catalog', 'information_schema') \
               and n.nspname not like 'pg\\_toast%' and n.nspname not like 'pg\\_temp%' \
             order by 1",
        );
        let mut script = String::new();
        for t in tables.lines().filter(|l| !l.is_empty()) {
            // Row md5s keep the aggregate small (1M-row tables stay cheap).
            writeln!(
                script,
                "select {lit} || E'\\t' || count(*) || ':' || \
                 coalesce(md5(string_agg(md5(r::text), '' order by md5(r::text))), '-') \
                 from {t} r;",
                lit = sql_literal(t)
            )
            .unwrap();
        }
        if script.is_empty() {
            return BTreeMap::new();
        }
        self.psql_db(db, &script)
            .lines()
            .map(|l| {
                let (k, v) = l.split_once('\t').expect("checksum line");
                (k.to_owned(), v.to_owned())
            })
            .collect()
    }

    /// [`Cluster::table_checksums`] for every database, keyed by db name.
    pub fn all_table_checksums(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.databases()
            .into_iter()
            .map(|db| {
                let sums = self.table_checksums(&db);
                (db, sums)
            })
            .collect()
    }

    fn run_amcheck(&self, target: &[&str]) {
        if server_major() != PG_MAJOR {
            return self.run_amcheck_sql(target);
        }
        let mut cmd = self.client("pg_amcheck");
        cmd.args(target)
            .args(["--install-missing", "--heapallindexed", "--no-strict-names"]);
        let out = run_output(&mut cmd);
        assert!(
            out.status.success(),
            "{}",
            self.failure(
                &format!("pg_amcheck {target:?} found problems"),
                &show_output(&out)
            )
        );
    }

    /// What pg_amcheck does, in SQL: Debian's 15 pg_amcheck is the only one at hand and is not
    /// made for other majors' amcheck, so for those the checks run through the extension's
    /// functions directly (verify_heapam on every table, bt_index_check with heapallindexed
    /// on every valid btree index).
    fn run_amcheck_sql(&self, target: &[&str]) {
        let dbs = if target == ["--all"] {
            self.databases()
        } else {
            vec![target[1].to_owned()]
        };
        for db in dbs {
            // verify_heapam came with amcheck 1.3 in PostgreSQL 14; on 13 the heap is checked
            // through heapallindexed only (every live tuple has its index entries).
            let heap_sql = if server_major() >= 14 {
                "select string_agg(v, E'\\n') from (
                   select format('%s block %s offset %s: %s', c.oid::regclass, h.blkno, h.offnum, h.msg) v
                   from pg_class c, lateral verify_heapam(c.oid) h
                   where c.relkind in ('r', 'm', 't') and c.relpersistence <> 't'
                 ) x;"
            } else {
                "select '';"
            };
            let found = self.psql_db(
                &db,
                &format!(
                    "create extension if not exists amcheck;
                     {heap_sql}
                     select count(bt_index_check(i.indexrelid, true))
                       from pg_index i join pg_class c on c.oid = i.indexrelid
                       join pg_am a on a.oid = c.relam
                       where a.amname = 'btree' and i.indisvalid and i.indisready
                         and c.relpersistence <> 't';"
                ),
            );
            let heap = found.lines().next().unwrap_or("").trim();
            assert!(
                heap.is_empty(),
                "{}",
                self.failure(&format!("amcheck (SQL) found problems in {db}"), heap)
            );
        }
    }

    /// Heap and btree checks (with heapallindexed) on database `db`;
    /// installs the amcheck extension there if missing. Panics with the
    /// findings.
    pub fn amcheck(&self, db: &str) {
        self.run_amcheck(&["-d", db]);
    }

    /// [`Cluster::amcheck`] on every database.
    pub fn amcheck_all(&self) {
        self.run_amcheck(&["--all"]);
    }

    /// The cluster's system identifier, which every WAL segment's first page carries.
    pub fn system_identifier(&self) -> u64 {
        self.psql("select system_identifier from pg_control_system()")
            .trim()
            .parse()
            .expect("system identifier")
    }

    /// Switches to a new WAL segment and waits until the archiver reports
    /// the finished one as archived; returns that segment's file name.
    /// Panics with pg_stat_archiver and the log tail on timeout.
    pub fn switch_wal_and_wait_archived(&self) -> String {
        // The SQL differs by major: see switch_wal_sql in recman-pg's version table.
        let sql = recman_pg::version::for_major(server_major())
            .expect("a supported major")
            .switch_wal_sql;
        let seg = self.psql(sql);
        self.wait_archived(&seg);
        seg
    }

    /// Waits until pg_stat_archiver's last archived WAL is at or past `seg`.
    pub fn wait_archived(&self, seg: &str) {
        let want = parse_wal_name(seg).unwrap_or_else(|| panic!("not a WAL segment name: {seg:?}"));
        let start = Instant::now();
        loop {
            let stat = self.psql(
                "select coalesce(last_archived_wal, '') || '|' || archived_count || '|' || \
                 coalesce(last_failed_wal, '') || '|' || failed_count || '|' || \
                 coalesce(last_failed_time::text, '') from pg_stat_archiver",
            );
            let last = stat.split('|').next().unwrap_or("");
            // No let-chains: the workspace's rust-version predates them.
            if parse_wal_name(last).is_some_and(|got| got.0 >= want.0 && got.1 >= want.1) {
                return;
            }
            if start.elapsed() > ARCHIVE_TIMEOUT {
                panic!(
                    "{}",
                    self.failure(
                        &format!("WAL segment {seg} not archived after {ARCHIVE_TIMEOUT:?}"),
                        &format!(
                            "pg_stat_archiver (last_archived_wal|archived_count|\
                             last_failed_wal|failed_count|last_failed_time): {stat}"
                        )
                    )
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Creates tablespace `name` at `location` (made, owned by the cluster
    /// user, mode 0700; it must be absolute and not exist or be empty).
    pub fn create_tablespace(&self, name: &str, location: &Path) {
        fs::create_dir_all(location)
            .unwrap_or_else(|e| panic!("create {}: {e}", location.display()));
        fs::set_permissions(location, fs::Permissions::from_mode(0o700))
            .expect("chmod tablespace dir");
        chown_to_cluster_user(location);
        self.psql(&format!(
            "create tablespace {} location {}",
            sql_ident(name),
            sql_literal(path_str(location))
        ));
    }
}

/// (timeline, segment number) of a 24-hex-digit WAL file name.
fn parse_wal_name(name: &str) -> Option<(u32, u64)> {
    // The archiver's last file may be a backup history file ("<segment>.<offset>.backup") or a
    // ".partial" segment: the leading segment name still orders it.
    let name = name.get(..24)?;
    if !name.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let tli = u32::from_str_radix(&name[..8], 16).ok()?;
    let hi = u64::from_str_radix(&name[8..16], 16).ok()?;
    let lo = u64::from_str_radix(&name[16..], 16).ok()?;
    // Segment numbers from 16 MiB segments; only used for ordering.
    Some((tli, (hi << 32) | lo))
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.pgdata.join("postmaster.pid").exists() {
            let _ = self.stop_mode("immediate");
        }
        if thread::panicking() {
            eprintln!(
                "--- server log tail of cluster {} (port {}) ---\n{}",
                self.dir.display(),
                self.port,
                self.log_tail()
            );
        }
        if keep_dirs() {
            eprintln!("RECMAN_TEST_KEEP=1: keeping {}", self.dir.display());
        }
        // The TempDir field removes the dir (unless kept) after this.
        let _ = self.tmp.take();
    }
}

/// A 16 MiB WAL segment named `name` as the server under test would write it for the cluster with
/// `sysid`: a long page header at the start (what archive-push checks), then bytes varied by
/// `seed`, so tests can archive segments the server never wrote.
pub fn fake_segment(sysid: u64, name: &str, seed: u8) -> Vec<u8> {
    const SEG: u32 = 16 << 20;
    let tli = u32::from_str_radix(&name[..8], 16).expect("timeline");
    let log = u64::from_str_radix(&name[8..16], 16).expect("log");
    let seg = u64::from_str_radix(&name[16..24], 16).expect("segment");
    let addr = (log * 256 + seg) * u64::from(SEG);
    let mut d: Vec<u8> = (0..SEG)
        .map(|b| (b.wrapping_mul(2654435761) >> 11) as u8 ^ seed)
        .collect();
    d[..40].fill(0);
    let magic = recman_pg::version::wal_page_magic(server_major()).expect("a supported major");
    d[0..2].copy_from_slice(&magic.to_le_bytes());
    d[2..4].copy_from_slice(&2u16.to_le_bytes()); // XLP_LONG_HEADER
    d[4..8].copy_from_slice(&tli.to_le_bytes());
    d[8..16].copy_from_slice(&addr.to_le_bytes());
    d[24..32].copy_from_slice(&sysid.to_le_bytes());
    d[32..36].copy_from_slice(&SEG.to_le_bytes());
    d[36..40].copy_from_slice(&8192u32.to_le_bytes());
    d
}
