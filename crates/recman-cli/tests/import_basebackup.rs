//! Issue 44, acceptance 2 and 3 for pg_basebackup on PostgreSQL 15: backups in plain format,
//! tar format, and tar compressed by the server (lz4, zstd) or the client (gzip), each with
//! the WAL pg_basebackup streams, are imported read in place, validated against their backup_manifest, and
//! restored with no WAL archive at all to data equal to the source (pg_dumpall); the backup
//! directories are byte for byte as they were. A damaged file is then named by validate
//! with the manifest's checksum, and a restore of it stops and leaves nothing to start.
//! Retention counts an imported backup only when told to, and then forgets it without
//! touching its directory.

mod common;
mod flows;

use common::*;
use std::path::Path;

/// The id `catalog import` gave the backup it imported, from its report.
fn imported_id(out: &str) -> String {
    out.lines()
        .find(|l| l.starts_with("imported backup "))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no backup imported:\n{out}"))
        .to_string()
}

/// The manifest's checksum of `rel`, as pg_basebackup wrote it.
fn manifest_checksum(dir: &Path, rel: &str) -> String {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("backup_manifest")).unwrap()).unwrap();
    m["Files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["Path"] == rel)
        .and_then(|f| f["Checksum"].as_str())
        .unwrap_or_else(|| panic!("backup_manifest of {} lists no {rel}", dir.display()))
        .to_string()
}

/// The largest member under base/ of an uncompressed tar: its name and where its bytes are.
fn largest_member(tar: &[u8]) -> (String, usize, usize) {
    let mut at = 0;
    let mut best = (String::new(), 0, 0);
    while at + 512 <= tar.len() && tar[at..at + 512].iter().any(|b| *b != 0) {
        let h = &tar[at..at + 512];
        let name = String::from_utf8_lossy(&h[..100])
            .trim_end_matches('\0')
            .to_string();
        let size = String::from_utf8_lossy(&h[124..136]);
        let size = usize::from_str_radix(size.trim_matches(|c| c == '\0' || c == ' '), 8).unwrap();
        if name.starts_with("base/") && size > best.2 {
            best = (name, at + 512, size);
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    best
}

fn damage_and_check(g: &dyn Fn(&[&str]) -> Vec<String>, dir: &Path, id: &str, rel: &str) {
    let checksum = manifest_checksum(dir, rel);
    let err = recman_err(g(&["validate", "backup", id]));
    assert!(
        err.contains(rel) && err.to_lowercase().contains(&checksum.to_lowercase()),
        "{err}"
    );
}

#[test]
fn pg_basebackup_backups_import_validate_and_restore_equal() {
    let (_rtmp, repo) = new_repo();
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    // No archive: each backup must become consistent from the WAL it holds.
    let c = Cluster::init_with(ClusterOpts::default());
    let g = |args: &[&str]| cluster_args(&repo, &c, args);
    recman_ok(g(&["register", "database", "--name", "main"]));
    c.pgbench_init(1);
    c.psql("checkpoint");
    let want = c.dumpall().unwrap();

    let (_btmp, backups) = new_scratch_dir();
    let kinds: [(&str, &[&str]); 5] = [
        ("plain", &["-Fp"]),
        ("tar", &["-Ft"]),
        ("tar-lz4", &["-Ft", "--compress=server-lz4"]),
        // Compressed by the client: pg_wal.tar too.
        ("tar-gz", &["-Ft", "--compress=gzip"]),
        ("tar-zst", &["-Ft", "--compress=server-zstd"]),
    ];
    let mut ids = Vec::new();
    for (name, args) in kinds {
        let dir = backups.join(name);
        pg_basebackup(&c, &dir, args);
        let base = match name {
            "tar-lz4" => "base.tar.lz4",
            "tar-gz" => "base.tar.gz",
            "tar-zst" => "base.tar.zst",
            _ => "backup_manifest",
        };
        assert!(dir.join(base).is_file(), "{name}: no {base}");
        let before = snapshot(&dir);
        let out = recman_ok(g(&["catalog", "import", path_str(&dir)]));
        assert!(out.contains("imported 1 backup(s)"), "{out}");
        let id = imported_id(&out);
        let out = recman_ok(g(&["validate", "backup", &id]));
        assert!(out.contains("intact"), "{name}: {out}");
        let list: Vec<serde_json::Value> =
            serde_json::from_str(&recman_ok(g(&["list", "backup", "--json"]))).unwrap();
        let b = list.iter().find(|b| b["id"] == id.as_str()).unwrap();
        assert_eq!(b["type"], "FOREIGN", "{b}");
        let tag = b["tag"].as_str().unwrap();
        let (_t, rdir) = new_scratch_dir();
        let to = rdir.join("r");
        restore_to(&repo, &to, &["--from-tag", tag]);
        same_dump(&start_dump(&to), &want, &format!("{name} backup restored"));
        // Again: nothing new.
        let out = recman_ok(g(&["catalog", "import", path_str(&dir)]));
        assert!(out.contains("imported 0 backup(s)"), "{out}");
        assert!(snapshot(&dir) == before, "{name} backup changed");
        ids.push((dir, id, tag.to_string()));
    }
    let text = recman_ok(g(&["list", "backup"]));
    assert!(
        text.contains("pg_basebackup"),
        "list names the origin:\n{text}"
    );

    // Acceptance 3: the largest relation file of the plain backup, damaged.
    let (dir, id, tag) = &ids[0];
    let victim = files_under(&dir.join("base"))
        .into_iter()
        .max_by_key(|f| std::fs::metadata(f).unwrap().len())
        .unwrap();
    let rel = path_str(victim.strip_prefix(dir).unwrap()).to_string();
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&victim, &bytes).unwrap();
    damage_and_check(&g, dir, id, &rel);
    let (_t, rdir) = new_scratch_dir();
    let to = rdir.join("damaged");
    let err = recman_err([
        "--repo",
        path_str(&repo),
        "restore",
        "database",
        "--to",
        path_str(&to),
        "--from-tag",
        tag,
    ]);
    assert!(err.contains(&rel), "{err}");
    assert!(
        !to.join("PG_VERSION").exists() && !to.join("backup_label").exists(),
        "a failed restore left a directory that could be started"
    );
    // The same in the uncompressed tar, read as a stream.
    let (dir, id, _) = &ids[1];
    let tar = dir.join("base.tar");
    let mut bytes = std::fs::read(&tar).unwrap();
    let (rel, at, size) = largest_member(&bytes);
    bytes[at + size / 2] ^= 0x5a;
    std::fs::write(&tar, &bytes).unwrap();
    damage_and_check(&g, dir, id, &rel);
}

/// The ids `report obsolete` names.
fn obsolete_ids(s: &flows::Setup) -> Vec<String> {
    let rep: serde_json::Value =
        serde_json::from_str(&s.ok(&["report", "obsolete", "--json"])).unwrap();
    rep["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().to_string())
        .collect()
}

fn listed(s: &flows::Setup, id: &str) -> bool {
    s.backups().iter().any(|b| b["id"] == id)
}

/// Issue 44: imported backups count in recman's retention only when the user says so
/// (`configure imported-retention on`); then `delete obsolete` forgets the one recman's own
/// full backup made redundant, and pg_basebackup's directory is byte for byte as it was.
#[test]
fn imported_backup_is_obsolete_only_when_opted_in() {
    let s = flows::Setup::new();
    s.cluster.pgbench_init(1);
    let (_btmp, backups) = new_scratch_dir();
    let dir = backups.join("plain");
    pg_basebackup(&s.cluster, &dir, &["-Fp"]);
    let before = snapshot(&dir);
    let id = imported_id(&s.ok(&["catalog", "import", path_str(&dir)]));

    // Counted, it is a full backup (its origin's type), the only one: redundancy 1 keeps it.
    s.ok(&["configure", "imported-retention", "on"]);
    assert_eq!(obsolete_ids(&s), Vec::<String>::new());
    s.ok(&["configure", "imported-retention", "clear"]);

    let own = s.backup(&[]);
    // By default never obsolete, even with a newer full backup of recman's own.
    assert!(!obsolete_ids(&s).contains(&id));
    s.ok(&["delete", "obsolete", "--noprompt"]);
    assert!(
        listed(&s, &id),
        "delete obsolete forgot an imported backup by default"
    );

    s.ok(&["configure", "imported-retention", "on"]);
    assert_eq!(obsolete_ids(&s), vec![id.clone()]);
    let text = s.ok(&["report", "obsolete"]);
    assert!(
        text.contains("Imported Backup") && text.contains("never deleted"),
        "{text}"
    );
    let out = s.ok(&["delete", "obsolete", "--noprompt"]);
    assert!(
        out.contains(&format!("forgot imported backup {id}")) && out.contains("were not deleted"),
        "{out}"
    );
    assert!(!listed(&s, &id) && listed(&s, &own));
    assert!(
        snapshot(&dir) == before,
        "delete obsolete changed pg_basebackup's files"
    );
}

/// Issue 44: `catalog import --copy` brings a pg_basebackup backup into recman's format, so
/// that with its directory gone it still validates and restores equal (no archive before the
/// copy: the WAL to consistency was copied into recman's); its files were only read.
#[test]
fn copied_backup_restores_without_its_directory() {
    let (_rtmp, repo) = new_repo();
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    let c = Cluster::init_with(ClusterOpts::default());
    let g = |args: &[&str]| cluster_args(&repo, &c, args);
    recman_ok(g(&["register", "database", "--name", "main"]));
    c.pgbench_init(1);
    c.psql("checkpoint");
    let want = c.dumpall().unwrap();
    let (_btmp, backups) = new_scratch_dir();
    let dir = backups.join("plain");
    pg_basebackup(&c, &dir, &["-Fp"]);
    let before = snapshot(&dir);

    let out = recman_ok(g(&["catalog", "import", "--copy", path_str(&dir)]));
    let id = imported_id(&out);
    assert!(
        out.contains(&format!("copied backup {id} into recman's format")),
        "{out}"
    );
    assert!(
        snapshot(&dir) == before,
        "the copy changed pg_basebackup's files"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let list: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(g(&["list", "backup", "--json"]))).unwrap();
    let b = list.iter().find(|b| b["id"] == id.as_str()).unwrap();
    assert_eq!(b["type"], "FULL", "{b}");
    let out = recman_ok(g(&["validate", "backup", &id]));
    assert!(out.contains("intact"), "{out}");
    let (_t, rdir) = new_scratch_dir();
    let to = rdir.join("r");
    restore_to(&repo, &to, &[]);
    same_dump(&start_dump(&to), &want, "the copied backup restored");
}
