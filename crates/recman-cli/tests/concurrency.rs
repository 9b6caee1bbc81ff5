//! Acceptance 5: a backup killed midway is never AVAILABLE and does not disturb the next one;
//! a second concurrent backup to the same repository is refused.

mod common;
mod flows;

use common::*;
use flows::*;
use std::time::Duration;

/// Starts a backup made slow by the test build's fault switch (every read under base/ takes
/// 25 ms more: some 900 files, many seconds on any machine, without burning CPU) and
/// waits until it has stored a piece, so that killing it leaves something to clean up.
// The child is returned to the caller, which kills and waits for it.
#[allow(clippy::zombie_processes)]
fn start_slow_backup(setup: &Setup) -> std::process::Child {
    let mut child =
        recman_cmd(setup.args(&["backup", "database", "--filesperset", "1", "--tag", "SLOW"]))
            .env("RECMAN_FAULT_SLOW_READ", "base/:25")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    let deadline = Deadline::after(Duration::from_secs(120));
    loop {
        let running = setup
            .backups()
            .into_iter()
            .find(|b| b["status"] == "RUNNING");
        if let Some(b) = running {
            let dir = setup
                .repo
                .join("main/backup")
                .join(b["id"].as_str().unwrap());
            let pieces = std::fs::read_dir(&dir).map_or(0, |d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".rmp"))
                    .count()
            });
            if pieces > 0 {
                return child;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the slow backup ended ({status}) before it stored a piece");
        }
        if deadline.passed() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the backup stored no piece in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn killed_backup_is_never_available_and_concurrent_backup_is_refused() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(2);

    let mut first = start_slow_backup(&setup);
    let err = setup.err(&["backup", "database", "--tag", "SECOND"]);
    assert!(
        err.contains("busy") && err.contains("backup database"),
        "{err}"
    );
    assert!(
        first.try_wait().unwrap().is_none(),
        "the refusal disturbed the running backup"
    );

    first.kill().unwrap();
    first.wait().unwrap();
    let killed = setup.backups().last().unwrap().clone();
    assert_eq!(killed["tag"], "SLOW", "{killed}");
    assert_eq!(killed["status"], "FAILED", "{killed}");
    assert!(
        killed["error"].as_str().unwrap().contains("interrupted"),
        "{killed}"
    );
    assert!(
        setup
            .err(&["validate", "backup", killed["id"].as_str().unwrap()])
            .contains("not AVAILABLE")
    );

    let id = setup.backup(&["--compress", "lz4", "--tag", "AFTER"]);
    let list = setup.backups();
    let k = list.iter().find(|b| b["id"] == killed["id"]).unwrap();
    assert_eq!(k["status"], "FAILED", "{k}");
    assert!(
        !setup
            .repo
            .join("main/backup")
            .join(killed["id"].as_str().unwrap())
            .exists(),
        "the killed backup's pieces were left behind"
    );
    setup.ok(&["validate", "backup", &id]);
    let c = &setup.cluster;
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_k, to) = setup.restore(&["--from-tag", "AFTER"]);
    drop(start_and_compare(&to, &expected));
}
