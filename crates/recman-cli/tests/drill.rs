//! Issue 18 (drills and duplicate): a drill restores, recovers, checks and removes a scratch
//! copy and records the outcome with its RTO; a failing check, missing WAL and a damaged piece
//! each fail it and are recorded with the reason. DUPLICATE makes a standby that streams and a
//! clone that opens for writes; taken directories and ports are refused. One cluster for all.

mod common;
mod flows;

use common::*;
use flows::*;
use std::time::Duration;

fn drills(setup: &Setup) -> Vec<serde_json::Value> {
    let out = setup.ok(&["list", "drill", "--json"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("list drill --json ({e}):\n{out}"))
}

fn last_drill(setup: &Setup) -> serde_json::Value {
    drills(setup).pop().expect("a drill was recorded")
}

use common::fixtures::flip;

#[test]
fn drills_pass_fail_and_are_recorded_and_duplicates_stream_or_open() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(id int primary key); insert into t select generate_series(1, 100)");
    let id = setup.backup(&[]);
    // Rows after the backup: the drill must replay WAL to see them.
    c.psql("insert into t select generate_series(101, 150)");
    c.switch_wal_and_wait_archived();
    let (_scratch, scratch) = new_scratch_dir();

    // 1. A drill of the newest backup passes, measures a positive RTO and replays WAL; its
    // directory is gone afterwards.
    let dir = scratch.join("drill1");
    let out = setup.ok(&[
        "drill",
        "--dir",
        path_str(&dir),
        "--check-sql",
        "select count(*) = 150 from t",
    ]);
    assert!(out.contains("drill PASSED"), "{out}");
    let d = last_drill(&setup);
    assert_eq!(d["status"], "PASSED", "{d}");
    assert_eq!(d["backup_id"], id.as_str(), "{d}");
    assert!(d["rto_ms"].as_i64().unwrap() > 0, "{d}");
    assert!(d["recovery_ms"].as_i64().unwrap() > 0, "{d}");
    assert!(d["wal_bytes"].as_i64().unwrap() > 0, "{d}");
    assert!(d["bytes_restored"].as_i64().unwrap() > 0, "{d}");
    let checks = d["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "{d}");
    assert!(checks.iter().all(|c| c["passed"] == true), "{d}");
    assert!(
        checks[0]["name"].as_str().unwrap().contains("pg_amcheck"),
        "{d}"
    );
    assert!(!dir.exists(), "the drill left {} behind", dir.display());

    // 2. A check that returns false fails the drill, which is recorded with that check.
    let err = setup.err(&["drill", "--check-sql", "select count(*) = 999 from t"]);
    assert!(
        err.contains("drill failed") && err.contains("hint"),
        "{err}"
    );
    let d = last_drill(&setup);
    assert_eq!(d["status"], "FAILED", "{d}");
    assert!(
        d["error"].as_str().unwrap().contains("count(*) = 999"),
        "{d}"
    );
    assert_eq!(d["checks"][1]["passed"], false, "{d}");
    assert!(d["rto_ms"].as_i64().unwrap() > 0, "{d}");

    // 3. A target past the archived WAL fails and says why.
    let future = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d %H:%M:%S+00")
        .to_string();
    let err = setup.err(&["drill", "--until-time", &future]);
    assert!(err.contains("drill failed"), "{err}");
    let d = last_drill(&setup);
    assert_eq!(d["status"], "FAILED", "{d}");
    let why = d["error"].as_str().unwrap();
    assert!(why.contains("recovery") || why.contains("wal"), "{d}");

    // 4. No backup for the target time: refused, recorded.
    let err = setup.err(&["drill", "--until-time", "2001-01-01 00:00:00+00"]);
    assert!(err.contains("no backup is consistent before"), "{err}");
    assert_eq!(last_drill(&setup)["status"], "FAILED");

    // 5. A directory that is not empty is refused before anything is written.
    let taken = scratch.join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    chown_tree_to_cluster_user(&taken);
    let n = drills(&setup).len();
    let err = setup.err(&["drill", "--dir", path_str(&taken)]);
    assert!(
        err.contains("is not empty") && err.contains("hint"),
        "{err}"
    );
    assert_eq!(drills(&setup).len(), n);
    let err = setup.err(&["duplicate", "database", "--to", path_str(&taken)]);
    assert!(err.contains("not empty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(taken.join("keep.txt")).unwrap(),
        "mine"
    );

    // 6. A taken port is refused, and nothing is written.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let to = scratch.join("never");
    let err = setup.err(&[
        "duplicate",
        "database",
        "--to",
        path_str(&to),
        "--port",
        &port,
    ]);
    assert!(err.contains(&format!("port {port} is taken")), "{err}");
    assert!(!to.exists());
    drop(listener);

    // 7. A standby: recovers from the archive, streams, stays in recovery.
    let sb = scratch.join("standby");
    let out = setup.ok(&[
        "duplicate",
        "database",
        "--to",
        path_str(&sb),
        "--for-standby",
        "--primary-conninfo",
        &c.conninfo(),
    ]);
    assert!(out.contains("a standby"), "{out}");
    assert!(sb.join("standby.signal").exists() && !sb.join("recovery.signal").exists());
    let standby = Cluster::from_restored(sb.clone());
    assert_eq!(standby.psql("select pg_is_in_recovery()"), "t");
    c.psql("insert into t values (1000)");
    let deadline = Deadline::after(Duration::from_secs(120));
    loop {
        if standby
            .try_psql("select count(*) from t where id = 1000")
            .is_ok_and(|v| v == "1")
        {
            break;
        }
        deadline.check(format_args!(
            "the row never reached the standby:\n{}",
            standby.log_tail()
        ));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        standby.psql("select count(*) from pg_stat_wal_receiver where status = 'streaming'"),
        "1"
    );
    drop(standby);

    // 8. A clone: opens for writes with the archived rows.
    c.switch_wal_and_wait_archived();
    let cl = scratch.join("clone");
    let out = setup.ok(&["duplicate", "database", "--to", path_str(&cl)]);
    assert!(out.contains("a clone"), "{out}");
    let clone = Cluster::from_restored(cl);
    clone.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(clone.psql("select pg_is_in_recovery()"), "f");
    clone.psql("insert into t values (2000)");
    assert_eq!(clone.psql("select count(*) from t"), "152");
    drop(clone);

    // 9. A damaged piece of the newest backup fails the drill, naming the piece.
    let bdir = setup.repo.join("main/backup").join(&id);
    let piece = std::fs::read_dir(&bdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rmp"))
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    flip(&piece, piece.metadata().unwrap().len() / 2);
    let name = piece.file_name().unwrap().to_string_lossy().to_string();
    let err = setup.err(&["drill"]);
    assert!(err.contains(&name), "{err}");
    let d = last_drill(&setup);
    assert_eq!(d["status"], "FAILED", "{d}");
    assert!(d["error"].as_str().unwrap().contains(&name), "{d}");

    // report need-backup --drill-days: the passed drill is recent.
    let out = setup.ok(&["report", "need-backup", "--drill-days", "1"]);
    assert!(!out.contains("no restore drill passed"), "{out}");
}
