//! recman flows shared by the acceptance tests: a registered, archiving cluster; a restore
//! that is started and compared with its source.
#![allow(dead_code)]

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tempfile::TempDir;

pub struct Setup {
    pub repo_dir: TempDir,
    pub repo: PathBuf,
    pub cluster: Cluster,
}

impl Setup {
    /// A repository, a cluster archiving into it, and the cluster registered as "main".
    pub fn new() -> Setup {
        Setup::with(ClusterOpts::default())
    }

    pub fn with(opts: ClusterOpts) -> Setup {
        let (repo_dir, repo) = new_repo();
        recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
        let cluster = Cluster::init_with(ClusterOpts {
            archive_repo: Some(repo.clone()),
            ..opts
        });
        let s = Setup {
            repo_dir,
            repo,
            cluster,
        };
        s.ok(&["register", "database", "--name", "main"]);
        s
    }

    /// Global options for this repository and cluster, then `args`.
    pub fn args(&self, args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--repo".into(),
            path_str(&self.repo).into(),
            "--pgdata".into(),
            path_str(&self.cluster.pgdata).into(),
            "--target".into(),
            self.cluster.conninfo(),
        ];
        v.extend(args.iter().map(|s| s.to_string()));
        v
    }

    pub fn ok(&self, args: &[&str]) -> String {
        recman_ok(self.args(args))
    }

    pub fn err(&self, args: &[&str]) -> String {
        recman_err(self.args(args))
    }

    /// Runs a backup and returns its id, read back from `list backup --json`.
    pub fn backup(&self, extra: &[&str]) -> String {
        let mut a = vec!["backup", "database"];
        a.extend_from_slice(extra);
        self.ok(&a);
        self.backups().last().expect("a backup was listed")["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    pub fn backups(&self) -> Vec<serde_json::Value> {
        let out = self.ok(&["list", "backup", "--json"]);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("list backup --json is not JSON ({e}):\n{out}"))
    }

    /// `list archivelog --json`: one object per archived WAL file.
    pub fn archivelogs(&self) -> Vec<serde_json::Value> {
        let out = self.ok(&["list", "archivelog", "--json"]);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("list archivelog --json is not JSON ({e}):\n{out}"))
    }

    /// Restores into a new directory and returns it (kept alive by the TempDir).
    pub fn restore(&self, extra: &[&str]) -> (TempDir, PathBuf) {
        let (tmp, dir) = new_scratch_dir();
        let to = dir.join("restored");
        let mut a = vec!["restore", "database", "--to", path_str(&to)];
        a.extend_from_slice(extra);
        self.ok(&a);
        (tmp, to)
    }
}

/// Starts PostgreSQL on a restored directory, waits for recovery to end, and checks it: its
/// contents equal `expected` ([`compare_contents`]), then amcheck everywhere. The comparison
/// comes first so that a difference is reported as one, not as whatever amcheck makes of it.
pub fn start_and_compare(
    pgdata: &Path,
    expected: &BTreeMap<String, BTreeMap<String, String>>,
) -> Cluster {
    let c = Cluster::from_restored(pgdata.to_path_buf());
    c.wait_recovery_done(Duration::from_secs(180));
    compare_contents(&c, expected);
    c.amcheck_all();
    c
}

/// Every database's relations in `c` (tables, partitioned tables, materialized views,
/// sequences, large objects: [`Cluster::table_checksums`]) equal `expected`. The panic names
/// the first difference: a database or relation missing on one side, or one whose contents
/// differ, with both fingerprints.
pub fn compare_contents(c: &Cluster, expected: &BTreeMap<String, BTreeMap<String, String>>) {
    let got = c.all_table_checksums();
    if &got == expected {
        return;
    }
    let differs = |what: String| -> ! {
        panic!("restored data differs from the source at the recovery point: {what}")
    };
    for db in expected.keys().chain(got.keys()) {
        let (Some(want), Some(have)) = (expected.get(db), got.get(db)) else {
            let side = if got.contains_key(db) {
                "the source"
            } else {
                "the restore"
            };
            differs(format!("database {db} is missing from {side}"));
        };
        for rel in want.keys().chain(have.keys()) {
            match (want.get(rel), have.get(rel)) {
                (Some(w), Some(h)) if w == h => {}
                (Some(w), Some(h)) => differs(format!(
                    "relation {rel} of database {db}: source {w}, restore {h}"
                )),
                (Some(_), None) => differs(format!(
                    "relation {rel} of database {db} is missing from the restore"
                )),
                (None, _) => differs(format!(
                    "relation {rel} of database {db} is not in the source"
                )),
            }
        }
    }
    unreachable!("the maps differ, so some relation does")
}

pub fn history_rows(c: &Cluster) -> u64 {
    c.psql("select count(*) from pgbench_history")
        .parse()
        .unwrap()
}

/// A backup taken while pgbench writes: pgbench has committed before the backup starts, is
/// still running (so it did not die) when the backup ends, and committed in between, so the
/// backup really ran against a busy cluster. pgbench runs until the test stops it, whatever
/// the speed of the machine.
pub fn backup_while_writing_then_restore(
    setup: &Setup,
    backup_args: &[&str],
    restore_args: &[&str],
) {
    let c = &setup.cluster;
    let before = history_rows(c);
    let mut bench = c.pgbench_background(3600, 2);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let at_start = loop {
        let n = history_rows(c);
        if n > before {
            break n;
        }
        if let Some(status) = bench.try_wait().unwrap() {
            panic!(
                "pgbench ended ({status}) before its first commit; see its log in the cluster dir"
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pgbench committed nothing in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let id = setup.backup(backup_args);
    let at_end = history_rows(c);
    if let Some(status) = bench.try_wait().unwrap() {
        panic!("pgbench died during the backup ({status}); the backup did not run under load");
    }
    bench.kill().unwrap();
    bench.wait().unwrap();
    assert!(
        at_end > at_start,
        "pgbench committed nothing while backup {id} ran ({at_start} history rows before and after)"
    );
    c.psql("checkpoint");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let list = setup.backups();
    let b = list.iter().find(|b| b["id"] == id.as_str()).unwrap();
    assert_eq!(b["status"], "AVAILABLE", "{b}");
    setup.ok(&["validate", "backup", &id]);
    let (_keep, to) = setup.restore(restore_args);
    let restored = start_and_compare(&to, &expected);
    drop(restored);
}

/// A streaming standby of `primary` (pg_basebackup -R), started; its directory lives as long as
/// the returned TempDir.
pub fn make_standby(primary: &Cluster) -> (TempDir, Cluster) {
    let (tmp, dir) = new_scratch_dir();
    let data = dir.join("standby");
    run_as_cluster_user_ok(
        std::process::Command::new(pg_bin("pg_basebackup"))
            .arg("-D")
            .arg(&data)
            .args(["-R", "-X", "stream", "--no-sync", "-c", "fast", "-d"])
            .arg(primary.conninfo()),
    );
    // The primary_conninfo pg_basebackup -R writes may carry options newer than the server's
    // libpq (Debian's pg_basebackup 15 writes sslsni, which a 13 server refuses): the primary's
    // own conninfo, written after it, wins and suits every major.
    let auto = data.join("postgresql.auto.conf");
    let mut conf = std::fs::read_to_string(&auto).unwrap();
    conf.push_str(&format!(
        "primary_conninfo = {}\n",
        sql_literal(&primary.conninfo())
    ));
    std::fs::write(&auto, conf).unwrap();
    let standby = Cluster::adopt(data);
    standby.start();
    (tmp, standby)
}
