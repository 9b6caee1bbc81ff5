//! Issue 18, block media recovery: damaged pages of a table changed since the backup come back
//! from the backup brought forward by WAL (`recover corruption-list` after `validate
//! database`); a block whose WAL is gone is refused, named, and left as it was; a running
//! cluster is refused.

mod common;
mod flows;

use flows::*;
use std::os::unix::fs::FileExt;
use std::path::Path;

const PAGE: u64 = 8192;

use common::fixtures::flip;

fn page(path: &Path, block: u64) -> Vec<u8> {
    let f = std::fs::File::open(path).unwrap();
    let mut b = vec![0u8; PAGE as usize];
    f.read_exact_at(&mut b, block * PAGE).unwrap();
    b
}

#[test]
fn corrupt_blocks_are_repaired_from_backup_and_wal() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql(
        "create table t (id int primary key, v text); \
         insert into t select g, repeat('a', 100) from generate_series(1, 3000) g",
    );
    setup.backup(&[]);
    // After the backup: every page changes, some of it archived, the rest only in pg_wal.
    c.psql("update t set v = repeat('b', 100) where id % 2 = 0");
    let archived = c.switch_wal_and_wait_archived();
    c.psql(
        "insert into t select g, 'new' from generate_series(3001, 3400) g; \
         update t set v = 'c' where id % 7 = 0",
    );
    let before = c.table_checksums("postgres");
    let rel = c.psql("select pg_relation_filepath('t')");
    let file = c.pgdata.join(&rel);

    let err = setup.err(&["recover", "block", &format!("{rel}:1")]);
    assert!(
        err.contains("is running") && err.contains(&format!("{rel}:1")),
        "{err}"
    );

    c.stop();
    let blocks = [1u64, 5, 9];
    for b in blocks {
        // Inside the tuple area: the header stays sane, only the checksum tells.
        flip(&file, b * PAGE + 5000);
    }
    let err = setup.err(&["validate", "database"]);
    for b in blocks {
        assert!(err.contains(&format!("file {rel} block {b}")), "{err}");
    }
    let out = setup.ok(&["recover", "corruption-list"]);
    eprintln!("{out}");
    for b in blocks {
        assert!(out.contains(&format!("repaired block {rel}:{b} ")), "{out}");
    }
    // Only the damaged file and the cluster-wide files were read from the backup, through
    // the pieces' index (issue 38): a small share of it.
    let (read, of) = out
        .split(", reading ")
        .nth(1)
        .and_then(|r| r.split_once(" of the backup's "))
        .map(|(a, b)| (a.to_string(), b.split(' ').next().unwrap_or("").to_string()))
        .unwrap_or_else(|| panic!("no read figure in: {out}"));
    let (read, of): (u64, u64) = (read.parse().unwrap(), of.parse().unwrap());
    assert!(
        read * 4 < of,
        "block recovery read {read} of {of} bytes: {out}"
    );
    assert!(
        !c.pgdata.with_extension("recman-aux").exists(),
        "the auxiliary copy was left behind"
    );
    setup.ok(&["validate", "database"]);
    c.start();
    c.amcheck("postgres");
    assert_eq!(
        c.table_checksums("postgres"),
        before,
        "the repaired table differs"
    );

    // A block whose WAL since the backup is gone: refused by name and left as it was.
    c.psql("update t set v = 'd' where id % 5 = 0; checkpoint");
    c.stop();
    flip(&file, 3 * PAGE + 5000);
    let damaged = page(&file, 3);
    let obj = setup
        .repo
        .join(format!("main/wal/{}/{archived}.rmw", &archived[..16]));
    // Damaged, not gone: the catalog still lists it, so only recovery itself finds it missing.
    let len = std::fs::metadata(&obj)
        .unwrap_or_else(|e| panic!("{}: {e}", obj.display()))
        .len();
    flip(&obj, len / 2);
    // The language's form of `recover block FILE:3`.
    let err = setup.err(&["run", &format!("RECOVER DATAFILE '{rel}' BLOCK 3;")]);
    assert!(
        err.contains(&format!("{rel}:3"))
            && err.contains("ends before the cluster's checkpoint")
            && err.contains("left as they are"),
        "{err}"
    );
    assert_eq!(page(&file, 3), damaged, "a refused block was changed");
    // Gone from the repository: refused before anything is restored.
    std::fs::remove_file(&obj).unwrap();
    let err = setup.err(&["recover", "block", &format!("{rel}:3")]);
    assert!(
        err.contains(&format!("{rel}:3")) && err.contains("neither archived nor in"),
        "{err}"
    );
    assert_eq!(page(&file, 3), damaged, "a refused block was changed");

    // Stopped without a shutdown checkpoint (as by a crash): its pages may lag its WAL.
    c.start();
    c.stop_immediate();
    let err = setup.err(&["recover", "block", &format!("{rel}:3")]);
    assert!(err.contains("was not shut down cleanly"), "{err}");
}
