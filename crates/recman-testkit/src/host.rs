//! The OS user clusters and recman run as, scratch directories, and PostgreSQL's programs.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use tempfile::TempDir;

/// Major of Debian's PostgreSQL, the harness's default server and the source of client tools.
pub const PG_MAJOR: u32 = 15;

/// Seconds pg_ctl may wait for a start or stop; crash recovery of a busy
/// cluster on a 2-core CI machine can take a while.
pub(crate) const PG_CTL_TIMEOUT_S: u32 = 120;

/// How long [`Cluster::switch_wal_and_wait_archived`] waits.
pub(crate) const ARCHIVE_TIMEOUT: Duration = Duration::from_secs(90);

/// Lines of server log shown in panics.
pub(crate) const LOG_TAIL_LINES: usize = 40;

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
pub(crate) fn cluster_user_can(flag: &str, path: &Path) -> bool {
    as_cluster_user(Command::new("test").arg(flag).arg(path))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Makes a fresh temp dir under /tmp owned by the cluster user, mode 0700.
pub(crate) fn cluster_tempdir(prefix: &str) -> TempDir {
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

pub(crate) fn keep_dirs() -> bool {
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

/// Every file below `dir` (directories descended, not listed), sorted: what a test greps
/// a repository or a bucket for.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
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
pub(crate) fn default_bindir() -> &'static Path {
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
pub(crate) fn server_bindir() -> &'static Path {
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
