//! Issue 23: the seeds' scripts run as written (paths and names adapted), and a restore from
//! what they wrote gives equal data.

mod common;
mod flows;

use flows::*;

fn golden(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../recman-lang/tests/golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Seed 004's daily script, night after night: the image copy rolled forward, a level 1 for
/// it, the archived WAL put into backup sets and removed from the archive (DELETE ALL
/// INPUT), retention. Recovery then reads the WAL from those sets.
#[test]
fn seed_004_daily_script_runs_as_written_and_restores() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    let daily = golden("seed004_daily.rcv");
    for night in 0..2 {
        c.psql(&format!(
            "create table night_{night} as select {night} as n"
        ));
        c.switch_wal_and_wait_archived();
        let out = setup.ok(&["run", &daily]);
        assert!(out.contains("archivelog backup"), "{out}");
        assert!(out.contains("deleted archived log (input)"), "{out}");
    }
    let list = setup.backups();
    assert_eq!(
        list.iter().filter(|b| b["type"] == "ARCHIVELOG").count(),
        2,
        "{list:?}"
    );
    // DELETE ALL INPUT: what the sets hold left the archive.
    let left: Vec<_> = setup
        .archivelogs()
        .into_iter()
        .filter(|w| w["kind"] == "segment" && w["backed_up"] == 0)
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The image copy the script rolls forward is listed.
    let copies: Vec<serde_json::Value> =
        serde_json::from_str(&setup.ok(&["list", "copy", "--json"])).unwrap();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(copies[0]["tag"], "WEEKLY_FULL_BKUP");
    c.psql("create table after_night as select 1 as n");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_keep, to) = setup.restore(&[]);
    drop(start_and_compare(&to, &expected));
}

/// `PLUS ARCHIVELOG` in the language does what `--plus-archivelog` does: archived WAL in
/// sets before and after the database.
#[test]
fn plus_archivelog_writes_archivelog_sets_around_the_database() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int); insert into t select generate_series(1, 1000)");
    c.switch_wal_and_wait_archived();
    let out = setup.ok(&["run", "BACKUP DATABASE PLUS ARCHIVELOG;"]);
    assert_eq!(out.matches("archivelog backup").count(), 2, "{out}");
    let types: Vec<String> = setup
        .backups()
        .iter()
        .map(|b| b["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types[..3], ["ARCHIVELOG", "FULL", "ARCHIVELOG"]);
    // NOT BACKED UP 1 TIMES: nothing is backed up twice.
    c.psql("insert into t select generate_series(1, 10)");
    c.switch_wal_and_wait_archived();
    setup.ok(&[
        "run",
        "BACKUP ARCHIVELOG ALL NOT BACKED UP 1 TIMES TAG 'wal1';",
    ]);
    let out = setup.ok(&["run", "BACKUP ARCHIVELOG ALL NOT BACKED UP 1 TIMES;"]);
    assert!(out.contains("no archived logs to back up"), "{out}");
}

/// FORMAT with a location: the pieces are written there under the template's names, the
/// repository holds none of them, and crosscheck, validate, restore and delete find them.
#[test]
fn format_with_a_directory_writes_pieces_there_and_everything_finds_them() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(id int primary key, v text)");
    c.psql("insert into t select g, md5(g::text) from generate_series(1, 5000) g");
    let (_keep, scratch) = common::new_scratch_dir();
    let share = scratch.join("backup_folder");
    let script = format!(
        "RUN {{\n  ALLOCATE CHANNEL d1 TYPE DISK FORMAT '{0}/chan_%U.rbf';\n  ALLOCATE CHANNEL d2 TYPE DISK FORMAT '{0}/chan_%U.rbf';\n  BACKUP AS COMPRESSED BACKUPSET FORMAT '{0}/ora_%d_%s_%p_%U.rbf' DATABASE TAG 'fmt';\n}}\n",
        common::path_str(&share)
    );
    setup.ok(&["run", &script]);
    let b = setup.backups().pop().unwrap();
    let pieces = b["pieces"].as_array().unwrap();
    assert!(!pieces.is_empty(), "{b}");
    for p in pieces {
        let path = setup.repo.join(p["path"].as_str().unwrap());
        assert!(
            !path.exists(),
            "piece {} is in the repository",
            path.display()
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(&share)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), pieces.len(), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("ora_main_") && n.ends_with("_1.rbf")),
        "the BACKUP's FORMAT wins over the channels': {names:?}"
    );
    let id = b["id"].as_str().unwrap().to_string();
    setup.ok(&["validate", "backup", &id]);
    // A piece gone from the share: crosscheck says so; back again: AVAILABLE again.
    let gone = share.join(&names[0]);
    let aside = scratch.join("aside");
    std::fs::rename(&gone, &aside).unwrap();
    setup.ok(&["crosscheck", "backup"]);
    assert_eq!(setup.backups().pop().unwrap()["status"], "EXPIRED");
    std::fs::rename(&aside, &gone).unwrap();
    setup.ok(&["crosscheck", "backup"]);
    assert_eq!(setup.backups().pop().unwrap()["status"], "AVAILABLE");

    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_r, to) = setup.restore(&[]);
    drop(start_and_compare(&to, &expected));

    setup.ok(&["delete", "backup", &id, "--noprompt"]);
    assert_eq!(std::fs::read_dir(&share).unwrap().count(), 0);
}

fn make_standby(primary: &common::Cluster) -> (tempfile::TempDir, common::Cluster) {
    let (tmp, dir) = common::new_scratch_dir();
    let data = dir.join("standby");
    common::run_as_cluster_user_ok(
        std::process::Command::new(common::pg_bin("pg_basebackup"))
            .arg("-D")
            .arg(&data)
            .args(["-R", "-X", "stream", "--no-sync", "-c", "fast", "-d"])
            .arg(primary.conninfo()),
    );
    let standby = common::Cluster::adopt(data);
    standby.start();
    (tmp, standby)
}

/// Seed 002's nightly script as written, with only the share's path adapted: its channels
/// connect to `/@instance1..3`, services of a pg_service.conf (instance1 the primary,
/// instance2 and instance3 a streaming standby of it), the pieces, the archived-log sets and
/// the control file go to the share under the FORMAT names. The catalog then comes back
/// from the control file piece alone, and a restore from the share gives equal data.
#[test]
fn seed_002_nightly_script_runs_as_written_and_restores() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    let (_s, standby) = make_standby(c);
    let (_keep, scratch) = common::new_scratch_dir();
    let services = scratch.join("pg_service.conf");
    let entry = |name: &str, cl: &common::Cluster| {
        format!(
            "[{name}]\nhost={}\nport={}\nuser=postgres\ndbname=postgres\n",
            cl.sockdir.display(),
            cl.port
        )
    };
    std::fs::write(
        &services,
        format!(
            "{}{}{}",
            entry("instance1", c),
            entry("instance2", &standby),
            entry("instance3", &standby)
        ),
    )
    .unwrap();
    let share = scratch.join("backup_folder");
    let script = golden("seed002_backup.rcv").replace(
        "\\\\<IP_Address>\\backup_folder\\",
        &format!("{}/", common::path_str(&share)),
    );
    assert_eq!(script.matches(common::path_str(&share)).count(), 3);
    let env = [("PGSERVICEFILE", common::path_str(&services))];
    let run = |args: &[&str]| {
        let out = common::recman_env(setup.args(args), &env);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "recman {args:?} failed:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let out = run(&["run", &script]);
    assert!(out.contains("control file backup"), "{out}");
    let names: Vec<String> = std::fs::read_dir(&share)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let count = |p: &str| names.iter().filter(|n| n.starts_with(p)).count();
    assert!(
        count("ora_") > 10,
        "FILESPERSET 1: a piece per file: {names:?}"
    );
    assert_eq!(count("arc_"), 1, "{names:?}");
    assert_eq!(count("ctl_"), 1, "{names:?}");
    let listed = setup.backups();
    let full = listed.iter().find(|b| b["type"] != "ARCHIVELOG").unwrap();
    assert_eq!(full["channels"], 3, "{full}");
    for p in full["pieces"].as_array().unwrap() {
        assert!(!setup.repo.join(p["path"].as_str().unwrap()).exists());
    }

    // The catalog lost; the control file piece on the share brings it back.
    let before = setup.ok(&["list", "backup", "--json"]);
    for f in ["catalog.db", "catalog.db-wal", "catalog.db-shm"] {
        let _ = std::fs::remove_file(setup.repo.join(f));
    }
    let ctl = share.join(names.iter().find(|n| n.starts_with("ctl_")).unwrap());
    setup.ok(&[
        "run",
        &format!("RESTORE CONTROLFILE FROM '{}';", common::path_str(&ctl)),
    ]);
    assert_eq!(before, setup.ok(&["list", "backup", "--json"]));

    c.psql("create table after_script as select 1 as n");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_r, to) = setup.restore(&[]);
    drop(start_and_compare(&to, &expected));
    standby.stop();
}

/// Seeds 000, 001 and 003 as written, on one cluster: seed 000's tape buffer (BLKSIZE) and
/// seed 001's benchmark configuration (default device SBT, PARALLELISM 40, MAXOPENFILES 1,
/// PARMS, FORMAT) on a virtual tape library of 40 drives, then the benchmark's plain
/// `BACKUP DATABASE` (40 channels to tape) and seed 003's two `VALIDATE DATABASE` runs. The
/// restore from the tapes gives equal data.
#[test]
fn seeds_000_001_003_run_as_written_and_restore_from_tape() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    let (_keep, scratch) = common::new_scratch_dir();
    let lib = scratch.join("lib");
    setup.ok(&[
        "run",
        &format!(
            "CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'vtape:{},drives=40,cartridges=48,rate=4G';",
            common::path_str(&lib)
        ),
    ]);
    let out = setup.ok(&["run", &golden("seed000_sbt_parms.rcv")]);
    assert!(out.contains("device-type sbt blksize 524288"), "{out}");
    let out = setup.ok(&["run", &golden("seed001_configure.rcv")]);
    assert!(out.contains("device-type sbt parallelism 40"), "{out}");
    let out = setup.ok(&["run", "BACKUP DATABASE;"]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    let b = setup.backups().pop().unwrap();
    assert_eq!(b["channels"], 40, "{b}");
    for p in b["pieces"].as_array().unwrap() {
        assert!(!setup.repo.join(p["path"].as_str().unwrap()).exists());
    }
    let out = setup.ok(&["run", &golden("seed003_validate.rcv")]);
    assert_eq!(out.matches("no corrupt blocks found").count(), 2, "{out}");

    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    // As many drives read as wrote: each channel's cartridge is mounted once.
    let (_r, to) = setup.restore(&["--channels", "40"]);
    drop(start_and_compare(&to, &expected));
}
