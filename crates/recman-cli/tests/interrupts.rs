//! Issue 22, acceptance 3: SIGTERM and SIGKILL at points in a backup and a restore. A stopped
//! backup is FAILED with its pieces removed and pg_backup_stop called; after a kill, `list`,
//! `validate` and `report` agree on the job's state, nothing partial is AVAILABLE, and the next
//! `delete obsolete` removes what it left; a killed restore is run again with --force and the
//! data is equal. Backups and restores are slowed by the fault switch, never by sleeping, and
//! signalled once a piece (or a restored file) exists.

mod common;
mod flows;

use common::*;
use flows::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} failed");
}

/// Spawns recman with `env`, its stderr in `log` (read once it ended).
fn spawn(args: Vec<String>, env: &[(&str, &str)], log: &Path) -> Child {
    let mut cmd = recman_cmd(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Polls `ready` until it holds; the child must still be running then. The 120 s bound only
/// stops a test that would otherwise hang; nothing is asserted about time.
fn wait_until(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Deadline::after(Duration::from_secs(120));
    loop {
        if ready() {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the command ended ({status}) before {what}");
        }
        if deadline.passed() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no {what} in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Files under `dir` (recursively) whose name satisfies `f`.
fn files_where(dir: &Path, f: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files_where(&p, f));
        } else if f(&e.file_name().to_string_lossy()) {
            out.push(p);
        }
    }
    out
}

/// A slow backup (every read under base/ takes 25 ms more) tagged `tag`, returned once it has
/// stored a piece; its id too.
fn slow_backup(setup: &Setup, tag: &str, log: &Path) -> (Child, String) {
    let mut child = spawn(
        setup.args(&["backup", "database", "--filesperset", "1", "--tag", tag]),
        &[("RECMAN_FAULT_SLOW_READ", "base/:25")],
        log,
    );
    let mut id = String::new();
    wait_until(&mut child, "a stored piece", || {
        let Some(b) = setup.backups().into_iter().find(|b| b["tag"] == tag) else {
            return false;
        };
        id = b["id"].as_str().unwrap().to_string();
        let dir = setup.repo.join("main/backup").join(&id);
        !files_where(&dir, &|n| n.ends_with(".rmp")).is_empty()
    });
    (child, id)
}

fn backup_of<'a>(list: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    list.iter()
        .find(|b| b["id"] == id)
        .unwrap_or_else(|| panic!("backup {id} is not listed: {list:?}"))
}

/// Temporary pieces under the backups (the WAL archive is left out: the cluster's archiver
/// may be writing there at any moment).
fn temporaries(setup: &Setup) -> Vec<PathBuf> {
    files_where(&setup.repo.join("main/backup"), &|n| n.contains(".tmp"))
}

#[test]
fn sigterm_stops_a_backup_cleanly() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(2);
    let good = setup.backup(&[]);
    let (_t, scratch) = new_scratch_dir();
    let log = scratch.join("stderr");

    let (mut child, id) = slow_backup(&setup, "STOPPED", &log);
    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}: {err}");
    assert!(
        err.contains("stopped by SIGTERM")
            && err.contains(&format!("backup {id} is recorded FAILED"))
            && err.contains("earlier backups and archived WAL are kept"),
        "{err}"
    );

    // Recorded FAILED by the stopped process itself, its pieces gone at once.
    let list = setup.backups();
    let b = backup_of(&list, &id);
    assert_eq!(b["status"], "FAILED", "{b}");
    assert!(
        b["error"].as_str().unwrap().contains("stopped by SIGTERM"),
        "{b}"
    );
    assert!(!setup.repo.join("main/backup").join(&id).exists());
    assert_eq!(temporaries(&setup), Vec::<PathBuf>::new());
    let v = setup.err(&["validate", "backup", &id]);
    assert!(v.contains("is FAILED, not AVAILABLE"), "{v}");
    // pg_backup_stop was called: the server did not have to abort the backup itself.
    let server = std::fs::read_to_string(&setup.cluster.log).unwrap();
    assert!(
        !server.contains("aborting backup due to backend exiting"),
        "the stopped backup was left to the server to abort:\n{}",
        setup.cluster.log_tail()
    );
    setup.ok(&["validate", "backup", &good]);

    // A second signal ends the process at once, without the clean-up: then it is a kill.
    let (mut child, id2) = slow_backup(&setup, "TWICE", &log);
    signal(&child, "-TERM");
    signal(&child, "-INT");
    let status = child.wait().unwrap();
    assert!(
        [Some(128 + libc::SIGINT), Some(128 + libc::SIGTERM)].contains(&status.code()),
        "{status}"
    );
    let list = setup.backups();
    assert_eq!(backup_of(&list, &id2)["status"], "FAILED");
    let v = setup.err(&["validate", "backup", &id2]);
    assert!(v.contains("is FAILED, not AVAILABLE"), "{v}");
}

#[test]
fn sigkilled_backup_is_failed_everywhere_and_delete_obsolete_removes_it() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(2);
    let good = setup.backup(&[]);
    let (_t, scratch) = new_scratch_dir();
    let log = scratch.join("stderr");

    let (mut child, id) = slow_backup(&setup, "KILLED", &log);
    child.kill().unwrap();
    child.wait().unwrap();
    let dir = setup.repo.join("main/backup").join(&id);
    assert!(dir.exists(), "the killed backup left nothing to clean up");

    // list, validate and report agree: the backup is FAILED, and obsolete.
    let list = setup.backups();
    assert_eq!(backup_of(&list, &id)["status"], "FAILED");
    assert_eq!(
        list.iter().filter(|b| b["status"] == "AVAILABLE").count(),
        1,
        "{list:?}"
    );
    let v = setup.err(&["validate", "backup", &id]);
    assert!(v.contains("is FAILED, not AVAILABLE"), "{v}");
    let rep: serde_json::Value =
        serde_json::from_str(&setup.ok(&["report", "obsolete", "--redundancy", "1", "--json"]))
            .unwrap();
    assert_eq!(rep["backups"], serde_json::json!([id]), "{rep}");

    // The next delete obsolete removes its directory and temporary pieces.
    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    assert!(!dir.exists(), "delete obsolete left {}", dir.display());
    assert_eq!(temporaries(&setup), Vec::<PathBuf>::new());
    let list = setup.backups();
    assert!(list.iter().all(|b| b["id"] != id), "{list:?}");
    setup.ok(&["validate", "backup", &good]);
}

#[test]
fn stopped_and_killed_restores_are_cleaned_and_rerun_with_force() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(2);
    setup.backup(&[]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_t, scratch) = new_scratch_dir();
    let log = scratch.join("stderr");
    // Every record of a piece read by restore takes 20 ms more.
    let slow = [("RECMAN_FAULT_SLOW_READ", ".rmp:20")];
    let marker = ".recman-restore-in-progress";
    let restore = |to: &Path, extra: &[&str]| {
        let mut a = vec!["restore", "database", "--to", path_str(to)];
        a.extend_from_slice(extra);
        setup.args(&a)
    };
    let restored_files = |to: &Path| files_where(&to.join("base"), &|_| true).len();

    // SIGTERM: the restore removes what it wrote and says so.
    let stopped = scratch.join("stopped");
    let mut child = spawn(restore(&stopped, &[]), &slow, &log);
    wait_until(&mut child, "a restored file", || {
        restored_files(&stopped) > 0
    });
    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}: {err}");
    assert!(
        err.contains("stopped by SIGTERM") && err.contains("was removed"),
        "{err}"
    );
    assert_eq!(files_where(&stopped, &|_| true), Vec::<PathBuf>::new());

    // SIGKILL: the directory keeps what was written and the restore's marker.
    let killed = scratch.join("killed");
    let mut child = spawn(restore(&killed, &["--channels", "2"]), &slow, &log);
    wait_until(&mut child, "a restored file", || {
        restored_files(&killed) > 0
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(killed.join(marker).is_file());
    // Stands for whatever the killed restore wrote that this backup would not write again
    // (a file of another backup's layout, a half-written temporary).
    let debris = killed.join("base").join("debris-of-the-killed-restore");
    std::fs::write(&debris, "left by the killed restore").unwrap();
    let err = setup.err(&["restore", "database", "--to", path_str(&killed)]);
    assert!(
        err.contains("interrupted restore") && err.contains("--force"),
        "{err}"
    );
    // A statement is told the language's clause for the same action, not the flag.
    let stmt = format!("RESTORE DATABASE TO '{}';", path_str(&killed));
    let err = setup.err(&["run", &stmt]);
    assert!(
        err.contains("interrupted restore") && err.contains("(FORCE)") && !err.contains("--force"),
        "{err}"
    );

    // --force never clears a directory recman did not mark.
    let foreign = scratch.join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("keep.txt"), "mine").unwrap();
    chown_tree_to_cluster_user(&foreign);
    let err = setup.err(&["restore", "database", "--to", path_str(&foreign), "--force"]);
    assert!(
        err.contains("is not empty") && err.contains(marker),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(foreign.join("keep.txt")).unwrap(),
        "mine"
    );

    // The rerun with --force clears the killed restore's directory and restores equal data.
    let out = recman(restore(&killed, &["--force"]));
    assert!(out.status.success(), "{out:?}");
    let said =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("cleared"), "{said}");
    assert!(!killed.join(marker).exists());
    assert!(
        !debris.exists(),
        "--force kept what the killed restore wrote"
    );
    drop(start_and_compare(&killed, &expected));
}

/// Pieces of the backups that `list backup` shows with a copy on device type `device`, and all.
fn copied_to(setup: &Setup, device: &str) -> (usize, usize) {
    let list = setup.backups();
    let pieces: Vec<&serde_json::Value> = list
        .iter()
        .flat_map(|b| b["pieces"].as_array().unwrap().iter())
        .collect();
    let copied = pieces
        .iter()
        .filter(|p| p["copies"].as_array().unwrap().iter().any(|c| c == device))
        .count();
    (copied, pieces.len())
}

#[test]
fn sigterm_stops_a_copy_to_tape_keeping_the_complete_copies() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(2);
    let id = setup.backup(&["--filesperset", "8"]);
    let (_t, scratch) = new_scratch_dir();
    let spec = format!(
        "vtape:{}/lib,drives=2,rate=2G,capacity=256M",
        path_str(&scratch)
    );
    setup.ok(&["configure", "device-type", "sbt", "parms", &spec]);
    let log = scratch.join("stderr");

    // Every 1 MiB block of a piece copied takes 50 ms more.
    let mut child = spawn(
        setup.args(&["backup", "backupset", "all", "--device-type", "sbt"]),
        &[("RECMAN_FAULT_SLOW_READ", ".rmp:50")],
        &log,
    );
    wait_until(&mut child, "a piece copied to tape", || {
        copied_to(&setup, "sbt").0 > 0
    });
    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}: {err}");
    let (copied, total) = copied_to(&setup, "sbt");
    assert!(copied > 0 && copied < total, "{copied} of {total} copied");
    assert!(
        err.contains(&format!(
            "stopped by SIGTERM: {copied} object(s) copied to sbt are complete and recorded"
        )) && err.contains("was discarded"),
        "{err}"
    );

    // The rerun copies the rest, leaving the complete copies as they are.
    let out = setup.ok(&["backup", "backupset", "all", "--device-type", "sbt"]);
    assert_eq!(copied_to(&setup, "sbt"), (total, total), "{out}");
    setup.ok(&["validate", "backup", &id]);
}

#[test]
fn sigterm_stops_delete_obsolete_between_objects_and_the_next_delete_finishes() {
    let setup = Setup::new();
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(setup.backup(&[]));
    }
    let dir = |id: &str| setup.repo.join("main/backup").join(id);
    let (_t, scratch) = new_scratch_dir();
    let log = scratch.join("stderr");

    // Each object waits 1.5 s before it is removed: stopped once the first backup is gone.
    let mut child = spawn(
        setup.args(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]),
        &[("RECMAN_FAULT_SLOW_DELETE", "1500")],
        &log,
    );
    wait_until(&mut child, "a deleted backup", || !dir(&ids[0]).exists());
    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}: {err}");
    assert!(
        err.contains("stopped by SIGTERM")
            && err.contains("the next `recman delete` finishes them"),
        "{err}"
    );
    assert!(
        dir(&ids[2]).exists(),
        "the stop came too late to test anything"
    );
    // Nothing the catalog calls AVAILABLE is missing, and the obsolete ones are no longer AVAILABLE.
    let list = setup.backups();
    for b in &list {
        if b["status"] == "AVAILABLE" {
            assert!(dir(b["id"].as_str().unwrap()).exists(), "{b}");
        }
    }
    let available: Vec<&str> = list
        .iter()
        .filter(|b| b["status"] == "AVAILABLE")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(available, vec![ids[3].as_str()]);

    // The next delete finishes the journal.
    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    for id in &ids[..3] {
        assert!(!dir(id).exists(), "{id} left behind");
    }
    let left: Vec<String> = setup
        .backups()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left, vec![ids[3].clone()]);
    setup.ok(&["validate", "backup", &ids[3]]);
}
