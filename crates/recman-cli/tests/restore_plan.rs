//! Issue 14 point 3 and issue 22's WAL check: `restore database --preview` names the pieces
//! and WAL segments the following restore reads; `--validate` reads them all and names what is
//! missing or damaged, failing over to a copy as restore does; a gap in the archived WAL makes
//! a restore to the end refuse before writing, while a target before the gap restores. The
//! statements `RESTORE DATABASE PREVIEW;` and `RESTORE DATABASE VALIDATE;` through `recman run`;
//! the plan follows the newest timeline through its history file, as recovery does; an image
//! copy is planned and its files validated.

mod common;
mod flows;

use common::*;
use flows::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

fn preview(setup: &Setup, extra: &[&str]) -> Value {
    let mut a = vec!["restore", "database", "--preview", "--json"];
    a.extend_from_slice(extra);
    let out = setup.ok(&a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("preview is not JSON ({e}):\n{out}"))
}

fn plan_pieces(plan: &Value) -> BTreeSet<String> {
    plan["backups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["pieces"].as_array().unwrap().iter())
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect()
}

fn plan_segments(plan: &Value) -> BTreeSet<String> {
    plan["wal"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

fn piece<'a>(plan: &'a Value, path: &str) -> &'a Value {
    plan["backups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["pieces"].as_array().unwrap().iter())
        .find(|p| p["path"] == path)
        .unwrap_or_else(|| panic!("the plan does not list piece {path}:\n{plan:#}"))
}

fn script(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    chown_to_cluster_user(&p);
    path_str(&p).to_string()
}

/// The WAL segments PostgreSQL fetched through restore_command, from its server log.
fn restored_segments(log: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter_map(|l| l.split("restored log file \"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .filter(|n| n.len() == 24)
        .map(str::to_string)
        .collect()
}

#[test]
fn preview_names_the_pieces_and_wal_that_restore_uses() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    c.psql("create table markers(id int)");
    let id = setup.backup(&["--channels", "2", "--filesperset", "8"]);
    for i in 1..=3 {
        c.psql(&format!("insert into markers values ({i})"));
        c.switch_wal_and_wait_archived();
    }
    let expected = c.all_table_checksums();
    // Nothing is archived after this: the preview and the restore see the same archive.
    c.stop();

    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let plan = preview(&setup, &["--to", path_str(&to)]);
    assert!(!to.exists(), "a preview created {}", to.display());
    assert_eq!(plan["backup_id"], id.as_str(), "{plan:#}");
    assert!(plan["refusal"].is_null(), "{plan:#}");
    assert!(plan["wal"]["gaps"].as_array().unwrap().is_empty());
    assert!(plan["estimate"]["bytes_per_second"].is_null(), "{plan:#}");
    let pieces = plan_pieces(&plan);
    let segments = plan_segments(&plan);
    assert!(pieces.len() >= 2, "{pieces:?}");
    assert!(segments.len() >= 4, "{segments:?}");
    for p in plan["backups"][0]["pieces"].as_array().unwrap() {
        assert_eq!(p["copies"][0]["device"], "repository", "{p:#}");
        assert_eq!(p["copies"][0]["present"], true, "{p:#}");
    }

    // The text form and the statement print the same plan.
    let text = setup.ok(&["restore", "database", "--preview"]);
    let out = setup.ok(&[
        "run",
        "-f",
        &script(&dir, "p.rcv", "RESTORE DATABASE PREVIEW;\n"),
    ]);
    for p in &pieces {
        assert!(text.contains(p.as_str()), "{p} not in:\n{text}");
        assert!(out.contains(p.as_str()), "{p} not in:\n{out}");
    }
    let first = segments.first().unwrap();
    assert!(
        text.contains(first.as_str()) && out.contains(first.as_str()),
        "{out}"
    );
    assert!(text.contains("estimated duration: unknown"), "{text}");
    let out = setup.ok(&[
        "run",
        "-f",
        &script(&dir, "v.rcv", "RESTORE DATABASE VALIDATE;\n"),
    ]);
    assert!(out.contains("validated the restore"), "{out}");
    assert!(!to.exists());

    // The restore reads exactly the planned pieces (its INPUT statistics rows) ...
    setup.ok(&["restore", "database", "--to", path_str(&to)]);
    let io: Value = serde_json::from_str(&setup.ok(&["report", "io", &id, "--json"])).unwrap();
    let read: BTreeSet<String> = io["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["job_type"] == "RESTORE" && r["kind"] == "INPUT")
        .map(|r| r["filename"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(read, pieces, "pieces read differ from the preview");
    // ... and PostgreSQL fetches exactly the planned segments.
    let r = start_and_compare(&to, &expected);
    assert_eq!(
        restored_segments(&r.log),
        segments,
        "segments restored differ from the preview"
    );
    r.stop();
    // Now a restore has been timed: the estimate has a rate.
    let plan = preview(&setup, &[]);
    assert!(
        plan["estimate"]["bytes_per_second"].as_u64().unwrap() > 0,
        "{plan:#}"
    );
}

#[test]
fn validate_names_a_missing_piece_that_preview_lists_with_its_copy() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    setup.backup(&["--filesperset", "8"]);
    c.switch_wal_and_wait_archived();
    let (_t, dir) = new_scratch_dir();
    let plan = preview(&setup, &[]);
    let pieces: Vec<String> = plan_pieces(&plan).into_iter().collect();
    assert!(pieces.len() >= 2, "{pieces:?}");
    let (victim, damaged) = (&pieces[0], &pieces[1]);
    let path = setup.repo.join(victim);
    let aside = dir.join("aside");
    std::fs::rename(&path, &aside).unwrap();
    let dpath = setup.repo.join(damaged);
    let good = std::fs::read(&dpath).unwrap();
    let mut bad = good.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0x20;
    std::fs::write(&dpath, &bad).unwrap();

    // --validate names both; the statement too.
    let err = setup.err(&["restore", "database", "--validate"]);
    assert!(
        err.contains(victim.as_str()) && err.contains(damaged.as_str()),
        "{err}"
    );
    let out = recman(setup.args(&[
        "run",
        "-f",
        &script(&dir, "v.rcv", "RESTORE DATABASE VALIDATE;\n"),
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains(victim.as_str()),
        "{stderr}"
    );
    std::fs::write(&dpath, &good).unwrap();

    // --preview still lists the missing piece, says so, and says the restore would refuse;
    // the restore refuses before writing.
    let plan = preview(&setup, &[]);
    let p = piece(&plan, victim);
    assert_eq!(p["copies"][0]["present"], false, "{p:#}");
    assert_eq!(plan["missing_pieces"][0], victim.as_str(), "{plan:#}");
    assert!(plan["refusal"].as_str().unwrap().contains(victim.as_str()));
    let to = dir.join("restored");
    let err = setup.err(&["restore", "database", "--to", path_str(&to)]);
    assert!(err.contains(victim.as_str()), "{err}");
    assert!(!to.exists(), "a refused restore created {}", to.display());

    // With a copy on tape, the preview lists it and --validate reads the piece from it.
    std::fs::rename(&aside, &path).unwrap();
    let (_lib, lib) = new_scratch_dir();
    let spec = format!("vtape:{}/lib,drives=2,rate=2G,capacity=64M", path_str(&lib));
    setup.ok(&["configure", "device-type", "sbt", "parms", &spec]);
    setup.ok(&["backup", "backupset", "all", "--device-type", "sbt"]);
    std::fs::remove_file(&path).unwrap();
    let plan = preview(&setup, &[]);
    let p = piece(&plan, victim);
    let copies = p["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 2, "{p:#}");
    assert_eq!(copies[0]["device"], "repository");
    assert_eq!(copies[0]["present"], false);
    assert_eq!(copies[1]["device"], "sbt");
    assert_eq!(copies[1]["present"], true, "{p:#}");
    assert!(plan["refusal"].is_null(), "{plan:#}");
    let v: Value =
        serde_json::from_str(&setup.ok(&["restore", "database", "--validate", "--json"])).unwrap();
    let used = v["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == victim.as_str())
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(used["from"].as_str().unwrap().starts_with("sbt"), "{used}");
}

#[test]
fn a_gap_in_the_wal_refuses_a_restore_to_the_end_before_writing() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    setup.backup(&[]);
    c.psql("insert into markers values (1)");
    let at_t1 = c.all_table_checksums();
    std::thread::sleep(Duration::from_millis(1200));
    let t1 = c.psql("select clock_timestamp()::text");
    std::thread::sleep(Duration::from_millis(1200));
    // A commit after the target in the same segment: recovery to t1 stops there.
    c.psql("insert into markers values (2)");
    let before_gap = c.switch_wal_and_wait_archived();
    c.psql("insert into markers values (3)");
    let gap = c.switch_wal_and_wait_archived();
    c.psql("insert into markers values (4)");
    c.switch_wal_and_wait_archived();
    c.stop();
    let wal = setup.archivelogs();
    let object = wal
        .iter()
        .find(|w| w["name"] == gap.as_str())
        .unwrap_or_else(|| panic!("{gap} not archived: {wal:?}"))["path"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(setup.repo.join(&object)).unwrap();

    let plan = preview(&setup, &[]);
    assert_eq!(plan["wal"]["gaps"], serde_json::json!([gap]), "{plan:#}");
    assert!(plan["refusal"].as_str().unwrap().contains(gap.as_str()));

    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let err = setup.err(&["restore", "database", "--to", path_str(&to)]);
    assert!(
        err.contains(gap.as_str()) && err.contains("--allow-wal-gap") && err.contains("hint"),
        "{err}"
    );
    assert!(!to.exists(), "a refused restore created {}", to.display());
    let err = setup.err(&["restore", "database", "--validate"]);
    assert!(err.contains(gap.as_str()), "{err}");

    // A target before the gap: planned without it, validated, restored with the data of then.
    let plan = preview(&setup, &["--until-time", &t1]);
    assert!(plan["refusal"].is_null(), "{plan:#}");
    assert!(!plan_segments(&plan).contains(&gap), "{plan:#}");
    setup.ok(&["restore", "database", "--validate", "--until-time", &t1]);
    // A damaged segment before the target: --validate names it.
    let damaged = setup.repo.join(
        wal.iter()
            .find(|w| w["name"] == before_gap.as_str())
            .unwrap()["path"]
            .as_str()
            .unwrap(),
    );
    let good = std::fs::read(&damaged).unwrap();
    let mut bad = good.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0x08;
    std::fs::write(&damaged, &bad).unwrap();
    let err = setup.err(&["restore", "database", "--validate", "--until-time", &t1]);
    assert!(err.contains(before_gap.as_str()), "{err}");
    std::fs::write(&damaged, &good).unwrap();
    let (_k, to1) = setup.restore(&["--until-time", &t1]);
    let r = start_and_compare(&to1, &at_t1);
    assert_eq!(
        r.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1"
    );
    r.stop();

    // Told to, the restore recovers up to the gap. The gap is made "not archived" first: a
    // segment the catalog lists but whose object is gone is for archive-get to judge.
    setup.ok(&["crosscheck", "archivelog", "all"]);
    setup.ok(&["delete", "expired", "--noprompt"]);
    let to2 = dir.join("up-to-the-gap");
    let err = setup.err(&["restore", "database", "--to", path_str(&to2)]);
    assert!(err.contains(gap.as_str()), "{err}");
    setup.ok(&[
        "restore",
        "database",
        "--allow-wal-gap",
        "--to",
        path_str(&to2),
    ]);
    let r = Cluster::from_restored(to2);
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(
        r.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1,2"
    );
    r.stop();
}

#[test]
fn the_plan_follows_the_newest_timeline_and_its_parent() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int)");
    setup.backup(&[]);
    c.psql("insert into markers values (1)");
    let switched = c.switch_wal_and_wait_archived();
    c.stop();

    // A clone that keeps archiving into the repository: it opens on timeline 2.
    let (_k, clone_dir) = setup.restore(&["--archive-mode", "preserve"]);
    let clone = Cluster::from_restored(clone_dir);
    clone.wait_recovery_done(Duration::from_secs(180));
    clone.psql("insert into markers values (2)");
    clone.switch_wal_and_wait_archived();
    clone.stop();
    assert!(
        setup
            .archivelogs()
            .iter()
            .any(|w| w["name"] == "00000002.history"),
        "the clone archived no history file"
    );

    // Latest: timeline 1 up to the switch, then timeline 2 to its newest segment.
    let plan = preview(&setup, &[]);
    assert_eq!(plan["wal"]["timeline"], 2, "{plan:#}");
    let spans: Vec<u64> = plan["wal"]["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["timeline"].as_u64().unwrap())
        .collect();
    assert_eq!(spans, vec![1, 2], "{plan:#}");
    assert!(
        plan["wal"]["gaps"].as_array().unwrap().is_empty(),
        "{plan:#}"
    );
    let segments = plan_segments(&plan);
    assert!(segments.contains(&switched), "{segments:?}");
    assert!(
        segments.iter().any(|s| s.starts_with("00000002")),
        "{segments:?}"
    );
    // The backup's own timeline, when asked for: timeline 1 names only.
    let own = preview(&setup, &["--timeline", "current"]);
    assert_eq!(own["wal"]["timeline"], 1, "{own:#}");
    assert!(
        plan_segments(&own)
            .iter()
            .all(|s| s.starts_with("00000001")),
        "{own:#}"
    );
    assert!(
        own["wal"]["last"].as_str().unwrap() >= switched.as_str(),
        "{own:#}"
    );

    let (_k2, to) = setup.restore(&[]);
    let r = Cluster::from_restored(to);
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(
        r.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1,2"
    );
    assert_eq!(
        restored_segments(&r.log),
        segments,
        "segments restored differ from the preview"
    );
    r.stop();

    // A restore onto the older timeline, not only its preview: recovery stays on timeline 1
    // and ends with what timeline 1 holds, without the clone's row.
    let (_k3, to) = setup.restore(&["--timeline", "1"]);
    let r = Cluster::from_restored(to);
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(
        r.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1"
    );
    let restored = restored_segments(&r.log);
    assert!(
        !restored.is_empty() && restored.iter().all(|s| s.starts_with("00000001")),
        "{restored:?}"
    );
    r.stop();
}

#[test]
fn an_image_copy_is_planned_and_validated() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    setup.ok(&[
        "backup",
        "database",
        "--incremental-level",
        "1",
        "--for-recover-of-copy",
        "--tag",
        "ROLL",
    ]);
    c.switch_wal_and_wait_archived();
    let plan = preview(&setup, &["--from-copy", "ROLL"]);
    assert_eq!(plan["image_copy"], "ROLL", "{plan:#}");
    assert!(plan_pieces(&plan).is_empty(), "{plan:#}");
    assert!(plan["refusal"].is_null(), "{plan:#}");
    let segments = plan_segments(&plan);
    assert!(!segments.is_empty(), "{plan:#}");
    let v: Value = serde_json::from_str(&setup.ok(&[
        "restore",
        "database",
        "--validate",
        "--json",
        "--from-copy",
        "ROLL",
    ]))
    .unwrap();
    let read: BTreeSet<String> = v["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(read, segments, "{v:#}");
    assert!(v["pieces"].as_array().unwrap().len() > 100, "{v:#}");

    // A damaged file of the copy is named.
    let base = setup.repo.join("main/copy/ROLL/data/base");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&base)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    files.sort_by_key(|p| std::fs::metadata(p).unwrap().len());
    let victim = files.last().unwrap();
    let mut bytes = std::fs::read(victim).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(victim, &bytes).unwrap();
    let err = setup.err(&["restore", "database", "--validate", "--from-copy", "ROLL"]);
    assert!(err.contains(path_str(victim)), "{err}");
}
