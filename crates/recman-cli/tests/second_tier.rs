//! Issue 8, acceptance 6 and the device types: backups copied to a second device (the
//! virtual tape library) with `backup backupset` and `backup recovery-area`; restore fails
//! over to the copy when the repository's piece is missing or damaged, saying so; a backup
//! written straight to tape with `--device-type sbt` restores too.

mod common;
mod flows;

use common::*;
use flows::*;

fn configure_vtape(setup: &Setup) -> tempfile::TempDir {
    let (tmp, dir) = new_scratch_dir();
    let spec = format!("vtape:{}/lib,drives=2,rate=2G,capacity=64M", path_str(&dir));
    let out = setup.ok(&[
        "configure",
        "device-type",
        "sbt",
        "parms",
        &spec,
        "parallelism",
        "2",
    ]);
    assert!(out.contains("vtape"), "{out}");
    tmp
}

fn restore_with_notices(setup: &Setup) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let (tmp, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let out = recman(setup.args(&["restore", "database", "--to", path_str(&to)]));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "restore failed:\n{stderr}");
    (tmp, to, stderr)
}

#[test]
fn restore_fails_over_to_the_copy_on_tape() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(2);
    c.psql("create table marker(x int); insert into marker values (1)");
    let _lib = configure_vtape(&setup);
    setup.backup(&["--channels", "2", "--filesperset", "4"]);
    c.psql("insert into marker values (2)");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();

    let out = setup.ok(&["backup", "backupset", "all", "--device-type", "sbt"]);
    assert!(out.contains("to device type sbt"), "{out}");
    let again = setup.ok(&["backup", "recovery-area", "--device-type", "sbt"]);
    assert!(again.contains("already had a copy"), "{again}");
    assert!(!again.contains(" 0 archived log(s)"), "{again}");

    // One piece gone from the repository, another damaged: both come from tape.
    let b = &setup.backups()[0];
    let pieces: Vec<String> = b["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    assert!(pieces.len() >= 2, "{pieces:?}");
    std::fs::remove_file(setup.repo.join(&pieces[0])).unwrap();
    let victim = setup.repo.join(&pieces[1]);
    let mut bytes = std::fs::read(&victim).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&victim, bytes).unwrap();

    let (_t, to, notices) = restore_with_notices(&setup);
    assert!(
        notices.contains(&pieces[0]) && notices.contains(&pieces[1]),
        "restore must name each piece it took from the copy:\n{notices}"
    );
    assert!(notices.contains("from its copy on sbt"), "{notices}");
    let r = start_and_compare(&to, &expected);
    assert_eq!(
        r.psql("select string_agg(x::text, ',' order by x) from marker"),
        "1,2"
    );
    r.stop();
}

#[test]
fn a_backup_straight_to_tape_restores() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    c.psql("create table marker(x int); insert into marker values (7)");
    let _lib = configure_vtape(&setup);
    let out = setup.ok(&[
        "backup",
        "database",
        "--device-type",
        "sbt",
        "--compress",
        "lz4",
    ]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let b = &setup.backups()[0];
    for p in b["pieces"].as_array().unwrap() {
        let path = setup.repo.join(p["path"].as_str().unwrap());
        assert!(
            !path.exists(),
            "piece {} is in the repository, not on tape",
            path.display()
        );
    }
    assert!(
        setup
            .repo
            .join(format!(
                "main/backup/{}/manifest.json",
                b["id"].as_str().unwrap()
            ))
            .exists()
    );
    let out = setup.ok(&["crosscheck", "backup"]);
    assert!(out.contains("found to be 'AVAILABLE'"), "{out}");
    setup.ok(&["validate", "backup"]);
    let (_t, to, _) = restore_with_notices(&setup);
    let r = start_and_compare(&to, &expected);
    assert_eq!(r.psql("select x from marker"), "7");
    r.stop();

    // An unconfigured device type is refused with the command that configures it.
    let err = setup.err(&["backup", "database", "--device-type", "s3"]);
    assert!(err.contains("configure device-type s3 parms"), "{err}");
}

#[test]
fn a_plugin_media_manager_holds_the_second_copy() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    c.psql("create table marker(x int); insert into marker values (3)");
    let (_t, dir) = new_scratch_dir();
    let plugin = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/plugins/recman_dir_plugin.py"
    );
    let objects = dir.join("objects");
    std::fs::create_dir(&objects).unwrap();
    chown_to_cluster_user(&objects);
    let spec = format!("plugin:python3 {plugin} --dir {}", path_str(&objects));
    setup.ok(&["configure", "device-type", "sbt", "parms", &spec]);
    // RMAN's ENV=(...) reaches the plugin's environment (a harmless variable here).
    setup.ok(&["configure", "device-type", "sbt", "env", "NB_ORA_CLASS=pg"]);
    setup.backup(&["--compress", "lz4"]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let out = setup.ok(&["backup", "backupset", "all", "--device-type", "sbt"]);
    assert!(out.contains("to device type sbt"), "{out}");
    let b = &setup.backups()[0];
    assert!(
        b["pieces"][0]["copies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d == "sbt"),
        "{b}"
    );
    for p in b["pieces"].as_array().unwrap() {
        std::fs::remove_file(setup.repo.join(p["path"].as_str().unwrap())).unwrap();
    }
    let (_r, to, notices) = restore_with_notices(&setup);
    assert!(notices.contains("plugin python3"), "{notices}");
    let r = start_and_compare(&to, &expected);
    assert_eq!(r.psql("select x from marker"), "3");
    r.stop();
}
