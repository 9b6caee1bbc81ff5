//! Helpers of the tests of `catalog import` (issue 44): the old tool's files kept to compare
//! after, and restored clusters compared with their source by pg_dumpall.

use recman_testkit::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Every file under `dir` with its content and modification time.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    for f in files_under(dir) {
        let md = std::fs::symlink_metadata(&f).unwrap();
        if md.is_file() {
            out.insert(
                f.clone(),
                (std::fs::read(&f).unwrap(), md.modified().unwrap()),
            );
        }
    }
    out
}

/// Equal dumps, or a failure naming the first line that differs (a dump is too long to print).
pub fn same_dump(got: &str, want: &str, what: &str) {
    if got == want {
        return;
    }
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    let at = g
        .iter()
        .zip(&w)
        .position(|(a, b)| a != b)
        .unwrap_or(g.len().min(w.len()));
    panic!(
        "{what} differs from the source at dump line {at} ({} lines against {}): {:?} instead of {:?}",
        g.len(),
        w.len(),
        g.get(at),
        w.get(at)
    );
}

/// Starts the cluster restored into `to`, waits for its recovery, and dumps it.
pub fn start_dump(to: &Path) -> String {
    let c = Cluster::from_restored(to.to_path_buf());
    c.wait_recovery_done(Duration::from_secs(180));
    // Before amcheck, which creates its extension in every database.
    let dump = c.dumpall().expect("pg_dumpall of the restored cluster");
    c.amcheck_all();
    dump
}

/// `recman restore database --to <to>` with `args`.
pub fn restore_to(repo: &Path, to: &Path, args: &[&str]) -> String {
    let mut a = vec![
        "--repo",
        path_str(repo),
        "restore",
        "database",
        "--to",
        path_str(to),
    ];
    a.extend_from_slice(args);
    recman_ok(a)
}

/// Runs `pg_basebackup` (the server's major's) against `c` into `to`, with `args`.
pub fn pg_basebackup(c: &Cluster, to: &Path, args: &[&str]) {
    pg_basebackup_from(&pg_bin("pg_basebackup"), c, to, args);
}

/// Runs the `pg_basebackup` program `bin` against `c` into `to`, with `args`: a newer major's
/// client where the server's package has none.
pub fn pg_basebackup_from(bin: &Path, c: &Cluster, to: &Path, args: &[&str]) {
    let mut cmd = Command::new(bin);
    cmd.arg("-h")
        .arg(&c.sockdir)
        .args([
            "-p",
            &c.port.to_string(),
            "-U",
            "postgres",
            "--checkpoint=fast",
        ])
        .arg("-D")
        .arg(to)
        .args(args);
    run_as_cluster_user_ok(&mut cmd);
}

/// recman's arguments for `args` against repository `repo` and cluster `c` (its data directory
/// and connection).
pub fn cluster_args(repo: &Path, c: &Cluster, args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "--repo".into(),
        path_str(repo).into(),
        "--pgdata".into(),
        path_str(&c.pgdata).into(),
        "--target".into(),
        c.conninfo(),
    ];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}
