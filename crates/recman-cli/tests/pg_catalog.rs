//! A shared recovery catalog in PostgreSQL (catalog issue, acceptance 3): a cluster backed up
//! into a disk repository whose catalog is `--catalog postgresql://...` on a second server.
//! The backup is listed, validated and restored through the shared catalog (WAL archived and
//! fetched through it too), while the repository's own SQLite catalog knows nothing of it.

mod common;
mod flows;

use common::*;
use flows::*;

/// The URL of database `postgres` on a harness cluster, over its unix socket.
fn catalog_url(c: &Cluster) -> String {
    format!(
        "postgresql://postgres@/postgres?host={}&port={}",
        c.sockdir.display(),
        c.port
    )
}

#[test]
fn backup_list_validate_restore_through_a_shared_catalog() {
    let catalog = Cluster::init_with(ClusterOpts::default());
    let url = catalog_url(&catalog);
    let (repo_dir, repo) = new_repo();
    recman_ok([
        "--catalog",
        &url,
        "--repo",
        path_str(&repo),
        "create",
        "catalog",
    ]);
    // Archiving goes through the shared catalog as well.
    let archive = format!(
        "archive_command = '\"{}\" --catalog \"{url}\" --repo \"{}\" archive-push %p'",
        recman_bin().display(),
        repo.display()
    );
    let cluster = Cluster::init_with(ClusterOpts {
        archive_repo: Some(repo.clone()),
        extra_conf: vec![archive],
        ..Default::default()
    });
    let setup = Setup {
        repo_dir,
        repo,
        cluster,
    };
    let shared = |args: &[&str]| -> Vec<String> {
        let mut v = vec!["--catalog".to_string(), url.clone()];
        v.extend(setup.args(args));
        v
    };
    recman_ok(shared(&["register", "database", "--name", "main"]));
    let c = &setup.cluster;
    c.psql("CREATE TABLE t AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g");

    recman_ok(shared(&["backup", "database"]));
    let out = recman_ok(shared(&["list", "backup", "--json"]));
    let list: Vec<serde_json::Value> =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"));
    assert_eq!(list.len(), 1, "{out}");
    let id = list[0]["id"].as_str().unwrap().to_string();
    assert_eq!(list[0]["status"], "AVAILABLE", "{out}");
    recman_ok(shared(&["validate", "backup", &id]));

    c.psql("INSERT INTO t SELECT g, 'after' FROM generate_series(20001, 20100) g");
    c.psql("checkpoint");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();

    // The rows are the shared catalog's: its server knows the repository and the backup.
    let location = std::path::absolute(&setup.repo).unwrap();
    let schema = catalog.psql(&format!(
        "SELECT 'recman_r' || id FROM recman.repository WHERE location = {}",
        sql_literal(&location.display().to_string())
    ));
    assert!(
        !schema.is_empty(),
        "the repository is not registered in the shared catalog"
    );
    let n = catalog.psql(&format!(
        "SELECT count(*) FROM {schema}.backup WHERE id = {}",
        sql_literal(&id)
    ));
    assert_eq!(n, "1");

    let (_keep, dir) = new_scratch_dir();
    let to = dir.join("restored");
    recman_ok(shared(&["restore", "database", "--to", path_str(&to)]));
    let restored = start_and_compare(&to, &expected);
    drop(restored);

    // The repository's own SQLite catalog does not know the backup.
    let own = recman(setup.args(&["list", "backup", "--json"]));
    let stdout = String::from_utf8_lossy(&own.stdout);
    assert!(
        !stdout.contains(&id),
        "the embedded catalog lists {id}:\n{stdout}"
    );
    // A URL of another scheme is refused with a hint.
    let err = recman_err([
        "--catalog",
        "mysql://x/y",
        "--repo",
        path_str(&setup.repo),
        "list",
        "backup",
    ]);
    assert!(err.contains("hint:"), "{err}");
}
