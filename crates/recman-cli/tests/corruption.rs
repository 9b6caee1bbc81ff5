//! Acceptance 4: corrupt pages are found by `validate database` and by `backup` with file and
//! block; --maxcorrupt lets a backup pass and records the block; a damaged backup piece is
//! caught by `validate backup` and `restore`, and restore writes nothing unverified.

mod common;
mod flows;

use common::*;
use flows::*;
use std::os::unix::fs::FileExt;

fn flip(path: &std::path::Path, offset: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_at(&mut b, offset).unwrap();
    b[0] ^= 0xff;
    f.write_at(&b, offset).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn corrupt_page_reported_by_validate_and_backup() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table victim as select g as id, repeat('x', 200) as pad from generate_series(1, 5000) g");
    c.psql("checkpoint");
    let rel = c.psql("select pg_relation_filepath('victim')");
    c.stop();
    // Block 2, inside the tuple area: the header stays sane, only the checksum can tell.
    flip(&c.pgdata.join(&rel), 2 * 8192 + 4000);

    let out = recman(["--pgdata", path_str(&c.pgdata), "validate", "database"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("file {rel} block 2")), "{err}");

    c.start();
    let err = setup.err(&["backup", "database", "--tag", "STRICT"]);
    assert!(
        err.contains(&rel) && err.contains("block 2") && err.contains("maxcorrupt"),
        "{err}"
    );
    assert!(err.contains("victim"), "relation name missing: {err}");
    let list = setup.backups();
    assert_eq!(list.last().unwrap()["status"], "FAILED");

    let out = recman(setup.args(&[
        "backup",
        "database",
        "--maxcorrupt",
        "1",
        "--tag",
        "TOLERANT",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("file {rel} block 2")),
        "the accepted block must be listed: {err}"
    );
    assert_eq!(setup.backups().last().unwrap()["status"], "AVAILABLE");
    // The known corrupt block does not make the backup itself fail validation.
    setup.ok(&["validate", "backup", "TOLERANT"]);
}

#[test]
fn damaged_piece_caught_by_validate_and_restore() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(1);
    let id = setup.backup(&["--compress", "lz4", "--filesperset", "64"]);
    setup.ok(&["validate", "backup", &id]);
    let dir = setup.repo.join("main/backup").join(&id);
    let piece = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rmp"))
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    let len = piece.metadata().unwrap().len();
    flip(&piece, len / 2);
    let name = piece.file_name().unwrap().to_string_lossy().to_string();

    let err = setup.err(&["validate", "backup", &id]);
    assert!(err.contains(&name) && err.contains("damaged"), "{err}");

    let (_t, scratch) = new_scratch_dir();
    let to = scratch.join("r");
    let err = recman_err(setup.args(&["restore", "database", "--to", path_str(&to)]));
    assert!(err.contains(&name), "{err}");
    let leftover: Vec<_> = std::fs::read_dir(&to)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        leftover.is_empty(),
        "restore left files behind: {leftover:?}"
    );
}
