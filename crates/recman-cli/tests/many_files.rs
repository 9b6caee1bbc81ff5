//! Issue 3 acceptance 7: a backup's memory stays flat in the number of files: under a fixed
//! cap (not the budget recman prints, which it could grow itself) for a cluster of 100,000
//! relation files. The peak is the kernel's account, which load on the machine does not change.
//! The restore of those files runs within a login's usual limit of open files.

mod common;
mod flows;

use common::*;
use flows::*;
use std::io::Read;
use std::os::unix::process::CommandExt;

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

    // The restore of those files, within a login's usual limit of open files: each file is
    // made durable before the restore reports, without holding all of them open.
    let (_tmp, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let mut restore = recman_cmd(setup.args(&["restore", "database", "--to", path_str(&to)]));
    restore.stdout(std::process::Stdio::null());
    // SAFETY: between fork and exec the closure calls only getrlimit and setrlimit, which are
    // async-signal-safe, on a local rlimit value.
    unsafe {
        restore.pre_exec(|| {
            let mut lim: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            lim.rlim_cur = LOGIN_OPEN_FILES.min(lim.rlim_max);
            match libc::setrlimit(libc::RLIMIT_NOFILE, &lim) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let out = restore.output().unwrap();
    assert!(
        out.status.success(),
        "restore of {files} files with at most {LOGIN_OPEN_FILES} open: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A backup leaves out the relation cache's init files, which PostgreSQL rebuilds.
    let relcache = walk_named(&c.pgdata.join("base"), "pg_internal.init");
    assert_eq!(
        walk_count(&to.join("base")),
        files - relcache,
        "files restored under base/"
    );
}

/// The soft limit of open files a login usually gets.
const LOGIN_OPEN_FILES: libc::rlim_t = 1024;

fn walk_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() { walk_count(&p) } else { 1 }
        })
        .sum()
}

fn walk_named(dir: &std::path::Path, name: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            match p.is_dir() {
                true => walk_named(&p, name),
                false => usize::from(p.file_name().is_some_and(|n| n == name)),
            }
        })
        .sum()
}
