//! Acceptance 6: bad input gets one clear error line with a hint, a non-zero exit, and
//! nothing written.

mod common;
mod flows;

use common::*;
use flows::*;

fn assert_clear(out: &std::process::Output, needles: &[&str]) -> String {
    assert!(!out.status.success(), "expected failure");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    for n in needles {
        assert!(err.contains(n), "{n:?} missing in: {err}");
    }
    err
}

#[test]
fn unknown_options_and_missing_repositories() {
    let out = recman(["backup", "database", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert_clear(&out, &["--bogus", "--help"]);

    let (_t, dir) = new_scratch_dir();
    let missing = dir.join("nope");
    let out = recman(["--repo", path_str(&missing), "list", "backup"]);
    assert_clear(&out, &["does not exist", "create catalog"]);
    assert!(!missing.exists());

    std::fs::write(dir.join("somefile"), b"x").unwrap();
    let out = recman(["--repo", path_str(&dir), "list", "backup"]);
    assert_clear(&out, &["not a recman repository", "create catalog"]);
    let out = recman(["--repo", path_str(&dir), "create", "catalog"]);
    assert_clear(&out, &["not empty"]);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "create catalog wrote into a non-empty directory"
    );

    let out = recman(["list", "backup"]);
    assert_clear(&out, &["no repository", "--repo"]);
}

#[test]
fn unreachable_server_unregistered_cluster_and_wrong_data_directory() {
    let setup = Setup::new();
    // Unregistered: a fresh repository.
    let (_t, other_repo) = new_repo();
    recman_ok(["--repo", path_str(&other_repo), "create", "catalog"]);
    let out = recman([
        "--repo",
        path_str(&other_repo),
        "--pgdata",
        path_str(&setup.cluster.pgdata),
        "--target",
        &setup.cluster.conninfo(),
        "backup",
        "database",
    ]);
    assert_clear(&out, &["no database is registered", "register database"]);

    let out = recman([
        "--repo",
        path_str(&setup.repo),
        "--pgdata",
        path_str(&setup.cluster.pgdata),
        "--target",
        "host=/nonexistent-socket-dir port=1 user=postgres",
        "backup",
        "database",
    ]);
    assert_clear(&out, &["cannot connect", "hint"]);

    // Another cluster's data directory with this server.
    let other = Cluster::init_with(ClusterOpts {
        start: false,
        ..Default::default()
    });
    let out = recman([
        "--repo",
        path_str(&setup.repo),
        "--pgdata",
        path_str(&other.pgdata),
        "--target",
        &setup.cluster.conninfo(),
        "backup",
        "database",
    ]);
    assert_clear(&out, &["does not belong", "hint"]);
    assert!(setup.backups().is_empty(), "a refused backup was recorded");
    assert!(
        !setup.repo.join("main/backup").exists()
            || std::fs::read_dir(setup.repo.join("main/backup"))
                .unwrap()
                .count()
                == 0
    );
}

#[test]
fn restore_into_non_empty_directory_is_refused() {
    let setup = Setup::new();
    setup.backup(&[]);
    let (_t, dir) = new_scratch_dir();
    std::fs::write(dir.join("precious"), b"keep me").unwrap();
    let out = recman(setup.args(&["restore", "database", "--to", path_str(&dir)]));
    assert_clear(&out, &["not empty", "nothing was written", "hint"]);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["precious"]);
    assert_eq!(std::fs::read(dir.join("precious")).unwrap(), b"keep me");

    let out = recman(setup.args(&[
        "restore",
        "database",
        "--to",
        path_str(&dir.join("x")),
        "--until-lsn",
        "not-an-lsn",
    ]));
    assert_clear(&out, &["invalid LSN", "hint"]);
    let out = recman(setup.args(&["backup", "database", "--compress", "gzip"]));
    assert_clear(&out, &["--compress", "gzip"]);
}
