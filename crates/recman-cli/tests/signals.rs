//! A stopped and continued recman carries on (DESIGN.md, invariant 10): SIGSTOP and SIGCONT
//! (Ctrl-Z and `fg`, a debugger, a cgroup freezer) interrupt blocking calls with EINTR, which
//! every I/O engine retries instead of failing the job.

mod common;
mod flows;

use common::*;
use flows::*;
use std::process::{Child, Command};
use std::thread;
use std::time::Duration;

const STOPS: usize = 50;
const PAUSE_MS: u64 = 5;

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success() || !alive(child), "kill {sig} failed");
}

fn alive(child: &Child) -> bool {
    std::path::Path::new(&format!("/proc/{}", child.id())).exists()
}

/// Stops and continues `child` up to STOPS times while it runs, then waits for it; returns
/// how many stops landed while it was running, and whether it succeeded.
fn stop_and_continue(mut child: Child) -> (usize, bool, String) {
    let mut stops = 0;
    // The first stop lands before any pause, so even a job that ends within one pause is
    // stopped at least once; the later ones land wherever its I/O is by then.
    for _ in 0..STOPS {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        signal(&child, "-STOP");
        stops += 1;
        thread::sleep(Duration::from_millis(PAUSE_MS));
        signal(&child, "-CONT");
        thread::sleep(Duration::from_millis(PAUSE_MS));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (stops, out.status.success(), stderr)
}

fn spawn(args: Vec<String>) -> Child {
    recman_cmd(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn stopped_and_continued_backups_and_restores_succeed() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(3);
    c.psql("checkpoint");
    let expected = c.all_table_checksums();
    for mode in ["uring", "threads", "sync"] {
        let tag = format!("sig_{mode}");
        // Uncompressed on two channels: many reads and direct writes in flight, so stops
        // land while threads wait in io_uring_enter.
        let child = spawn(setup.args(&[
            "backup",
            "database",
            "--io",
            mode,
            "--channels",
            "2",
            "--compress",
            "none",
            "--tag",
            &tag,
        ]));
        let (stops, ok, stderr) = stop_and_continue(child);
        assert!(
            ok,
            "backup with --io {mode} failed after {stops} stops:\n{stderr}"
        );
        assert!(
            stops > 0,
            "backup with --io {mode} ended before the first stop"
        );
        setup.ok(&["validate", "backup", &tag]);
    }
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let child = spawn(setup.args(&[
        "restore",
        "database",
        "--to",
        path_str(&to),
        "--from-tag",
        "sig_uring",
    ]));
    let (stops, ok, stderr) = stop_and_continue(child);
    assert!(ok, "restore failed after {stops} stops:\n{stderr}");
    assert!(stops > 0, "the restore ended before the first stop");
    start_and_compare(&to, &expected);
}
