//! Issue 5, acceptance 2: crosscheck marks exactly the missing or damaged pieces and WAL files
//! EXPIRED, found-again ones AVAILABLE; restore ignores EXPIRED backups; `delete expired`
//! removes only records.

mod common;
mod flows;

use common::*;
use flows::*;
use serde_json::Value;

fn statuses(setup: &Setup) -> Vec<(String, String)> {
    setup
        .backups()
        .iter()
        .map(|b| {
            (
                b["id"].as_str().unwrap().to_string(),
                b["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn wal(setup: &Setup) -> Vec<Value> {
    setup.archivelogs()
}

#[test]
fn crosscheck_expires_and_finds_again() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int); insert into t values (1)");
    let b1 = setup.backup(&[]);
    c.psql("insert into t values (2)");
    let b2 = setup.backup(&["--channels", "1"]);
    c.switch_wal_and_wait_archived();

    let out = setup.ok(&["crosscheck", "backup"]);
    assert!(
        out.contains("found to be 'AVAILABLE'") && out.contains("Crosschecked"),
        "{out}"
    );

    // Move one piece of the newest backup away: exactly that backup expires.
    let piece = setup.backups()[1]["pieces"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let piece_path = setup.repo.join(&piece);
    let aside = setup.repo.join("aside.rmp");
    std::fs::rename(&piece_path, &aside).unwrap();
    let out = setup.ok(&["crosscheck", "backup"]);
    assert!(out.contains("found to be 'EXPIRED'"), "{out}");
    assert_eq!(
        statuses(&setup),
        vec![
            (b1.clone(), "AVAILABLE".into()),
            (b2.clone(), "EXPIRED".into())
        ]
    );
    let b = &setup.backups()[1];
    let expired: Vec<_> = b["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] == "EXPIRED")
        .collect();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0]["path"], piece.as_str());

    // Restore ignores the EXPIRED backup: --from-tag of it fails, the default uses b1.
    let tag = b["tag"].as_str().unwrap().to_string();
    let (_t, dir) = new_scratch_dir();
    let err = setup.err(&[
        "restore",
        "database",
        "--to",
        path_str(&dir.join("x")),
        "--from-tag",
        &tag,
    ]);
    assert!(err.contains("no available backup has tag"), "{err}");

    // Found again: AVAILABLE.
    std::fs::rename(&aside, &piece_path).unwrap();
    setup.ok(&["crosscheck", "backup"]);
    assert_eq!(
        statuses(&setup),
        vec![
            (b1.clone(), "AVAILABLE".into()),
            (b2.clone(), "AVAILABLE".into())
        ]
    );

    // Damage a byte in the middle: the size check passes, --verify finds it.
    let mut bytes = std::fs::read(&piece_path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&piece_path, &bytes).unwrap();
    setup.ok(&["crosscheck", "backup"]);
    assert_eq!(statuses(&setup)[1].1, "AVAILABLE");
    let out = setup.ok(&["crosscheck", "backup", "--verify"]);
    assert!(out.contains("EXPIRED"), "{out}");
    assert_eq!(statuses(&setup)[1].1, "EXPIRED");

    // WAL: remove one file and damage another; exactly those two expire.
    let w = wal(&setup);
    let segs: Vec<&Value> = w.iter().filter(|w| w["kind"] == "segment").collect();
    assert!(segs.len() >= 2);
    let (gone, bad) = (
        segs[0]["path"].as_str().unwrap(),
        segs[1]["path"].as_str().unwrap(),
    );
    std::fs::remove_file(setup.repo.join(gone)).unwrap();
    let mut wb = std::fs::read(setup.repo.join(bad)).unwrap();
    let n = wb.len();
    wb[n - 60] ^= 0x55;
    std::fs::write(setup.repo.join(bad), &wb).unwrap();
    setup.ok(&["crosscheck", "archivelog", "all", "--verify"]);
    let after = wal(&setup);
    let expired: Vec<&str> = after
        .iter()
        .filter(|w| w["status"] == "EXPIRED")
        .map(|w| w["path"].as_str().unwrap())
        .collect();
    assert_eq!(expired, vec![gone, bad]);

    // delete expired: only records go; the damaged files stay on disk.
    let err = setup.err(&["delete", "expired"]);
    assert!(err.contains("--noprompt"), "{err}");
    setup.ok(&["delete", "expired", "--noprompt"]);
    assert_eq!(statuses(&setup), vec![(b1.clone(), "AVAILABLE".into())]);
    assert!(piece_path.exists() && setup.repo.join(bad).exists());
    assert_eq!(wal(&setup).len(), after.len() - 2);
}
