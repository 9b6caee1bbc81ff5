//! Acceptance 4: corrupt pages are found by `validate database` and by `backup` with file and
//! block; --maxcorrupt lets a backup pass and records the block; a damaged backup piece is
//! caught by `validate backup` and `restore`, and restore writes nothing unverified.

mod common;
mod flows;

use common::*;
use flows::*;
use std::os::unix::fs::FileExt;

use common::fixtures::flip;

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

/// CHECK LOGICAL (issue 23): a heap page whose line pointer 3 was moved onto the tuple of line
/// pointer 2, with its checksum recomputed so that the physical check passes. Plain
/// validation finds nothing; `--check-logical` / CHECK LOGICAL name the file and block, and a
/// backup that accepts it (MAXCORRUPT) records it as a LOGICAL corrupt block. An undamaged
/// cluster (catalogs, heap, B-tree) passes CHECK LOGICAL first: no false alarms.
#[test]
fn check_logical_names_a_block_whose_line_pointers_were_damaged_under_a_good_checksum() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table victim (id int primary key, pad text) with (autovacuum_enabled = off)");
    c.psql("insert into victim select g, repeat('x', 200) from generate_series(1, 5000) g");
    c.psql("checkpoint");
    let out = setup.ok(&["run", "VALIDATE CHECK LOGICAL DATABASE;"]);
    assert!(out.contains("no corrupt blocks found"), "{out}");
    let rel = c.psql("select pg_relation_filepath('victim')");
    c.stop();

    let path = c.pgdata.join(&rel);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut page = vec![0u8; 8192];
    f.read_exact_at(&mut page, 2 * 8192).unwrap();
    let lp = |p: &[u8], n: usize| u32::from_le_bytes(p[24 + 4 * n..28 + 4 * n].try_into().unwrap());
    let off2 = lp(&page, 1) & 0x7fff;
    let moved = (lp(&page, 2) & !0x7fff) | (off2 + 8);
    page[32..36].copy_from_slice(&moved.to_le_bytes());
    let sum = recman_page::checksum_page(&page, 2);
    page[8..10].copy_from_slice(&sum.to_le_bytes());
    f.write_all_at(&page, 2 * 8192).unwrap();
    f.sync_all().unwrap();
    assert_eq!(recman_page::verify_page(&page, 2, true), Ok(()));

    let pgdata = path_str(&c.pgdata);
    let out = recman(["--pgdata", pgdata, "validate", "database"]);
    assert!(out.status.success(), "the checksum passes: {out:?}");
    let out = recman([
        "--pgdata",
        pgdata,
        "validate",
        "database",
        "--check-logical",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("file {rel} block 2")) && err.contains("line pointer 3"),
        "{err}"
    );

    c.start();
    let err = setup.err(&["run", "BACKUP CHECK LOGICAL DATABASE;"]);
    assert!(err.contains(&rel) && err.contains("block 2"), "{err}");
    setup.ok(&[
        "run",
        "RUN { SET MAXCORRUPT FOR DATAFILE 1 TO 1; BACKUP CHECK LOGICAL DATABASE TAG 'LOGICAL'; }",
    ]);
    let b = setup.backups().pop().unwrap();
    assert_eq!(b["tag"], "LOGICAL");
    let repo = recman_catalog::Repository::open(&setup.repo).unwrap();
    let blocks = repo
        .catalog()
        .corrupt_blocks(b["id"].as_str().unwrap())
        .unwrap();
    assert!(
        blocks
            .iter()
            .any(|k| k.path.ends_with(&rel) && k.block == 2 && k.kind == "LOGICAL"),
        "{blocks:?}"
    );
}

/// COPIES 2 (issue 23), configured as RMAN's DATAFILE BACKUP COPIES (BACKUP COPIES 2 lowers to
/// the same command, see script/parity.rs): every piece is written to both FORMAT locations,
/// the catalog records
/// the two as copies of one piece, and a restore whose first copy of a piece is damaged says
/// so, reads the second copy and gives equal data. MAXSETSIZE bounds the sets on the way.
#[test]
fn copies_2_writes_each_piece_twice_and_restore_falls_back_to_the_second() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(id int primary key, v text)");
    c.psql("insert into t select g, md5(g::text) from generate_series(1, 20000) g");
    let (_keep, scratch) = new_scratch_dir();
    let (first, second) = (scratch.join("first"), scratch.join("second"));
    // Without a place for the second copy, nothing is backed up.
    setup.ok(&[
        "run",
        "CONFIGURE DATAFILE BACKUP COPIES FOR DEVICE TYPE DISK TO 2;",
    ]);
    let err = setup.err(&["run", "BACKUP DATABASE;"]);
    assert!(err.contains("COPIES 2 needs 1 --copy-format"), "{err}");
    assert!(setup.backups().is_empty());
    setup.ok(&[
        "run",
        &format!(
            "BACKUP DATABASE FORMAT '{}/ora_%U.rbf', '{}/ora_%U.rbf' TAG 'DUPLEX' FILESPERSET 100000 MAXSETSIZE 4M;",
            path_str(&first),
            path_str(&second)
        ),
    ]);
    let b = setup.backups().pop().unwrap();
    assert_eq!(b["tag"], "DUPLEX");
    let pieces: Vec<String> = b["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // MAXSETSIZE: one set would hold every file; no set holds more than 4M of them (a piece
    // adds headers and chunk checksums on top).
    assert!(pieces.len() > 1, "{b}");
    for p in b["pieces"].as_array().unwrap() {
        assert!(p["size"].as_u64().unwrap() < (4 << 20) + (256 << 10), "{p}");
    }
    let (a, z) = (names(&first), names(&second));
    assert_eq!(a.len(), pieces.len(), "{a:?}");
    assert_eq!(z.len(), pieces.len(), "{z:?}");
    assert!(a.iter().all(|n| n.ends_with("_1.rbf")), "{a:?}");
    assert!(z.iter().all(|n| n.ends_with("_2.rbf")), "{z:?}");
    let repo = recman_catalog::Repository::open(&setup.repo).unwrap();
    for p in &pieces {
        let copies = repo.catalog().copies_of(p).unwrap();
        assert_eq!(copies.len(), 2, "{p}: {copies:?}");
        assert!(
            copies[0].primary && copies[0].device.ends_with("first"),
            "{copies:?}"
        );
        assert!(
            !copies[1].primary && copies[1].device.ends_with("second"),
            "{copies:?}"
        );
    }
    drop(repo);

    // The first copy of the largest piece damaged in its middle.
    let victim = a
        .iter()
        .map(|n| first.join(n))
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    flip(&victim, victim.metadata().unwrap().len() / 2);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let to = scratch.join("restored");
    let out = recman(setup.args(&["restore", "database", "--to", path_str(&to)]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("cannot be used")
            && err.contains(path_str(&first))
            && err.contains(&format!(
                "restoring it from its copy on disk:{}",
                path_str(&second)
            )),
        "{err}"
    );
    drop(start_and_compare(&to, &expected));
}

/// `validate database --channels 2` shares a file larger than the smallest automatic section
/// (64 MiB) between its channels in sections: it counts the same files and pages as one
/// channel, and names a corrupt block of the file's last section by its block number in the
/// whole file.
#[test]
fn validate_database_channels_share_a_large_file_and_name_its_corrupt_block() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(7);
    c.psql("checkpoint");
    let rel = c.psql("select pg_relation_filepath('pgbench_accounts')");
    c.stop();
    let path = c.pgdata.join(&rel);
    let blocks = path.metadata().unwrap().len() / 8192;
    assert!(
        blocks * 8192 > 64 << 20,
        "{rel}: {blocks} blocks, too small to be read in sections"
    );
    let pgdata = path_str(&c.pgdata);
    let summary = |channels: &str| {
        let out = recman([
            "--pgdata",
            pgdata,
            "validate",
            "database",
            "--channels",
            channels,
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let line = stdout
            .lines()
            .find(|l| l.starts_with("validated "))
            .unwrap_or_else(|| panic!("no summary: {stdout}"))
            .to_string();
        (out, line)
    };
    let (out, one) = summary("1");
    assert!(out.status.success(), "{out:?}");
    let (out, two) = summary("2");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(one, two, "one channel and two counted differently");

    let victim = blocks - 10;
    flip(&path, victim * 8192 + 4000);
    let (out, _) = summary("2");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("file {rel} block {victim}")), "{err}");
    assert_eq!(
        err.matches("corrupt block:").count(),
        1,
        "one flipped page, one report: {err}"
    );
}
