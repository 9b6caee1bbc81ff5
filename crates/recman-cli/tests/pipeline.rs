//! Issue 14, the piece pipeline: the statistics restore and validate record are the bytes
//! they really moved, and an image copy is only changed by a level 1 whose every chunk and
//! file checks out.

mod common;
mod flows;

use flows::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn manifest(setup: &Setup, id: &str) -> serde_json::Value {
    let p = setup.repo.join(format!("main/backup/{id}/manifest.json"));
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

/// (path, size) of every piece of a backup, from its manifest.
fn pieces(m: &serde_json::Value) -> BTreeMap<String, u64> {
    m["sets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["pieces"].as_array().unwrap().iter())
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_string(),
                p["size"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The statistics rows of one job type of a backup (`report io --json`).
fn rows(setup: &Setup, id: &str, job_type: &str, kind: &str) -> Vec<serde_json::Value> {
    let out = setup.ok(&["report", "io", id, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["job_type"] == job_type && r["kind"] == kind)
        .cloned()
        .collect()
}

fn sum(rows: &[serde_json::Value], field: &str) -> u64 {
    rows.iter().map(|r| r[field].as_u64().unwrap()).sum()
}

/// Each piece was read once, whole: one INPUT row per piece, with the piece's size.
fn assert_inputs_are_the_pieces(
    what: &str,
    inputs: &[serde_json::Value],
    want: &BTreeMap<String, u64>,
) {
    let got: BTreeMap<String, u64> = inputs
        .iter()
        .map(|r| {
            (
                r["filename"].as_str().unwrap().to_string(),
                r["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        inputs.len(),
        want.len(),
        "{what}: one INPUT row per piece: {inputs:#?}"
    );
    assert_eq!(&got, want, "{what}: INPUT bytes are the pieces' sizes");
}

#[test]
fn restore_and_validate_record_the_bytes_they_moved() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(2);
    let id = setup.backup(&["--channels", "2", "--filesperset", "16"]);
    let m = manifest(&setup, &id);
    let want_pieces = pieces(&m);
    assert!(want_pieces.len() > 1, "several pieces: {want_pieces:?}");

    setup.ok(&["validate", "backup", &id, "--channels", "2"]);
    let vin = rows(&setup, &id, "VALIDATE", "INPUT");
    assert_inputs_are_the_pieces("validate", &vin, &want_pieces);

    let (_t, to) = setup.restore(&["--channels", "2"]);
    let rin = rows(&setup, &id, "RESTORE", "INPUT");
    assert_inputs_are_the_pieces("restore", &rin, &want_pieces);

    // Every byte of every backed-up file is written once: the OUTPUT bytes are the files'
    // bytes as the manifest recorded them and as they now are on disk.
    let out = rows(&setup, &id, "RESTORE", "OUTPUT");
    assert_eq!(out.len(), 2, "one OUTPUT row per restore channel: {out:#?}");
    let files: Vec<(String, u64)> = m["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "file" || e["kind"] == "File")
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(!files.is_empty(), "the manifest lists files: {m}");
    let recorded: u64 = files.iter().map(|(_, s)| s).sum();
    // Restore rewrites postgresql.auto.conf afterwards (archiving off): compare the rest on
    // disk, and everything with the manifest.
    let on_disk: u64 = files
        .iter()
        .filter(|(p, _)| p != "postgresql.auto.conf")
        .map(|(p, _)| std::fs::metadata(to.join(p)).unwrap().len())
        .sum();
    let auto_conf = files
        .iter()
        .find(|(p, _)| p == "postgresql.auto.conf")
        .map(|(_, s)| *s)
        .unwrap_or(0);
    assert_eq!(sum(&out, "bytes"), recorded, "OUTPUT bytes: {out:#?}");
    assert_eq!(on_disk + auto_conf, recorded, "restored files on disk");
    // Each write is counted once, in one of the three classes.
    for r in &out {
        assert_eq!(
            r["io_count"].as_u64().unwrap(),
            r["ready"].as_u64().unwrap()
                + r["short_waits"].as_u64().unwrap()
                + r["long_waits"].as_u64().unwrap(),
            "{r:#}"
        );
        assert!(r["io_count"].as_u64().unwrap() > 0, "{r:#}");
    }
}

/// Content of every file under `dir`, by relative path.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.insert(
                    e.path().strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(e.path()).unwrap(),
                );
            }
        }
    }
    out
}

/// A raw (uncompressed) chunk of a relation file in piece `path`: (file, chunk).
fn raw_relation_chunk(path: &Path) -> (String, recman_format::ChunkLoc) {
    let mut f = std::fs::File::open(path).unwrap();
    let (_, index) = recman_format::read_index(&mut f).unwrap();
    index
        .files
        .iter()
        .filter(|f| f.path.starts_with("base/"))
        .flat_map(|f| f.chunks.iter().map(move |c| (f.path.clone(), *c)))
        .rfind(|(_, c)| c.stored_len == c.raw_len && c.raw_len >= 8192)
        .unwrap_or_else(|| panic!("no raw relation chunk in {}", path.display()))
}

/// Flips a byte of the chunk's payload; with `fix_record`, also recomputes the record's
/// checksum, so that only the file's checksum can tell.
fn damage(path: &Path, loc: &recman_format::ChunkLoc, fix_record: bool) {
    let mut b = std::fs::read(path).unwrap();
    let hdr = loc.piece_offset as usize;
    let payload = hdr + recman_format::RECORD_HEADER_LEN;
    b[payload + 100] ^= 0x5a;
    if fix_record {
        let crc = recman_format::crc32c_append(
            recman_format::crc32c(&b[hdr..hdr + 28]),
            &b[payload..payload + loc.stored_len as usize],
        );
        b[hdr + 28..hdr + 32].copy_from_slice(&crc.to_le_bytes());
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_damaged_level_1_leaves_the_image_copy_as_it_was() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    let l1 = [
        "backup",
        "database",
        "--incremental-level",
        "1",
        "--for-recover-of-copy",
        "--tag",
        "IMG",
    ];
    // The first makes the copy, the second is a level 1 against it.
    setup.ok(&l1);
    let mut b = c.pgbench_background(2, 2);
    assert!(b.wait().unwrap().success());
    setup.ok(&l1);
    let id = setup.backups().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let m = manifest(&setup, &id);
    assert_eq!(m["backup_type"], "LEVEL1", "{m}");
    let copy = setup.repo.join("main/copy/IMG");
    let before = tree(&copy);
    assert!(before.keys().any(|p| p.ends_with("copy.json")));

    let piece_rel = pieces(&m).keys().next().unwrap().clone();
    let piece = setup.repo.join(&piece_rel);
    let pristine = std::fs::read(&piece).unwrap();
    let (file, loc) = raw_relation_chunk(&piece);

    for fix_record in [false, true] {
        damage(&piece, &loc, fix_record);
        let err = setup.err(&["recover", "copy", "--tag", "IMG"]);
        assert!(
            err.contains(&piece_rel) && err.contains(&file),
            "the error names the piece {piece_rel} and the file {file}: {err}"
        );
        if fix_record {
            assert!(
                err.contains("does not match its recorded checksum"),
                "{err}"
            );
        }
        assert!(tree(&copy) == before, "the copy is unchanged after: {err}");
        std::fs::write(&piece, &pristine).unwrap();
    }

    // Intact again, the level 1 applies.
    let out = setup.ok(&["recover", "copy", "--tag", "IMG"]);
    assert!(out.contains(&id), "{out}");
    assert!(tree(&copy) != before, "the copy moved forward");
}
