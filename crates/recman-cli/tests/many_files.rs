//! Issue 3 acceptance 7: a backup's memory stays flat in the number of files: under a fixed
//! cap (not the budget recman prints, which it could grow itself) for a cluster of 100,000
//! relation files. The peak is the kernel's account, which load on the machine does not change.

mod common;
mod flows;

use common::*;
use flows::*;
use std::io::Read;

/// Runs recman and returns (stderr, peak resident set in bytes) from the kernel's accounting.
// The child is reaped by wait4 below, which also yields its rusage.
#[allow(clippy::zombie_processes)]
fn run_measured(args: Vec<String>) -> (String, u64, bool) {
    let mut child = recman_cmd(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, passing valid pointers to locals.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    (
        err,
        usage.ru_maxrss as u64 * 1024,
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    )
}

/// Measured: 84 MiB for 100,895 files with the default settings (25 MiB of buffers). Half a
/// kilobyte more per file would break the cap.
const PEAK_CAP: u64 = 128 << 20;

#[test]
fn peak_memory_with_100000_files_stays_under_a_fixed_cap() {
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec![
            "autovacuum = off".into(),
            "max_locks_per_transaction = 256".into(),
        ],
        ..Default::default()
    });
    let c = &setup.cluster;
    // Empty tables: one relation file each, created in batches of 2,000 per transaction.
    let mut sql = String::new();
    for batch in 0..50 {
        sql.push_str("begin;\n");
        for i in 0..2000 {
            sql.push_str(&format!("create table f{batch}_{i} (a int);\n"));
        }
        sql.push_str("commit;\n");
    }
    c.psql(&sql);
    c.psql("checkpoint");
    let files = walk_count(&c.pgdata.join("base"));
    assert!(files >= 100_000, "only {files} files");
    let (err, peak, ok) =
        run_measured(setup.args(&["backup", "database", "--compress", "lz4", "--tag", "MANY"]));
    assert!(ok, "{err}");
    eprintln!("{files} files: peak {} MiB", peak >> 20);
    assert!(
        peak <= PEAK_CAP,
        "peak {} MiB exceeds the cap of {} MiB for {files} files",
        peak >> 20,
        PEAK_CAP >> 20
    );
    let list = setup.backups();
    assert_eq!(list.last().unwrap()["status"], "AVAILABLE");
    assert!(list.last().unwrap()["files"].as_u64().unwrap() >= 100_000);
}

fn walk_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() { walk_count(&p) } else { 1 }
        })
        .sum()
}
