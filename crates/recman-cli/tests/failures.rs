//! Issue 43 (RMAN's Data Recovery Advisor): each failure is made real on a running cluster
//! (no backup, archive_command broken or empty, too few backups for the retention policy, a
//! backup older than the RPO target, an archived WAL
//! object deleted, a piece damaged, a failed drill, corrupt pages); LIST FAILURE shows it
//! with its priority, the repair ADVISE writes runs through `recman run` (or REPAIR FAILURE
//! runs it) and the next check closes it; PREVIEW writes nothing; a gap whose WAL is gone
//! from pg_wal, and block repair of a running cluster, are refused. REPORT SLO and the
//! metrics agree with the archive's lag and the last drill; a drill interval passed, a drill
//! over the RTO target, a slot retaining WAL, a repository file system without room, a full
//! backup longer than the backup window, a command holding the repository lock too long and a
//! fleet certificate near its end each open a failure that the fix closes.

mod common;
mod flows;

use common::*;
use flows::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `failure list --json` (the checks run first): every failure, closed ones too.
fn all_failures(setup: &Setup) -> Vec<Value> {
    let out = setup.ok(&["failure", "list", "--all", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
    v["failures"].as_array().unwrap().clone()
}

/// The open failures of `kind`.
fn open(setup: &Setup, kind: &str) -> Vec<Value> {
    all_failures(setup)
        .into_iter()
        .filter(|f| f["kind"] == kind && f["status"] == "OPEN")
        .collect()
}

/// The one open failure of `kind`: its id, after checking its priority.
fn one_open(setup: &Setup, kind: &str, priority: &str) -> i64 {
    let o = open(setup, kind);
    assert_eq!(o.len(), 1, "one open {kind} failure: {o:#?}");
    assert_eq!(o[0]["priority"], priority, "{:#}", o[0]);
    o[0]["id"].as_i64().unwrap()
}

fn status_of(setup: &Setup, id: i64) -> String {
    all_failures(setup)
        .into_iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("failure {id} is listed"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// ADVISE FAILURE into `path`; returns the script's text.
fn advise(setup: &Setup, path: &Path) -> String {
    let out = setup.ok(&["failure", "advise", "--script", path_str(path)]);
    assert!(
        out.contains(&format!("repair script: {}", path.display())),
        "{out}"
    );
    std::fs::read_to_string(path).unwrap()
}

fn statements(script: &str) -> Vec<&str> {
    script.lines().filter(|l| !l.starts_with('#')).collect()
}

fn wal_object(setup: &Setup, seg: &str) -> PathBuf {
    setup
        .repo
        .join(format!("main/wal/{}/{seg}.rmw", &seg[..16]))
}

/// Writes a little WAL and waits for its segment to be archived; returns its name.
fn archived_segment(c: &Cluster) -> String {
    c.psql("insert into t select generate_series(1, 100)");
    c.switch_wal_and_wait_archived()
}

#[test]
fn no_backup_archiving_rpo_and_wal_gaps_open_and_close() {
    // The gap below needs a segment still in pg_wal after it was archived and another was
    // written; with the harness's small max_wal_size, a checkpoint the switches request may end
    // in between and remove it. Kept segments make that part wait on nothing.
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["wal_keep_size = '1GB'".into()],
        ..Default::default()
    });
    let c = &setup.cluster;
    let (_t, scratch) = new_scratch_dir();
    c.psql("create table t(x int)");

    // No backup yet: CRITICAL, and `check` says so by its exit status. The advised script
    // runs as written through `recman run` and closes it.
    let none = one_open(&setup, "no-backup", "CRITICAL");
    let metrics = setup.ok(&["metrics"]);
    assert!(
        metrics.contains("recman_failures_open{database=\"main\",priority=\"CRITICAL\"} 1\n"),
        "{metrics}"
    );
    let out = recman(setup.args(&["check"]));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the worst CRITICAL"),
        "{out:?}"
    );
    let script = scratch.join("first.rcv");
    assert_eq!(statements(&advise(&setup, &script)), ["BACKUP DATABASE;"]);
    setup.ok(&["run", "-f", path_str(&script)]);
    assert_eq!(status_of(&setup, none), "CLOSED");
    assert!(open(&setup, "no-backup").is_empty());

    // archive_command broken: HIGH, not repaired automatically; fixed, the next check
    // closes it.
    c.set_archive_command("false");
    c.psql("insert into t values (1)");
    c.psql("select pg_switch_wal()");
    let d = Deadline::after(Duration::from_secs(60));
    while c.psql("select failed_count from pg_stat_archiver") == "0" {
        d.check("archive_command = 'false' to fail");
        std::thread::sleep(Duration::from_millis(100));
    }
    let archiving = one_open(&setup, "archiving-failed", "HIGH");
    let detail = setup.ok(&["failure", "list", &archiving.to_string(), "--detail"]);
    assert!(
        detail.contains("automatic: none: recman does not change archive_command"),
        "{detail}"
    );
    c.psql("alter system reset archive_command");
    c.psql("select pg_reload_conf()");
    archived_segment(c);
    assert_eq!(status_of(&setup, archiving), "CLOSED");

    // The newest backup older than the RPO target: HIGH until the advised backup runs.
    setup.ok(&["configure", "rpo-target", "5s"]);
    let d = Deadline::after(Duration::from_secs(60));
    while open(&setup, "rpo-exceeded").is_empty() {
        d.check("the backup to age past the RPO target of 5 s");
        std::thread::sleep(Duration::from_millis(250));
    }
    let rpo = one_open(&setup, "rpo-exceeded", "HIGH");
    let script = scratch.join("rpo.rcv");
    assert_eq!(statements(&advise(&setup, &script)), ["BACKUP DATABASE;"]);
    setup.ok(&["run", "-f", path_str(&script)]);
    assert_eq!(status_of(&setup, rpo), "CLOSED");
    setup.ok(&["configure", "rpo-target", "none"]);

    // An archived segment deleted from the repository while pg_wal still has it: CRITICAL;
    // REPAIR FAILURE (in the language) re-archives it from pg_wal and the check closes it.
    let lost = archived_segment(c);
    archived_segment(c);
    assert!(c.pgdata.join("pg_wal").join(&lost).is_file());
    std::fs::remove_file(wal_object(&setup, &lost)).unwrap();
    let gap = one_open(&setup, "wal-gap", "CRITICAL");
    assert_eq!(open(&setup, "wal-gap")[0]["object"], lost.as_str());
    let script = scratch.join("gap.rcv");
    let want = format!(
        "CATALOG ARCHIVELOG '{}';",
        c.pgdata.join("pg_wal").join(&lost).display()
    );
    assert_eq!(statements(&advise(&setup, &script)), [want.as_str()]);
    let out = setup.ok(&["run", "REPAIR FAILURE;"]);
    assert!(
        out.contains(&format!("failure {gap} closed: repaired")),
        "{out}"
    );
    assert!(wal_object(&setup, &lost).is_file());
    assert_eq!(status_of(&setup, gap), "CLOSED");

    // A gap whose segment is gone from pg_wal too: REPAIR refuses, saying why; a new backup
    // (the manual repair) leaves the gap before everything retention keeps, and it closes.
    let gone = archived_segment(c);
    archived_segment(c);
    c.psql("checkpoint");
    let in_pg_wal = c.pgdata.join("pg_wal").join(&gone);
    if in_pg_wal.exists() {
        // Kept by the server's own WAL settings: archived and before the last checkpoint's
        // redo point, so removing it takes nothing the server needs.
        std::fs::remove_file(&in_pg_wal).unwrap();
    }
    std::fs::remove_file(wal_object(&setup, &gone)).unwrap();
    let gap2 = one_open(&setup, "wal-gap", "CRITICAL");
    assert_ne!(gap2, gap, "a new gap is a new failure");
    let out = recman(setup.args(&["failure", "repair"]));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("segment {gone}")) && stdout.contains("is gone from"),
        "{stdout}"
    );
    assert!(stderr.contains("can be repaired automatically"), "{stderr}");
    assert_eq!(status_of(&setup, gap2), "OPEN");
    setup.backup(&[]);
    assert_eq!(status_of(&setup, gap2), "CLOSED");

    // Archiving behind without failing (an empty archive_command archives nothing and fails
    // nothing): a segment waiting in pg_wal longer than the RPO target is a failure of its own,
    // closed once the archiver has caught up.
    c.set_archive_command("");
    c.psql("insert into t values (2)");
    c.psql("select pg_switch_wal()");
    setup.ok(&["configure", "rpo-target", "1s"]);
    let d = Deadline::after(Duration::from_secs(60));
    while !open(&setup, "archiving-failed")
        .iter()
        .any(|f| f["object"] == "archive-lag")
    {
        d.check("a segment to wait past the RPO target of 1 s");
        std::thread::sleep(Duration::from_millis(250));
    }
    let lag = one_open(&setup, "archiving-failed", "HIGH");
    // Not failing: the only failure PostgreSQL recorded is older than the last success.
    assert_eq!(
        c.psql("select last_failed_time < last_archived_time from pg_stat_archiver"),
        "t"
    );
    c.psql("alter system reset archive_command");
    c.psql("select pg_reload_conf()");
    let ready = "select count(*) from pg_ls_archive_statusdir() where name like '%.ready'";
    let d = Deadline::after(Duration::from_secs(60));
    while c.psql(ready) != "0" {
        d.check("the archiver to catch up");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status_of(&setup, lag), "CLOSED");
}

/// The repository's files (the catalog apart: SQLite may touch its files on a read) with
/// their contents.
fn repo_files(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            repo_files(&p, out);
        } else if !name.starts_with("catalog.db") {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
}

/// The catalog's failures and backups, read as the cluster user without writing.
fn catalog_rows(repo: &Path) -> String {
    run_as_cluster_user_ok(
        Command::new("sqlite3")
            .arg(repo.join("catalog.db"))
            .arg("select * from failure order by id; select id, status from backup order by id; select name, status from wal order by name;"),
    )
}

/// Whether the catalog holds an open failure of `kind`, read without running a check.
fn recorded(repo: &Path, kind: &str) -> bool {
    catalog_rows(repo)
        .lines()
        .any(|l| l.contains(&format!("|{kind}|")) && l.contains("|OPEN|"))
}

#[test]
fn damaged_piece_is_listed_advised_previewed_repaired_and_closed() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int); insert into t select generate_series(1, 1000)");
    let b1 = setup.backup(&[]);
    assert!(open(&setup, "piece-missing").is_empty());
    let piece = setup.backups()[0]["pieces"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let piece_path = setup.repo.join(&piece);
    common::fixtures::flip(&piece_path, piece_path.metadata().unwrap().len() / 2);
    let out = setup.ok(&["crosscheck", "backup", "--verify"]);
    assert!(out.contains("EXPIRED"), "{out}");
    // The crosscheck has recorded the failure itself, before any check runs.
    assert!(
        recorded(&setup.repo, "piece-missing"),
        "{}",
        catalog_rows(&setup.repo)
    );

    // LIST FAILURE in the language shows it CRITICAL, named by its piece.
    let out = setup.ok(&["run", "LIST FAILURE;"]);
    let damaged = one_open(&setup, "piece-missing", "CRITICAL");
    assert!(
        out.lines()
            .any(|l| l.contains("piece-missing") && l.contains(&piece) && l.contains("CRITICAL")),
        "{out}"
    );
    let out = setup.ok(&["run", "ADVISE FAILURE;"]);
    let script: PathBuf = out
        .lines()
        .find_map(|l| l.strip_prefix("repair script: "))
        .unwrap_or_else(|| panic!("no script path in:\n{out}"))
        .into();
    assert!(
        script.starts_with(setup.repo.join("repair")),
        "{}",
        script.display()
    );
    assert_eq!(
        statements(&std::fs::read_to_string(&script).unwrap()),
        ["BACKUP DATABASE;"]
    );

    // PREVIEW prints the script and changes nothing: no file, no catalog row.
    let (mut before, mut after) = (Vec::new(), Vec::new());
    repo_files(&setup.repo, &mut before);
    let rows = catalog_rows(&setup.repo);
    let out = setup.ok(&["run", "REPAIR FAILURE PREVIEW;"]);
    assert!(
        out.contains("BACKUP DATABASE;") && out.contains(&format!("failure {damaged} ")),
        "{out}"
    );
    repo_files(&setup.repo, &mut after);
    assert!(
        before == after,
        "REPAIR FAILURE PREVIEW changed the repository's files"
    );
    assert_eq!(catalog_rows(&setup.repo), rows);
    assert_eq!(setup.backups().len(), 1);

    // REPAIR runs a new backup; the damaged one is no longer counted on, so it closes.
    let out = setup.ok(&["failure", "repair"]);
    assert!(
        out.contains(&format!("failure {damaged} closed: repaired")),
        "{out}"
    );
    let ids: Vec<String> = setup
        .backups()
        .iter()
        .map(|b| {
            format!(
                "{} {}",
                b["id"].as_str().unwrap(),
                b["status"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ids[0], format!("{b1} EXPIRED"));
    assert!(ids[1].ends_with(" AVAILABLE"), "{ids:?}");
    assert_eq!(status_of(&setup, damaged), "CLOSED");
    assert!(open(&setup, "no-backup").is_empty());

    // The newest restore drill failed: LOW; REPAIR runs DRILL; and the passed drill closes it.
    // (A target before every backup fails at once, and is recorded like any failed drill.)
    let err = setup.err(&["drill", "--until-time", "2001-01-01 00:00:00+00"]);
    assert!(err.contains("no backup is consistent before"), "{err}");
    assert!(recorded(&setup.repo, "drill-failed"));
    let drill = one_open(&setup, "drill-failed", "LOW");
    assert!(
        recman(setup.args(&["check"])).status.success(),
        "LOW alone fails no check"
    );
    let out = setup.ok(&["failure", "repair"]);
    assert!(
        out.contains(&format!("failure {drill} closed: repaired")),
        "{out}"
    );

    // Corrupt pages recorded by validate database: HIGH; block repair is refused while the
    // cluster runs, and once it is stopped REPAIR runs RECOVER CORRUPTION LIST and closes it.
    let rel = c.psql("select pg_relation_filepath('t')");
    c.stop();
    for b in [1u64, 3] {
        common::fixtures::flip(&c.pgdata.join(&rel), b * 8192 + 5000);
    }
    setup.err(&["validate", "database"]);
    assert!(recorded(&setup.repo, "corrupt-blocks"));
    c.start();
    let blocks = one_open(&setup, "corrupt-blocks", "HIGH");
    assert_eq!(open(&setup, "corrupt-blocks")[0]["object"], rel.as_str());
    let out = recman(setup.args(&["failure", "repair"]));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("and the cluster is running"),
        "{out:?}"
    );
    c.stop();
    let out = setup.ok(&["failure", "repair"]);
    let ran = out
        .lines()
        .find_map(|l| l.strip_prefix("repair script: "))
        .unwrap_or_else(|| panic!("no script path in:\n{out}"));
    assert_eq!(
        statements(&std::fs::read_to_string(ran).unwrap()),
        ["RECOVER CORRUPTION LIST;"]
    );
    assert!(
        out.contains(&format!("failure {blocks} closed: repaired")),
        "{out}"
    );
    setup.ok(&["validate", "database"]);
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}:\n{out}"))
}

/// The value of the metric line that starts with `series` (name and labels).
fn metric(setup: &Setup, series: &str) -> f64 {
    let out = setup.ok(&["metrics"]);
    out.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in:\n{out}"))
        .parse()
        .unwrap()
}

fn last_drill(setup: &Setup) -> Value {
    let drills = json_of(&setup.ok(&["list", "drill", "--json"]));
    drills.as_array().unwrap().last().expect("a drill").clone()
}

/// The one row of `report slo --json`.
fn slo(setup: &Setup) -> Value {
    let rows = json_of(&setup.ok(&["report", "slo", "--json"]));
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows:#}");
    rows[0].clone()
}

fn current_lsn_bytes(c: &Cluster) -> u64 {
    c.psql("select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")
        .parse()
        .unwrap()
}

#[test]
fn report_slo_and_the_metrics_agree_with_the_measured_lag_and_the_last_drill() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    setup.backup(&[]);
    archived_segment(c);
    setup.ok(&["drill"]);

    // REPORT SLO beside the targets: the RTO is the drill's, the archive's time is the one
    // the metrics give, and the targets are in both.
    setup.ok(&["configure", "rpo-target", "1h"]);
    setup.ok(&["run", "CONFIGURE RTO TARGET TO '1h';"]);
    let drill = last_drill(&setup);
    let row = slo(&setup);
    assert_eq!(row["database"], "main", "{row:#}");
    assert_eq!(row["rpo_source"], "archive", "{row:#}");
    assert_eq!(row["rto_drill"], drill["id"], "{row:#}");
    let rto = drill["rto_ms"].as_i64().unwrap() as f64 / 1000.0;
    assert_eq!(row["rto_seconds"].as_f64(), Some(rto), "{row:#}");
    assert_eq!(row["rto_target_seconds"].as_f64(), Some(3600.0), "{row:#}");
    assert_eq!(row["rpo_target_seconds"].as_f64(), Some(3600.0), "{row:#}");
    assert_eq!(row["rto_met"], true, "{row:#}");
    assert_eq!(row["rpo_met"], true, "{row:#}");
    assert!(
        row["predicted_seconds"].is_f64() && row["predicted_met"] == true,
        "the drill's restore is the prediction's history: {row:#}"
    );
    let series = |n: &str| format!("{n}{{database=\"main\"}}");
    let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
    assert!(close(
        metric(&setup, &series("recman_drill_last_duration_seconds")),
        rto
    ));
    assert!(close(
        metric(
            &setup,
            &series("recman_wal_last_archived_timestamp_seconds")
        ),
        row["last_archived_at"].as_f64().unwrap()
    ));
    assert_eq!(metric(&setup, &series("recman_rto_target_seconds")), 3600.0);
    assert_eq!(metric(&setup, &series("recman_rpo_target_seconds")), 3600.0);

    // The bytes at risk grow by at least the WAL written since, none of it archived.
    let before = slo(&setup)["rpo_bytes"].as_u64().unwrap();
    let from = current_lsn_bytes(c);
    c.psql("insert into t select generate_series(1, 20000)");
    let to = current_lsn_bytes(c);
    let after = slo(&setup)["rpo_bytes"].as_u64().unwrap();
    assert!(
        after >= before + (to - from),
        "{before} {after} {from} {to}"
    );
    let text = setup.ok(&["run", "REPORT SLO;"]);
    assert!(
        text.contains("database main") && text.contains(&format!("(drill {})", drill["id"])),
        "{text}"
    );
}

#[test]
fn drill_interval_and_rto_target_failures_open_and_close() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    setup.backup(&[]);

    // A drill interval and no drill ever: LOW; REPAIR runs the advised DRILL; and closes it.
    setup.ok(&["run", "CONFIGURE DRILL INTERVAL TO '7d';"]);
    let stale = one_open(&setup, "drill-stale", "LOW");
    let out = setup.ok(&["failure", "repair"]);
    assert!(
        out.contains(&format!("failure {stale} closed: repaired")),
        "{out}"
    );

    // The last drill slower than the RTO target: HIGH, no automatic repair. (The drill's row
    // is stretched to two hours, as slow storage would have made it.) A new drill measures
    // again and the next check closes it.
    setup.ok(&["configure", "rto-target", "1h"]);
    let drill = last_drill(&setup);
    let stretch = format!(
        "update drill set restore_ms = 7200000 where id = {}",
        drill["id"]
    );
    run_as_cluster_user_ok(
        Command::new("sqlite3")
            .arg(setup.repo.join("catalog.db"))
            .arg(&stretch),
    );
    let slow = one_open(&setup, "rto-exceeded", "HIGH");
    assert_eq!(open(&setup, "rto-exceeded")[0]["object"], "drill");
    assert_eq!(slo(&setup)["rto_met"], false);
    let detail = setup.ok(&["failure", "list", &slow.to_string(), "--detail"]);
    assert!(
        detail.contains("automatic: none: recman cannot make a restore faster"),
        "{detail}"
    );
    setup.ok(&["drill"]);
    assert_eq!(status_of(&setup, slow), "CLOSED");

    // The newest drill older than the interval: open again, and closed by the drill itself
    // (it records what it learned without a full check).
    setup.ok(&["configure", "drill-interval", "2s"]);
    let d = Deadline::after(Duration::from_secs(60));
    while open(&setup, "drill-stale").is_empty() {
        d.check("the drill to age past the interval of 2 s");
        std::thread::sleep(Duration::from_millis(250));
    }
    setup.ok(&["configure", "drill-interval", "1d"]);
    setup.ok(&["drill"]);
    assert!(
        !recorded(&setup.repo, "drill-stale"),
        "{}",
        catalog_rows(&setup.repo)
    );
}

#[test]
fn a_slot_retaining_wal_past_its_limit_opens_and_closes_when_dropped() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    setup.backup(&[]);
    c.psql("select pg_create_physical_replication_slot('held', true)");
    c.psql("insert into t select generate_series(1, 100000)");
    // Under the default limit of 1G: no failure.
    assert!(open(&setup, "slot-retention").is_empty());

    setup.ok(&["run", "CONFIGURE SLOT RETENTION LIMIT TO '1M';"]);
    let held = one_open(&setup, "slot-retention", "HIGH");
    assert_eq!(open(&setup, "slot-retention")[0]["object"], "held");
    let detail = setup.ok(&["failure", "list", &held.to_string(), "--detail"]);
    assert!(
        detail.contains("automatic: none: recman does not drop replication slot held"),
        "{detail}"
    );
    assert!(!recman(setup.args(&["check"])).status.success());
    c.psql("select pg_drop_replication_slot('held')");
    assert_eq!(status_of(&setup, held), "CLOSED");
}

#[test]
fn a_repository_file_system_without_room_for_the_next_full_backup_opens_and_closes() {
    let (repo_dir, repo) = new_repo();
    let disk = Tmpfs::mount(&repo, "512M");
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    let cluster = Cluster::init_with(ClusterOpts {
        archive_repo: Some(repo.clone()),
        ..ClusterOpts::default()
    });
    let setup = Setup {
        repo_dir,
        repo,
        cluster,
    };
    setup.ok(&["register", "database", "--name", "main"]);
    setup.backup(&[]);
    assert!(open(&setup, "repository-space").is_empty());

    // Other files take the room: less is free than the full backup wrote.
    let written = setup.backups()[0]["written_bytes"].as_u64().unwrap();
    let filler = disk.fill("filler", written / 2);
    let full = one_open(&setup, "repository-space", "HIGH");
    let detail = setup.ok(&["failure", "list", &full.to_string(), "--detail"]);
    assert!(
        detail.contains(path_str(&setup.repo)) && detail.contains("the newest full backup wrote"),
        "{detail}"
    );
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(status_of(&setup, full), "CLOSED");

    // A configured minimum above what the file system has: open again until it is lowered.
    setup.ok(&["run", "CONFIGURE REPOSITORY MIN FREE TO '1024M';"]);
    let min = one_open(&setup, "repository-space", "HIGH");
    assert_ne!(min, full);
    setup.ok(&["configure", "repository-min-free", "64M"]);
    assert_eq!(status_of(&setup, min), "CLOSED");
}

/// The seconds from a backup's start to its stop, as `list backup --json` gives them.
fn took_seconds(b: &Value) -> f64 {
    let t = |k: &str| {
        chrono::DateTime::parse_from_rfc3339(b[k].as_str().unwrap_or_else(|| panic!("{k}: {b:#}")))
            .unwrap()
    };
    (t("stop_time") - t("start_time")).num_milliseconds() as f64 / 1000.0
}

#[test]
fn a_backup_overrunning_its_window_too_few_backups_and_a_lock_held_too_long_open_and_close() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    // RATE makes the backup take at least its bytes over the rate: several seconds.
    setup.backup(&["--rate", "8M"]);
    let took = took_seconds(setup.backups().last().unwrap());
    assert!(took > 2.0, "the paced backup took {took}s");
    assert!(
        open(&setup, "backup-overrun").is_empty(),
        "no window, no check"
    );

    setup.ok(&["run", "CONFIGURE BACKUP WINDOW TO '1s';"]);
    let overrun = one_open(&setup, "backup-overrun", "HIGH");
    let detail = setup.ok(&["failure", "list", &overrun.to_string(), "--detail"]);
    assert!(
        detail.contains("predicted to take") && detail.contains("recman advise"),
        "{detail}"
    );
    setup.ok(&["configure", "backup-window", "1h"]);
    assert_eq!(status_of(&setup, overrun), "CLOSED");

    // Fewer full backups than the retention policy's redundancy: HIGH until the advised
    // backup, run as written, makes up the count.
    setup.ok(&["run", "CONFIGURE RETENTION POLICY TO REDUNDANCY 2;"]);
    let unmet = one_open(&setup, "retention-unmet", "HIGH");
    let (_t, scratch) = new_scratch_dir();
    let script = scratch.join("redundancy.rcv");
    assert_eq!(statements(&advise(&setup, &script)), ["BACKUP DATABASE;"]);
    setup.ok(&["run", "-f", path_str(&script)]);
    assert_eq!(status_of(&setup, unmet), "CLOSED");

    // A backup paced to last long holds the repository lock past a limit of one second.
    setup.ok(&["run", "CONFIGURE REPOSITORY LOCK LIMIT TO '1s';"]);
    let mut held = recman_cmd(setup.args(&["backup", "database", "--rate", "1M"]))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lock = setup.repo.join("lock");
    while std::fs::read_to_string(&lock)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            held.try_wait().unwrap().is_none(),
            "the paced backup ended early"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The holder's `since` has whole seconds: past two of them the limit is passed.
    std::thread::sleep(Duration::from_millis(2500));
    let stuck = one_open(&setup, "repository-lock", "HIGH");
    let detail = setup.ok(&["failure", "list", &stuck.to_string(), "--detail"]);
    assert!(
        detail.contains("held by backup database (pid ")
            && detail.contains("automatic: none: recman stops no other command"),
        "{detail}"
    );
    held.kill().unwrap();
    held.wait().unwrap();
    assert_eq!(status_of(&setup, stuck), "CLOSED");
}

#[test]
fn a_fleet_certificate_near_its_end_opens_and_a_new_one_closes_it() {
    let setup = Setup::new();
    setup.ok(&["run", "CONFIGURE CERTIFICATE EXPIRY WARNING TO '30d';"]);
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new(dir.path(), "recman");
    let (cert, key) = pki.client_valid_for("host", "backup-host", 5);
    let fleet = |extra: &[&str]| {
        let mut a = vec![
            "--tls-cert",
            path_str(&cert),
            "--tls-key",
            path_str(&key),
            "--tls-ca",
            path_str(&pki.ca),
        ];
        a.extend_from_slice(extra);
        setup.args(&a)
    };
    setup.backup(&[]);
    let listed = |extra: &[&str]| -> Vec<Value> {
        let out = recman_ok(fleet(
            &[&["failure", "list", "--all", "--json"], extra].concat(),
        ));
        serde_json::from_str::<Value>(&out).unwrap()["failures"]
            .as_array()
            .unwrap()
            .clone()
    };
    let near: Vec<Value> = listed(&[])
        .into_iter()
        .filter(|f| f["kind"] == "certificate-expiry" && f["status"] == "OPEN")
        .collect();
    assert_eq!(near.len(), 1, "{near:#?}");
    assert_eq!(near[0]["priority"], "HIGH");
    assert_eq!(
        near[0]["object"],
        path_str(&cert),
        "the host's certificate, not the CA"
    );
    assert!(
        near[0]["message"]
            .as_str()
            .unwrap()
            .contains("CN=backup-host"),
        "{:#}",
        near[0]
    );
    let id = near[0]["id"].as_i64().unwrap();

    // The manual repair: a new certificate from the CA in the same files.
    let (fresh, fresh_key) = pki.client_valid_for("renewed", "backup-host", 365);
    std::fs::copy(&fresh, &cert).unwrap();
    std::fs::copy(&fresh_key, &key).unwrap();
    let after = listed(&[]);
    let f = after.iter().find(|f| f["id"] == id).unwrap();
    assert_eq!(f["status"], "CLOSED", "{f:#}");
}
