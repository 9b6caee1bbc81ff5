//! A bare PostgreSQL server for the shared-catalog tests: initdb into a temp dir under /tmp,
//! started on a unix socket (no TCP), stopped and removed on drop. It runs as the cluster user
//! like every [`crate::Cluster`], from the same programs (`RECMAN_TEST_PG_BINDIR`); unlike a
//! cluster it has no archiving, no data checksums and fsync off: it only holds catalogs.

use crate::binary::run_as_cluster_user_ok;
use crate::cluster::free_port;
use crate::host::{cluster_tempdir, path_str, pg_bin};
use std::path::Path;
use std::process::Command;
use tempfile::TempDir;

pub struct PgServer {
    dir: TempDir,
    port: u16,
}

fn run(program: &str, args: &[&str]) {
    let mut cmd = Command::new(pg_bin(program));
    cmd.args(args).current_dir("/");
    run_as_cluster_user_ok(&mut cmd);
}

impl PgServer {
    pub fn start() -> PgServer {
        let dir = cluster_tempdir("recman-catpg-");
        let pgdata = dir.path().join("pgdata");
        let sock = dir.path().join("sock");
        std::fs::create_dir(&sock).expect("create socket dir");
        crate::host::chown_to_cluster_user(&sock);
        let port = free_port();
        let s = |p: &Path| path_str(p).to_string();
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
                &["-D", path_str(&pgdata), "-m", "immediate", "-w", "stop"],
            )
        });
    }
}
