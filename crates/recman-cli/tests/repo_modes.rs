//! A private repository by default (DESIGN.md, invariant 10): whatever the umask, nothing
//! the repository holds is readable by other local users — directories 0750, objects 0640,
//! the catalog and locks 0600 — and a directory the user made for it is closed to others.

mod common;
mod flows;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// Runs recman as the cluster user under umask 022, the usual default that would leave new
/// files world-readable; panics unless it succeeds.
fn recman_umask_022(args: &[String]) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("umask 022; exec \"$@\"")
        .arg("sh")
        .arg(recman_bin())
        .args(args);
    let out = run_as_cluster_user_ok(&mut cmd);
    eprintln!("{out}");
}

/// Every entry under `root` (root included) with a mode bit for "others", or with a bit beyond
/// the mode the repository promises for it.
fn open_to_others(root: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let mode = m.permissions().mode() & 0o777;
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        // An image copy is a data directory: PostgreSQL's own modes (0700/0600, or
        // 0750/0640 with group access), which are closed to others too.
        let in_copy = p
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .contains("/copy/");
        let want = if in_copy {
            mode & 0o770
        } else if m.is_dir() {
            if p == root { mode & 0o770 } else { 0o750 }
        } else if name.starts_with("catalog.db") || name.contains("lock") {
            0o600
        } else {
            0o640
        };
        // Never more open than promised (a copy's parents may be 0700).
        if mode & 0o007 != 0 || mode & !want != 0 {
            bad.push(format!("{} {mode:o} (want {want:o})", p.display()));
        }
        if m.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
    bad
}

#[test]
fn repository_is_private_whatever_the_umask() {
    let (_r, repo) = new_repo();
    // As `mkdir` makes it under umask 022.
    std::fs::set_permissions(&repo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster = Cluster::init_with(ClusterOpts {
        archive_repo: Some(repo.clone()),
        ..ClusterOpts::default()
    });
    let args = |a: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "--repo",
            path_str(&repo),
            "--pgdata",
            path_str(&cluster.pgdata),
            "--target",
            &cluster.conninfo(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(a.iter().map(|s| s.to_string()));
        v
    };
    recman_umask_022(&args(&["create", "catalog"]));
    recman_umask_022(&args(&["register", "database", "--name", "main"]));
    cluster.psql("create table t as select g from generate_series(1, 10000) g");
    recman_umask_022(&args(&[
        "backup",
        "database",
        "--channels",
        "2",
        "--tag",
        "full",
    ]));
    recman_umask_022(&args(&["backup", "database", "--as-copy", "--tag", "img"]));
    // archive-push as a person would run it (the server's own archiver runs under umask 077).
    let sysid = cluster.system_identifier();
    let (_s, scratch) = new_scratch_dir();
    let name = format!("{:08X}{:08X}{:08X}", 1, 0x7F, 0x10);
    let seg = scratch.join(&name);
    std::fs::write(&seg, fake_segment(sysid, &name, 3)).unwrap();
    chown_to_cluster_user(&seg);
    recman_umask_022(&args(&["archive-push", path_str(&seg)]));
    recman_umask_022(&args(&["backup", "archivelog", "all"]));
    let bad = open_to_others(&repo);
    assert!(
        bad.is_empty(),
        "repository entries with the wrong mode:\n{}",
        bad.join("\n")
    );
}
