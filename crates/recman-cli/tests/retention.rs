//! Issue 5, acceptance 1 (against real PostgreSQL) and 5: `delete obsolete` keeps every point
//! the policy covers recoverable (restores to random targets after it), removes what the
//! policy does not need, and SIGKILL of `backup database`, `delete obsolete` and `archive-push`
//! at random points (75) never leaves the catalog claiming what the media lack.

mod common;
mod flows;

use common::*;
use flows::*;
use serde_json::Value;
use std::time::{Duration, Instant};

fn markers_at(setup: &Setup, target: &[&str]) -> String {
    let (_keep, to) = setup.restore(target);
    let c = Cluster::from_restored(to);
    c.wait_recovery_done(Duration::from_secs(180));
    c.psql("select coalesce(string_agg(id::text, ',' order by id), '') from markers")
}

fn wal_names(setup: &Setup) -> Vec<String> {
    let v: Value = serde_json::from_str(&setup.ok(&["list", "archivelog", "--json"])).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect()
}

fn json(setup: &Setup, args: &[&str]) -> Value {
    serde_json::from_str(&setup.ok(args)).unwrap()
}

#[test]
fn delete_obsolete_keeps_the_window_recoverable() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    let b1 = setup.backup(&[]);
    c.psql("insert into markers values (1)");
    c.switch_wal_and_wait_archived();
    let b2 = setup.backup(&[]);
    std::thread::sleep(Duration::from_millis(1100));
    c.psql("insert into markers values (2)");
    std::thread::sleep(Duration::from_millis(1100));
    let t2 = c.psql("select clock_timestamp()::text");
    std::thread::sleep(Duration::from_millis(1100));
    c.psql("insert into markers values (3)");
    c.switch_wal_and_wait_archived();

    // A window starting after b2's end (1.7 s; b2 ended over 3 s ago) needs only b2 as its
    // base; one reaching back before b1 keeps both, as there is no base older than it.
    let rep = json(
        &setup,
        &[
            "report",
            "obsolete",
            "--recovery-window",
            "0.00002",
            "--json",
        ],
    );
    assert_eq!(rep["kept_backups"], serde_json::json!([b2]), "{rep}");
    assert_eq!(rep["backups"], serde_json::json!([b1]), "{rep}");
    let rep = json(
        &setup,
        &["report", "obsolete", "--recovery-window", "1", "--json"],
    );
    assert_eq!(rep["kept_backups"], serde_json::json!([b1, b2]), "{rep}");
    assert_eq!(rep["archivelogs"], serde_json::json!([]), "{rep}");
    let rep = json(
        &setup,
        &["report", "obsolete", "--redundancy", "2", "--json"],
    );
    assert_eq!(rep["backups"], serde_json::json!([]), "{rep}");
    let text = setup.ok(&["report", "obsolete", "--redundancy", "1"]);
    assert!(
        text.contains("Backup Set") && text.contains(&b1) && text.contains("Archive Log"),
        "{text}"
    );

    // Without a terminal and without --noprompt nothing is deleted.
    let err = setup.err(&["delete", "obsolete", "--redundancy", "1"]);
    assert!(err.contains("--noprompt"), "{err}");
    assert_eq!(setup.backups().len(), 2);

    let b2_start = setup.backups()[1]["start_wal"]
        .as_str()
        .unwrap()
        .to_string();
    let before = wal_names(&setup);
    let out = setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    assert!(out.contains("Deleted"), "{out}");
    let left: Vec<String> = setup
        .backups()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left, vec![b2.clone()]);
    assert!(!setup.repo.join("main/backup").join(&b1).exists());
    let after = wal_names(&setup);
    for w in &before {
        let needed = w.ends_with(".history") || w[8..24] >= b2_start[8..24];
        assert_eq!(
            after.contains(w),
            needed,
            "wal {w} (b2 starts at {b2_start})"
        );
    }
    let n = json(
        &setup,
        &["report", "obsolete", "--redundancy", "1", "--json"],
    );
    assert_eq!(n["backups"], serde_json::json!([]));
    assert_eq!(n["archivelogs"], serde_json::json!([]));

    // Every point after b2 is still reachable: a time between markers 2 and 3, and the end.
    assert_eq!(markers_at(&setup, &["--until-time", &t2]), "1,2");
    assert_eq!(markers_at(&setup, &[]), "1,2,3");
}

/// Every AVAILABLE piece and WAL file the catalog lists is on disk with its recorded size.
fn assert_catalog_matches_media(setup: &Setup, when: &str) {
    for b in setup.backups() {
        if b["status"] != "AVAILABLE" {
            continue;
        }
        for p in b["pieces"].as_array().unwrap() {
            let path = setup.repo.join(p["path"].as_str().unwrap());
            let len = std::fs::metadata(&path).map(|m| m.len()).ok();
            assert_eq!(
                len,
                p["size"].as_u64(),
                "{when}: piece {} of {}",
                path.display(),
                b["id"]
            );
        }
    }
    let wal: Value = serde_json::from_str(&setup.ok(&["list", "archivelog", "--json"])).unwrap();
    for w in wal.as_array().unwrap() {
        if w["status"] != "AVAILABLE" {
            continue;
        }
        let path = setup.repo.join(w["path"].as_str().unwrap());
        let len = std::fs::metadata(&path).map(|m| m.len()).ok();
        assert_eq!(
            len,
            w["stored_size"].as_u64(),
            "{when}: wal {}",
            path.display()
        );
    }
}

fn kill_after(args: Vec<String>, delay: Duration) {
    let mut child = recman_cmd(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn sigkill_during_backup_delete_obsolete_and_archive_push() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    setup.backup(&[]);
    for i in 0..4 {
        c.psql(&format!("insert into t values ({i})"));
        c.switch_wal_and_wait_archived();
    }
    setup.backup(&[]);
    let sysid = c.system_identifier();
    let (_t, scratch) = new_scratch_dir();
    // Pseudo-random delays from a fixed seed, so a failure can be replayed.
    let mut seed: u64 = 0x5eed_1234;
    let mut next = |max: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % max
    };
    let t0 = Instant::now();
    let rounds = 25;
    for i in 0..rounds {
        // A segment of another timeline at position 0: obsolete as soon as it is archived.
        let name = format!("{:08X}{:016X}", 0x40 + i, 0);
        let f = scratch.join(&name);
        std::fs::write(&f, fake_segment(sysid, &name, i as u8)).unwrap();
        chown_to_cluster_user(&f);
        kill_after(
            setup.args(&["--db", "main", "archive-push", path_str(&f)]),
            Duration::from_millis(next(120)),
        );
        assert_catalog_matches_media(&setup, &format!("round {i}, after killing archive-push"));
        kill_after(
            setup.args(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]),
            Duration::from_millis(next(60)),
        );
        assert_catalog_matches_media(&setup, &format!("round {i}, after killing delete obsolete"));
        kill_after(
            setup.args(&["backup", "database", "--channels", "2"]),
            Duration::from_millis(50 + next(900)),
        );
        assert_catalog_matches_media(&setup, &format!("round {i}, after killing backup"));
        // The next command succeeds.
        setup.ok(&["--db", "main", "archive-push", path_str(&f)]);
        assert_catalog_matches_media(&setup, &format!("round {i}, after archive-push"));
    }
    // The next backup succeeds after all those kills and marks the killed ones FAILED; none
    // stays RUNNING. (A delete obsolete killed after removing some pieces leaves its backup
    // EXPIRED: the catalog no longer claims it.)
    setup.backup(&[]);
    let statuses: Vec<String> = setup
        .backups()
        .iter()
        .map(|b| format!("{} {}", b["id"], b["status"]))
        .collect();
    assert!(
        statuses.iter().all(|s| !s.ends_with("\"RUNNING\"")),
        "a killed backup is still RUNNING: {statuses:?}"
    );
    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    assert_catalog_matches_media(&setup, "after the last delete obsolete");
    let rep = json(
        &setup,
        &["report", "obsolete", "--redundancy", "1", "--json"],
    );
    assert_eq!(rep["backups"], serde_json::json!([]), "{rep}");
    assert_eq!(rep["archivelogs"], serde_json::json!([]), "{rep}");
    let b: Vec<_> = setup
        .backups()
        .into_iter()
        .filter(|b| b["status"] == "AVAILABLE")
        .collect();
    assert_eq!(b.len(), 1);
    setup.ok(&["validate", "backup", b[0]["id"].as_str().unwrap()]);
    eprintln!(
        "{} kill points in {:.1}s",
        rounds * 3,
        t0.elapsed().as_secs_f64()
    );
}
