//! What the repository says is checked before it is trusted (DESIGN.md, invariant 9): a
//! manifest carries its own checksum, which validate backup and restore check, and validate
//! backup checks that every manifest entry was read from a piece and every file in a piece is
//! in the manifest.

mod common;
mod flows;

use common::*;
use flows::*;
use recman_format::manifest::{BackupManifest, EntryKind};

#[test]
fn edited_manifests_are_refused() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t as select g, md5(g::text) from generate_series(1, 20000) g");
    let id = setup.backup(&["--channels", "2", "--filesperset", "8"]);
    let path = setup.repo.join(format!("main/backup/{id}/manifest.json"));
    let good = std::fs::read(&path).unwrap();
    setup.ok(&["validate", "backup", &id]);

    // An edited backup_label: the restored cluster would not start, so nothing may use it.
    let text = String::from_utf8(good.clone()).unwrap();
    assert!(text.contains("CHECKPOINT LOCATION: "), "{text}");
    std::fs::write(
        &path,
        text.replacen("CHECKPOINT LOCATION: ", "CHECKPOINT LOCATION: 1", 1),
    )
    .unwrap();
    let err = setup.err(&["validate", "backup", &id]);
    assert!(
        err.contains("manifest.json") && err.contains("checksum mismatch") && err.contains("hint"),
        "{err}"
    );
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let err = setup.err(&["restore", "database", "--to", path_str(&to)]);
    assert!(err.contains("checksum mismatch"), "{err}");
    assert!(
        std::fs::read_dir(&to).map(|d| d.count()).unwrap_or(0) == 0,
        "a restore from an edited manifest wrote into {}",
        to.display()
    );

    // Cutting the checksum off does not make it a manifest of before checksums.
    let cut = text.rsplit_once(",\"checksum\"").unwrap().0.to_string() + "}";
    std::fs::write(&path, cut).unwrap();
    let err = setup.err(&["validate", "backup", &id]);
    assert!(err.contains("no checksum member"), "{err}");

    // An entry removed by a careful hand that also recomputed the checksum: the pieces still
    // hold the file, and validate backup notices.
    let mut m: BackupManifest = recman_format::seal::read_sealed(&good).unwrap();
    let at = m
        .entries
        .iter()
        .position(|e| {
            e.kind == EntryKind::File && e.set_no.is_some() && e.path.starts_with("base/")
        })
        .unwrap();
    let gone = m.entries.remove(at).path;
    let mut resealed = Vec::new();
    recman_format::seal::write_sealed(&mut resealed, &m).unwrap();
    std::fs::write(&path, &resealed).unwrap();
    let err = setup.err(&["validate", "backup", &id]);
    assert!(
        err.contains("not in the manifest") && err.contains(&gone),
        "{err}"
    );

    // Put back, it validates and restores.
    std::fs::write(&path, &good).unwrap();
    setup.ok(&["validate", "backup", &id]);
    let expected = c.all_table_checksums();
    c.switch_wal_and_wait_archived();
    let (_k, restored) = setup.restore(&[]);
    start_and_compare(&restored, &expected);
}
