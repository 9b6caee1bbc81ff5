//! The RMAN-style language end to end: RUN blocks that back up with two channels, list, and
//! restore to a point in time (started and compared); a failing statement stops its block; the
//! RECMAN> prompt driven through a pseudo-terminal; device types: a virtual tape library
//! configured by CONFIGURE CHANNEL … PARMS, the SBT seeds as written, a backup on SBT channels
//! and the copies of seed 004's tape script.

mod common;
mod flows;

use common::*;
use flows::*;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

fn write_script(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    chown_to_cluster_user(&p);
    path_str(&p).to_string()
}

#[test]
fn run_blocks_back_up_list_restore_and_stop_at_a_failure() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(id int primary key, v text)");
    c.psql("insert into t select g, md5(g::text) from generate_series(1, 2000) g");
    let (_keep, dir) = new_scratch_dir();

    let backup = write_script(
        &dir,
        "backup.rcv",
        "# nightly\nrun {\n  allocate channel c1 device type disk maxopenfiles 4;\n  ALLOCATE CHANNEL c2 DEVICE TYPE DISK MAXOPENFILES 4;\n  BACKUP AS COMPRESSED BACKUPSET\n    DATABASE TAG 'script_full';\n}\nLIST BACKUP;\n",
    );
    let out = setup.ok(&["run", "-f", &backup]);
    assert!(out.contains("tag SCRIPT_FULL completed"), "{out}");
    let listed = setup.backups();
    let last = listed.last().unwrap();
    assert_eq!(last["tag"], "SCRIPT_FULL", "{last}");
    assert!(
        out.matches("SCRIPT_FULL").count() >= 2,
        "LIST BACKUP did not show it:\n{out}"
    );

    let expected = c.all_table_checksums();
    std::thread::sleep(Duration::from_millis(1200));
    let mark = c.psql("select clock_timestamp()::text");
    std::thread::sleep(Duration::from_millis(1200));
    c.psql("insert into t select g, 'later' from generate_series(2001, 3000) g");
    c.switch_wal_and_wait_archived();

    let to = dir.join("restored");
    let restore = write_script(
        &dir,
        "restore.rcv",
        &format!(
            "RUN {{\n  SET UNTIL TIME '{mark}';\n  SET NEWNAME FOR DATABASE TO '{}';\n  RESTORE DATABASE;\n  RECOVER DATABASE;\n}}\n",
            path_str(&to)
        ),
    );
    let out = setup.ok(&["run", "-f", &restore]);
    assert!(out.contains("restored backup"), "{out}");
    let restored = start_and_compare(&to, &expected);
    drop(restored);

    // The first failing statement stops the block and is named; later ones do not run.
    let err = setup.err(&[
        "run",
        "RUN { SQL 'create table marker1(x int)'; BACKUP INCREMENTAL LEVEL 2 DATABASE; SQL 'create table marker2(x int)'; }",
    ]);
    assert!(
        err.contains("statement 2")
            && err.contains("not supported yet by recman")
            && err.contains("hint"),
        "{err}"
    );
    assert_eq!(
        c.psql("select count(*) from pg_class where relname in ('marker1', 'marker2')"),
        "1"
    );

    // A syntax error anywhere means nothing runs.
    let err = setup.err(&["run", "SQL 'create table marker3(x int)';\nBACKUP DATABSE;"]);
    assert!(
        err.contains("line 2 column 8") && err.contains("\"DATABASE\""),
        "{err}"
    );
    assert_eq!(
        c.psql("select count(*) from pg_class where relname = 'marker3'"),
        "0"
    );

    // Oracle-only statements are refused with what PostgreSQL has instead.
    let err = setup.err(&["run", "SHUTDOWN IMMEDIATE;"]);
    assert!(err.contains("pg_ctl"), "{err}");

    // Seed 003 exactly as written: VALIDATE DATABASE, alone and on a channel of 4 open files.
    let seed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../recman-lang/tests/golden/seed003_validate.rcv"
    ))
    .unwrap();
    let out = setup.ok(&["run", &seed]);
    assert_eq!(out.matches("no corrupt blocks found").count(), 2, "{out}");

    // Seed 002 runs as written in tests/seeds.rs.

    prompt_through_a_pty(&setup);
}

fn seed(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../recman-lang/tests/golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn device_types_back_up_to_tape_and_copy_the_recovery_area() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(id int primary key, v text)");
    c.psql("insert into t select g, md5(g::text) from generate_series(1, 2000) g");
    let (_keep, dir) = new_scratch_dir();

    // With no device type configured, a copy to a second device has nowhere to go.
    let err = setup.err(&["run", "BACKUP RECOVERY AREA;"]);
    assert!(
        err.contains("BACKUP RECOVERY AREA needs a device type other than the repository's")
            && err.contains("CONFIGURE DEFAULT DEVICE TYPE TO SBT"),
        "{err}"
    );

    let lib = dir.join("lib");
    let out = setup.ok(&[
        "run",
        &format!(
            "CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'vtape:{},drives=2,rate=2G';",
            path_str(&lib)
        ),
    ]);
    assert!(out.contains("device-type sbt parms vtape:"), "{out}");

    // Seeds 000 and 001 exactly as written.
    let out = setup.ok(&["run", &seed("seed000_sbt_parms.rcv")]);
    assert!(out.contains("device-type sbt blksize 524288"), "{out}");
    let out = setup.ok(&["run", &seed("seed001_configure.rcv")]);
    for want in [
        "default-device-type sbt",
        "device-type sbt parallelism 40",
        "maxopenfiles 1",
        "device-type sbt blksize 1048576",
        "device-type sbt env NB_ORA_CLASS=Oracle_backup",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }

    // Refused: Oracle's library keys, channels of two device types in one block, and a
    // channel whose PARMS names another device than the configured one.
    let err = setup.err(&[
        "run",
        "CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'SBT_LIBRARY=/opt/lib/libobk.so';",
    ]);
    assert!(
        err.contains("SBT_LIBRARY") && err.contains("PARMS 'vtape:/dir'"),
        "{err}"
    );
    let err = setup.err(&[
        "run",
        "RUN { ALLOCATE CHANNEL d1 DEVICE TYPE DISK; ALLOCATE CHANNEL t1 DEVICE TYPE SBT; BACKUP DATABASE; }",
    ]);
    assert!(err.contains("same DEVICE TYPE"), "{err}");
    let err = setup.err(&[
        "run",
        "RUN { ALLOCATE CHANNEL t1 DEVICE TYPE SBT PARMS 'vtape:/elsewhere'; BACKUP DATABASE; }",
    ]);
    assert!(
        err.contains("differs from the device configured for DEVICE TYPE SBT"),
        "{err}"
    );
    assert!(setup.backups().is_empty());

    // Two SBT channels: the block's channels win over PARALLELISM 40.
    let script = write_script(
        &dir,
        "tape.rcv",
        "RUN {\n  ALLOCATE CHANNEL t1 DEVICE TYPE SBT;\n  ALLOCATE CHANNEL t2 DEVICE TYPE SBT;\n  BACKUP DATABASE;\n}\n",
    );
    let out = setup.ok(&["run", "-f", &script]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    let listed = setup.backups();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let b = &listed[0];
    assert_eq!(b["channels"], 2, "{b}");
    let pieces = b["pieces"].as_array().unwrap();
    assert!(!pieces.is_empty(), "{b}");
    for p in pieces {
        let path = setup.repo.join(p["path"].as_str().unwrap());
        assert!(
            !path.exists(),
            "piece {} is in the repository, not on tape",
            path.display()
        );
    }
    assert!(lib.join("library.json").exists());

    // Seed 004's tape script as written: the copies go to the default device type, SBT.
    c.switch_wal_and_wait_archived();
    let out = setup.ok(&["run", &seed("seed004_tape.rcv")]);
    assert_eq!(out.matches("to device type sbt").count(), 2, "{out}");
    assert!(out.contains("already had a copy there"), "{out}");
    assert!(!out.contains(" 0 archived log(s)"), "{out}");

    // The catalog holds what the seeds configured.
    let repo = recman_catalog::Repository::open(&setup.repo).unwrap();
    let cat = repo.catalog();
    for (key, want) in [
        ("default-device-type", "sbt"),
        ("device-type.sbt.parallelism", "40"),
        ("device-type.sbt.blksize", "1048576"),
        ("device-type.sbt.env", "NB_ORA_CLASS=Oracle_backup"),
        ("maxopenfiles", "1"),
    ] {
        assert_eq!(cat.config(key).unwrap().as_deref(), Some(want), "{key}");
    }
}

/// Types into `recman` (no command) on a pseudo-terminal made by script(1), as the postgres
/// user: a statement over two lines, HELP, EXIT; checks the output and the history file.
fn prompt_through_a_pty(setup: &Setup) {
    let (_keep, dir) = new_scratch_dir();
    let history = dir.join("history");
    let mut line = recman_bin().display().to_string();
    for a in setup.args(&[]) {
        line.push_str(&format!(" '{a}'"));
    }
    let mut cmd = Command::new("script");
    cmd.args(["-q", "-e", "-c", &line, "/dev/null"]);
    as_cluster_user(&mut cmd);
    cmd.env("TERM", "xterm")
        .env("RECMAN_HISTORY", &history)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run script(1)");
    let mut stdin = child.stdin.take().unwrap();
    // What the prompt printed so far, read as it comes: each line is typed once the prompt
    // shows that it waits for it, however slowly this machine runs it.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = std::sync::Arc::clone(&seen);
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let deadline = Deadline::after(Duration::from_secs(120));
    let mut at = 0;
    let mut wait_for = |needles: &[&str], child: &mut std::process::Child| {
        for needle in needles {
            loop {
                let text = seen.lock().unwrap().clone();
                if let Some(i) = text[at..].find(needle) {
                    at += i + needle.len();
                    break;
                }
                if deadline.passed() || child.try_wait().unwrap().is_some() {
                    let _ = child.kill();
                    panic!("the prompt never printed {needle:?}:\n{text}");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    for (l, after) in [
        ("LIST", &["RECMAN> "][..]),
        ("BACKUP SUMMARY;", &["2> "][..]),
        ("HELP RESTORE;", &["SCRIPT_FULL", "RECMAN> "][..]),
        ("EXIT;", &["new directory", "RECMAN> "][..]),
    ] {
        wait_for(after, &mut child);
        stdin.write_all(l.as_bytes()).unwrap();
        stdin.write_all(b"\r").unwrap();
        stdin.flush().unwrap();
    }
    let deadline = Deadline::after(Duration::from_secs(60));
    while child.try_wait().unwrap().is_none() {
        if deadline.passed() {
            let _ = child.kill();
            panic!("the prompt did not exit after EXIT;");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap();
    let out = seen.lock().unwrap().clone();
    assert!(out.contains("RECMAN> "), "{out}");
    assert!(out.contains("2> "), "no continuation prompt:\n{out}");
    assert!(
        out.contains("SCRIPT_FULL"),
        "LIST BACKUP SUMMARY did not run:\n{out}"
    );
    assert!(
        out.contains("new directory"),
        "HELP RESTORE did not print:\n{out}"
    );
    let h = std::fs::read_to_string(&history).expect("history written");
    assert!(h.contains("BACKUP SUMMARY;"), "{h}");
}
