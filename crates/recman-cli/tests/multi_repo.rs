//! Issue 41, acceptance 4: three repositories for one database, a directory, S3 (s3s-fs,
//! reached through a proxy that can refuse every request) and Google Cloud Storage
//! (fake-gcs-server), given as `--repo` and two `--also-repo`. Each holds every WAL segment;
//! with S3 refusing everything mid-run the other two hold everything, archiving never fails,
//! and S3 is caught up and reported afterwards. Backups made in the first are copied to the
//! others; retention applies per repository; with the first repository deleted entirely, a
//! point-in-time restore falls back to the second and restores equal.

mod common;
mod flows;

use common::*;
use flows::start_and_compare;
use recman_media::testkit::{FaultProxy, Faults, fake_gcs_or_skip, s3_server_or_skip};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(120);

/// Every recman here runs as the cluster user with one cache home, as the archive_command
/// does, so the caches and the ledger are the same for both.
struct Runner {
    config: PathBuf,
    cache_home: PathBuf,
}

impl Runner {
    fn cmd(&self, args: &[String]) -> Command {
        let mut c = recman_cmd(
            ["--config".to_string(), path_str(&self.config).to_string()]
                .into_iter()
                .chain(args.iter().cloned()),
        );
        c.env("XDG_CACHE_HOME", &self.cache_home);
        c
    }

    fn ok(&self, args: &[String]) -> String {
        run_as_cluster_user_ok(&mut self.cmd(args))
    }

    /// `args` against the one repository `repo`.
    fn one(&self, repo: &str, args: &[&str]) -> String {
        let mut v = vec!["--repo".to_string(), repo.to_string()];
        v.extend(args.iter().map(|s| s.to_string()));
        self.ok(&v)
    }

    fn wal_names(&self, repo: &str) -> Vec<String> {
        let out = self.one(repo, &["--db", "main", "list", "archivelog", "--json"]);
        let all: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        let mut v: Vec<String> = all
            .iter()
            .filter_map(|w| w["name"].as_str().map(str::to_string))
            .collect();
        v.sort();
        v
    }

    fn backups(&self, repo: &str) -> Vec<String> {
        let out = self.one(repo, &["--db", "main", "list", "backup", "--json"]);
        let all: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        all.iter()
            .filter(|b| b["status"] == "AVAILABLE")
            .map(|b| b["id"].as_str().unwrap().to_string())
            .collect()
    }
}

fn wait_until(what: &str, cond: impl FnMut() -> bool, detail: impl Fn() -> String) {
    common::wait_until(what, BOUND, cond, detail);
}

fn switch(c: &Cluster, table: &str) -> String {
    c.psql(&format!(
        "insert into {table} select g, repeat('w', 500) from generate_series(1, 2000) g"
    ));
    c.psql("select pg_walfile_name(pg_switch_wal())")
}

#[test]
fn three_repositories_each_hold_every_wal_file_and_the_second_restores_without_the_first() {
    let Some(s3) = s3_server_or_skip() else {
        return;
    };
    let Some(gcs) = fake_gcs_or_skip() else {
        return;
    };
    let proxy = FaultProxy::start(s3.endpoint(), Faults::None, 41).unwrap();
    let (_dir, path) = new_scratch_dir();
    let key = gcs.key_file(&path).unwrap();
    chown_to_cluster_user(&key);
    let gcs_section = format!(
        "max-retries = 1\n\n[gcs]\ncredentials-file = \"{}\"\nendpoint = \"{}\"\n",
        key.display(),
        gcs.endpoint()
    );
    let config = write_s3_config(&path, &proxy.endpoint(), &s3, &gcs_section);
    let cache_home = path.join("cache-home");
    std::fs::create_dir(&cache_home).unwrap();
    chown_to_cluster_user(&cache_home);
    let (_repo_dir, disk) = new_repo();
    let disk = path_str(&disk).to_string();
    let s3_url = format!("s3://{}/multi", s3.bucket());
    let gs_url = format!("gs://{}/multi", gcs.bucket());
    let run = Runner {
        config: config.clone(),
        cache_home: cache_home.clone(),
    };
    let list: Vec<String> = [
        "--repo",
        &disk,
        "--also-repo",
        &s3_url,
        "--also-repo",
        &gs_url,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let with_list = |args: &[&str]| -> Vec<String> {
        let mut v = list.clone();
        v.extend(args.iter().map(|s| s.to_string()));
        v
    };

    // One `create catalog` makes all three.
    run.ok(&with_list(&["create", "catalog"]));
    let archive = format!(
        "'XDG_CACHE_HOME={} {} --config {} {} archive-push %p'",
        cache_home.display(),
        recman_bin().display(),
        config.display(),
        list.join(" ")
    );
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!("archive_command = {archive}"),
        ],
        ..Default::default()
    });
    let on_cluster = |args: &[&str]| -> Vec<String> {
        let mut v = with_list(&["--pgdata", path_str(&c.pgdata), "--target", &c.conninfo()]);
        v.extend(args.iter().map(|s| s.to_string()));
        v
    };
    run.ok(&on_cluster(&["register", "database", "--name", "main"]));
    c.pgbench_init(1);
    c.psql("create table w(id int, pad text)");

    // A backup in the first repository, copied to the other two.
    let out = run.ok(&on_cluster(&["backup", "database"]));
    assert!(
        out.contains(&format!("copied to repository {s3_url}"))
            && out.contains(&format!("copied to repository {gs_url}")),
        "{out}"
    );
    let first = run.backups(&disk);
    assert_eq!(first.len(), 1);
    assert_eq!(run.backups(&s3_url), first);
    assert_eq!(run.backups(&gs_url), first);

    let last = switch(&c, "w");
    let all_hold = |name: &str, repos: &[&str]| {
        repos
            .iter()
            .all(|r| run.wal_names(r).iter().any(|n| n == name))
    };
    wait_until(
        &format!("{last} in all three repositories"),
        || all_hold(&last, &[&disk, &s3_url, &gs_url]),
        || file_tail(&c.log, 30),
    );

    // S3 refuses every request: archiving goes on into the other two, and never fails.
    proxy.set_faults(Faults::Deny);
    let mut outage = Vec::new();
    for _ in 0..3 {
        outage.push(switch(&c, "w"));
    }
    let newest = outage.last().unwrap().clone();
    wait_until(
        &format!("{newest} archived while S3 refuses"),
        || c.psql("select coalesce(last_archived_wal, '') from pg_stat_archiver") >= newest,
        || file_tail(&c.log, 40),
    );
    assert_eq!(
        c.psql("select failed_count from pg_stat_archiver"),
        "0",
        "archiving failed because one repository of three did\n{}",
        file_tail(&c.log, 40)
    );
    for name in &outage {
        assert!(all_hold(name, &[&disk, &gs_url]), "{name} is missing");
    }
    let report = run.ok(&with_list(&["report", "repositories", "--json"]));
    let rows: serde_json::Value = serde_json::from_str(&report).unwrap();
    let s3_row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["repository"] == s3_url.as_str())
        .unwrap_or_else(|| panic!("no row for {s3_url}: {report}"));
    assert!(
        s3_row["state"].as_str().unwrap().starts_with("unreachable")
            && s3_row["owed_wal"].as_u64().unwrap() >= 3,
        "{report}"
    );

    // S3 answers again: the next archive-push into it brings what it missed.
    proxy.set_faults(Faults::None);
    let after = switch(&c, "w");
    wait_until(
        "S3 caught up with every segment the directory holds",
        || {
            let want = run.wal_names(&disk);
            let have = run.wal_names(&s3_url);
            want.contains(&after) && want.iter().all(|n| have.contains(n))
        },
        || file_tail(&c.log, 40),
    );
    let report = run.ok(&with_list(&["report", "repositories", "--json"]));
    let rows: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r["state"] == "ok" && r["owed_wal"] == 0),
        "{report}"
    );
    assert!(
        file_tail(&c.log, 400).contains("caught up"),
        "the catch-up was not reported in the server log"
    );

    // The point-in-time target, then more WAL after it.
    let expected = c.all_table_checksums();
    let target = c.psql("select pg_current_wal_insert_lsn()::text");
    let past = switch(&c, "w");
    wait_until(
        &format!("{past} in all three repositories"),
        || all_hold(&past, &[&disk, &s3_url, &gs_url]),
        || file_tail(&c.log, 30),
    );

    // Retention per repository: GCS keeps one backup, S3 two.
    run.one(
        &gs_url,
        &["configure", "retention-policy", "redundancy", "1"],
    );
    run.one(
        &s3_url,
        &["configure", "retention-policy", "redundancy", "2"],
    );
    run.ok(&on_cluster(&["backup", "database"]));
    for r in [&s3_url, &gs_url] {
        run.one(r, &["--db", "main", "delete", "obsolete", "--noprompt"]);
    }
    assert_eq!(run.backups(&s3_url).len(), 2);
    assert_eq!(run.backups(&gs_url).len(), 1);
    assert_eq!(run.backups(&gs_url)[0], run.backups(&s3_url)[1]);
    c.stop();

    // The first repository deleted entirely: the restore falls back to S3, whose retention
    // kept the first backup, and recovers to the target from S3's WAL.
    std::fs::remove_dir_all(&disk).unwrap();
    let (_keep, to_dir) = new_scratch_dir();
    let to = to_dir.join("restored");
    let mut restore = run.cmd(&with_list(&[
        "--db",
        "main",
        "restore",
        "database",
        "--to",
        path_str(&to),
        "--until-lsn",
        &target,
    ]));
    as_cluster_user(&mut restore);
    let out = restore.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the restore from the list failed\n{err}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains(&format!("using repository {s3_url}")),
        "the fallback was not said: {err}"
    );
    start_and_compare(&to, &expected);
}
