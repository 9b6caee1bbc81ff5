//! Issue 39: MAXPIECESIZE, the option added as one row of the option table. A RUN block whose
//! channel has MAXPIECESIZE 1M backs up a cluster with a relation of several MiB: every piece in
//! the repository holds at most 1 MiB of files (plus its format's records), the large relation
//! is backed up in sections, and a restore gives the same data.

mod common;
mod flows;

use flows::*;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// What a piece adds to its files' bytes (docs/format.md): a header with its JSON, 32 bytes a
/// chunk record, 32 a file end, 32 an index entry of a file or a chunk, a 40-byte footer. For
/// the few hundred small files of a set that stays far below this.
const FORMAT_OVERHEAD: u64 = 64 << 10;

/// Every backup piece (`*.rmp`) under `dir`.
fn pieces(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(pieces(&p));
        } else if p.extension().is_some_and(|x| x == "rmp") {
            out.push(p);
        }
    }
    out
}

#[test]
fn channel_maxpiecesize_bounds_every_piece_and_restores() {
    let setup = Setup::new();
    let c = &setup.cluster;
    // About 6.5 MiB in one relation file: more than six pieces of 1 MiB.
    c.psql(
        "create table big as select g as id, md5(g::text) as v from generate_series(1, 100000) g",
    );
    c.psql("checkpoint");
    setup.ok(&[
        "run",
        "RUN { ALLOCATE CHANNEL c1 DEVICE TYPE DISK MAXPIECESIZE 1M; BACKUP DATABASE; }",
    ]);
    let id = setup.backups().last().expect("a backup")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = setup.repo.join("main").join("backup").join(&id);
    let sizes: Vec<(PathBuf, u64)> = pieces(&dir)
        .into_iter()
        .map(|p| {
            let n = std::fs::metadata(&p).unwrap().len();
            (p, n)
        })
        .collect();
    assert!(sizes.len() > 6, "too few pieces for 1M: {sizes:?}");
    let over: Vec<_> = sizes
        .iter()
        .filter(|(_, n)| *n > MIB + FORMAT_OVERHEAD)
        .collect();
    assert!(over.is_empty(), "pieces over MAXPIECESIZE 1M: {over:?}");
    // The large relation fills its sections: the cap, not a small database, bounds them.
    assert!(
        sizes.iter().filter(|(_, n)| *n > MIB / 2).count() >= 6,
        "{sizes:?}"
    );

    // A flag of another size is checked where the table says.
    let err = setup.err(&["backup", "database", "--maxpiecesize", "1K"]);
    assert!(err.contains("expected a size from 1M to 1T"), "{err}");

    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    c.stop();
    let (_keep, to) = setup.restore(&[]);
    let r = start_and_compare(&to, &expected);
    assert_eq!(r.psql("select count(*) from big"), "100000");
}
