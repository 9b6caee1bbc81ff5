//! Acceptance 5: a backup killed midway is never AVAILABLE and does not disturb the next one;
//! a second concurrent backup to the same repository is refused.

mod common;
mod flows;

use common::*;
use flows::*;
use std::time::{Duration, Instant};

/// Starts a deliberately slow backup and waits until the catalog shows it RUNNING.
// The child is returned to the caller, which kills and waits for it.
#[allow(clippy::zombie_processes)]
fn start_slow_backup(setup: &Setup) -> std::process::Child {
    let mut child = recman_cmd(setup.args(&[
        "backup",
        "database",
        "--compress",
        "zstd:19",
        "--filesperset",
        "1",
        "--tag",
        "SLOW",
    ]))
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    loop {
        if setup.backups().iter().any(|b| b["status"] == "RUNNING") {
            // Let it write some pieces.
            std::thread::sleep(Duration::from_millis(500));
            return child;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the backup never showed as RUNNING");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn killed_backup_is_never_available_and_concurrent_backup_is_refused() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(8);

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
