//! Issue 16, acceptance 4: restores are confined. A manifest edited (and re-sealed with a
//! recomputed checksum) to name `../../x`, an absolute path, or a path below a symbolic link,
//! and a target holding a symbolic link: restore refuses naming the entry, before anything is
//! written, inside or outside the target.

mod common;
mod flows;

use common::*;
use flows::*;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry};

fn reseal(path: &std::path::Path, m: &BackupManifest) {
    let mut b = Vec::new();
    recman_format::seal::write_sealed(&mut b, m).unwrap();
    std::fs::write(path, &b).unwrap();
}

fn count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn restore_writes_only_inside_its_targets() {
    let setup = Setup::new();
    let id = setup.backup(&[]);
    let path = setup.repo.join(format!("main/backup/{id}/manifest.json"));
    let good = std::fs::read(&path).unwrap();
    let m: BackupManifest = recman_format::seal::read_sealed(&good).unwrap();
    let (_t, dir) = new_scratch_dir();
    let outside = dir.join("outside");
    std::fs::create_dir(&outside).unwrap();
    chown_to_cluster_user(&outside);
    let victim = m
        .entries
        .iter()
        .position(|e| e.kind == EntryKind::File && e.path == "PG_VERSION")
        .unwrap();

    let escapes = [
        "../../x".to_string(),
        format!("{}/x", outside.display()),
        "base/../../../x".to_string(),
    ];
    for (i, bad) in escapes.iter().enumerate() {
        let mut edited = m.clone();
        edited.entries[victim].path = bad.clone();
        reseal(&path, &edited);
        let to = dir.join(format!("r{i}"));
        let err = setup.err(&["restore", "database", "--to", path_str(&to)]);
        assert!(
            err.contains(&format!("{bad:?}")) && err.contains("nothing was written"),
            "{bad}: {err}"
        );
        assert!(
            !to.exists() || count(&to) == 0,
            "{bad}: restore wrote into {}",
            to.display()
        );
    }

    // A symbolic link entry pointing outside, and a file below it.
    let mut edited = m.clone();
    let mut link: ManifestEntry = edited.entries[victim].clone();
    link.path = "base/evil".into();
    link.kind = EntryKind::Symlink;
    link.size = None;
    link.crc32c = None;
    link.set_no = None;
    link.link_target = Some(outside.display().to_string());
    edited.entries.push(link);
    edited.entries[victim].path = "base/evil/PG_VERSION".into();
    reseal(&path, &edited);
    let to = dir.join("rl");
    let err = setup.err(&["restore", "database", "--to", path_str(&to)]);
    assert!(
        err.contains("\"base/evil/PG_VERSION\"") && err.contains("below the symbolic link"),
        "{err}"
    );
    assert!(
        !to.exists() || count(&to) == 0,
        "restore wrote into {}",
        to.display()
    );

    // A symbolic link placed in the target before the restore.
    std::fs::write(&path, &good).unwrap();
    let to = dir.join("rt");
    std::fs::create_dir(&to).unwrap();
    chown_to_cluster_user(&to);
    std::os::unix::fs::symlink(&outside, to.join("base")).unwrap();
    let err = setup.err(&["restore", "database", "--to", path_str(&to)]);
    assert!(
        err.contains("not empty") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(count(&to), 1);
    assert_eq!(count(&outside), 0, "restore wrote outside its target");

    // The good manifest still restores.
    let (_k, restored) = setup.restore(&[]);
    assert!(restored.join("PG_VERSION").is_file());
}
