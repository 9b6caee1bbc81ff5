//! A throwaway PostgreSQL 15 server for the shared-catalog tests: initdb into a temp dir under
//! /tmp, pg_ctl start on a unix socket (no TCP), stopped and removed on drop. When the tests run
//! as root, PostgreSQL's programs run as the `postgres` OS user, which PostgreSQL requires.
//! `RECMAN_TEST_PG_BINDIR` overrides the bin dir (default /usr/lib/postgresql/15/bin).

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct PgServer {
    dir: tempfile::TempDir,
    port: u16,
}

fn bindir() -> PathBuf {
    std::env::var_os("RECMAN_TEST_PG_BINDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"))
}

/// (uid, gid) of `postgres` when running as root.
fn pg_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |flag: &str| -> u32 {
        let out = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "running as root needs a postgres OS user"
        );
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    Some((id("-u"), id("-g")))
}

fn chown(path: &Path) {
    if let Some((uid, gid)) = pg_user() {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
}

fn run(program: &str, args: &[&str]) {
    let mut cmd = Command::new(bindir().join(program));
    cmd.args(args).current_dir("/");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PG") {
            cmd.env_remove(k);
        }
    }
    if let Some((uid, gid)) = pg_user() {
        cmd.uid(uid).gid(gid).env("HOME", "/tmp");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl PgServer {
    pub fn start() -> PgServer {
        let dir = tempfile::Builder::new()
            .prefix("recman-catpg-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        chown(dir.path());
        let pgdata = dir.path().join("pgdata");
        let sock = dir.path().join("sock");
        std::fs::create_dir(&sock).unwrap();
        chown(&sock);
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let s = |p: &Path| p.to_str().unwrap().to_string();
        run(
            "initdb",
            &[
                "-D",
                &s(&pgdata),
                "--auth=trust",
                "-U",
                "postgres",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
        );
        let opts = format!(
            "-c listen_addresses='' -c port={port} -c unix_socket_directories={} -c fsync=off",
            s(&sock)
        );
        run(
            "pg_ctl",
            &[
                "-D",
                &s(&pgdata),
                "-l",
                &s(&dir.path().join("server.log")),
                "-o",
                &opts,
                "-w",
                "-t",
                "120",
                "start",
            ],
        );
        PgServer { dir, port }
    }

    /// The URL of database `postgres` on this server.
    pub fn url(&self) -> String {
        format!(
            "postgresql://postgres@/postgres?host={}&port={}",
            self.dir.path().join("sock").display(),
            self.port
        )
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let pgdata = self.dir.path().join("pgdata");
        let _ = std::panic::catch_unwind(|| {
            run(
                "pg_ctl",
                &[
                    "-D",
                    pgdata.to_str().unwrap(),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
            )
        });
    }
}
