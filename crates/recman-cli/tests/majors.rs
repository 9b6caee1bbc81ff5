//! What recman learns about the server's major, on whichever major the harness runs
//! (`RECMAN_TEST_PG_BINDIR`; scripts/test-majors.sh runs this file on 13 to 18).

mod common;
mod flows;

use common::*;
use flows::*;

#[test]
fn register_records_the_servers_own_version() {
    let setup = Setup::new();
    let num: u32 = setup
        .cluster
        .psql("show server_version_num")
        .parse()
        .unwrap();
    assert_eq!(
        num / 10000,
        server_major(),
        "the harness runs the server it was asked for"
    );
    let out = setup.ok(&["register", "database", "--name", "again"]);
    assert!(out.contains(&format!("PostgreSQL {num}")), "{out}");
}

/// The core of backup_restore's matrix on one configuration: the matrix's other dimensions
/// (channels, filesperset, compression) do not depend on the major and run on 15.
#[test]
fn online_backup_under_pgbench_restores_equal() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(3);
    backup_while_writing_then_restore(
        &setup,
        &["--channels", "2", "--compress", "lz4"],
        &["--channels", "2"],
    );
}

#[test]
fn pg_control_is_read_without_pg_controldata_on_every_major() {
    for checksums in [true, false] {
        let c = Cluster::init_with(ClusterOpts {
            data_checksums: checksums,
            ..ClusterOpts::default()
        });
        let shown = c.psql("show data_checksums");
        assert_eq!(
            shown == "on",
            checksums,
            "initdb must do what the harness asked"
        );
        c.stop();
        let out = recman(["--pgdata", path_str(&c.pgdata), "validate", "database"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        let want = if checksums {
            "data checksums on"
        } else {
            "data checksums off"
        };
        assert!(text.contains(want), "want {want:?}: {text}");
        assert!(!text.contains("could not tell"), "{text}");
    }
}

#[test]
fn an_unknown_major_is_refused_at_register_and_at_backup() {
    let setup = Setup::new();
    let version_file = setup.cluster.pgdata.join("PG_VERSION");
    // The running server never rereads PG_VERSION; recman reads it before trusting pg_control.
    std::fs::write(&version_file, "19\n").unwrap();
    let err = setup.err(&["register", "database", "--name", "future"]);
    assert!(
        err.contains("PostgreSQL 19")
            && err.contains("is not supported")
            && err.contains("13 to 18"),
        "{err}"
    );
    let err = setup.err(&["backup", "database"]);
    assert!(
        err.contains("PostgreSQL 19") && err.contains("hint:"),
        "{err}"
    );
    assert!(setup.backups().is_empty(), "no backup may be recorded");
    std::fs::write(&version_file, format!("{}\n", server_major())).unwrap();
    setup.backup(&[]);
}
