//! Issue 22, acceptance 4: a full disk is an I/O error of the device, never damage. With the
//! repository on a small tmpfs, a backup that runs out of space fails naming "no space" and
//! the piece's path, leaves no partial piece, and the earlier backup still validates;
//! archive-push exits non-zero and loses no WAL: once space is freed the segment archives.
//! With the restore target on a small tmpfs, the restore fails the same way and removes what
//! it wrote. Needs root (to mount), as the whole suite does.

mod common;
mod flows;

use common::*;
use flows::*;
use std::path::{Path, PathBuf};

fn pieces_and_temporaries(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(pieces_and_temporaries(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn full_repository_fails_the_backup_cleanly_and_archive_push_loses_no_wal() {
    let (repo_dir, repo) = new_repo();
    let fs = Tmpfs::mount(&repo, "64m");
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    let cluster = Cluster::init_with(ClusterOpts {
        archive_repo: Some(repo.clone()),
        ..Default::default()
    });
    let setup = Setup {
        repo_dir,
        repo: repo.clone(),
        cluster,
    };
    setup.ok(&["register", "database", "--name", "main"]);
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    let good = setup.backup(&["--compress", "lz4", "--tag", "GOOD"]);
    c.switch_wal_and_wait_archived();

    // 2 MiB left: an uncompressed backup of the cluster (over 20 MiB) in one set cannot fit.
    let filler = fs.fill("filler", 2 << 20);
    let err = setup.err(&[
        "backup",
        "database",
        "--filesperset",
        "10000",
        "--tag",
        "FULL",
    ]);
    eprintln!("backup on a full repository: {err}");
    assert!(
        err.contains("no space left on the device for") && err.contains(path_str(&repo)),
        "{err}"
    );
    assert!(err.contains("bytes of data files"), "{err}");
    assert!(
        !err.contains("damaged") && !err.contains("validate"),
        "a full disk reported as damage: {err}"
    );
    let list = setup.backups();
    let failed = list.iter().find(|b| b["tag"] == "FULL").expect("listed");
    assert_eq!(failed["status"], "FAILED", "{failed}");
    let id = failed["id"].as_str().unwrap();
    assert_eq!(
        pieces_and_temporaries(&repo.join("main/backup").join(id)),
        Vec::<PathBuf>::new(),
        "the failed backup left pieces"
    );
    setup.ok(&["validate", "backup", &good]);

    // A segment of random text (over a megabyte after lz4) and 256 KiB left, enough for the
    // catalog's own files: archive-push exits non-zero, and archives once space is back.
    c.psql("create table r as select md5(random()::text) || md5(random()::text) as v from generate_series(1, 40000)");
    // Named after the writes: at a segment boundary pg_walfile_name names the previous one.
    let seg = c.psql("select pg_walfile_name(pg_current_wal_lsn())");
    let filler2 = fs.fill("filler2", 256 << 10);
    c.psql("select pg_switch_wal()");
    let wal = c.pgdata.join("pg_wal").join(&seg);
    let out = recman(setup.args(&["--db", "main", "archive-push", path_str(&wal)]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "archive-push on a full disk ({} bytes free) stored {seg}: {stderr} {} {:?}",
        fs.avail(),
        String::from_utf8_lossy(&out.stdout),
        setup.archivelogs(),
    );
    assert!(stderr.contains("no space"), "{stderr}");
    assert!(
        setup
            .archivelogs()
            .iter()
            .all(|w| w["name"] != seg.as_str()),
        "a segment listed though it could not be stored"
    );
    std::fs::remove_file(filler).unwrap();
    std::fs::remove_file(filler2).unwrap();
    c.wait_archived(&seg);
    let w = setup.archivelogs();
    let w = w
        .iter()
        .find(|w| w["name"] == seg.as_str())
        .expect("archived");
    assert_eq!(w["status"], "AVAILABLE", "{w}");
    drop(setup);
    drop(fs);
}

#[test]
fn full_restore_target_fails_naming_the_path_and_removes_what_it_wrote() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(1);
    let good = setup.backup(&[]);
    setup.cluster.switch_wal_and_wait_archived();
    let (_t, scratch) = new_scratch_dir();
    let small = scratch.join("small");
    std::fs::create_dir(&small).unwrap();
    let fs = Tmpfs::mount(&small, "8m");
    let to = small.join("restored");
    let err = setup.err(&["restore", "database", "--to", path_str(&to)]);
    eprintln!("restore onto a full file system: {err}");
    assert!(
        err.contains("no space left on the device for") && err.contains(path_str(&to)),
        "{err}"
    );
    assert!(err.contains("the restore writes"), "{err}");
    assert_eq!(pieces_and_temporaries(&to), Vec::<PathBuf>::new());
    setup.ok(&["validate", "backup", &good]);
    drop(fs);
}
