//! Issue 44, acceptance 1 and 3: a cluster backed up by pgBackRest (Debian's 2.45) in two
//! stanzas (bundles and lz4; gz and aes-256-cbc), its WAL archived by pgBackRest, then
//! archive_command switched to recman and more writes. recman imports both stanzas read in
//! place, validates each backup, restores each to data equal to the source (pg_dumpall),
//! recovers to a time after the switch through both archives, and leaves the pgBackRest
//! repositories byte for byte as they were. `--copy` of the encrypted stanza makes its backup
//! recman's own, restored equal with its directory in pgBackRest's repository moved away. A
//! damaged file is then named by validate with the origin's checksum, and a restore of it
//! stops and leaves nothing to start.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const PASS: &str = "an-old-passphrase";

fn pgbackrest(conf: &Path, stanza: &str, args: &[&str]) -> String {
    let mut cmd = Command::new("pgbackrest");
    cmd.arg(format!("--config={}", conf.display()))
        .arg(format!("--stanza={stanza}"))
        .args(args);
    run_as_cluster_user_ok(&mut cmd)
}

struct Old {
    _tmp: tempfile::TempDir,
    conf: PathBuf,
    main: PathBuf,
    enc: PathBuf,
}

/// Two pgBackRest repositories for `pgdata`, and their configuration file.
fn old_tool(c: &Cluster) -> Old {
    let (tmp, dir) = new_scratch_dir();
    let (main, enc) = (dir.join("repo-main"), dir.join("repo-enc"));
    for d in ["repo-main", "repo-enc", "log", "spool"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let conf = dir.join("pgbackrest.conf");
    let pg = format!(
        "pg1-path={}\npg1-socket-path={}\npg1-port={}\n",
        c.pgdata.display(),
        c.sockdir.display(),
        c.port
    );
    std::fs::write(
        &conf,
        format!(
            "[global]\nlog-path={d}/log\nspool-path={d}/spool\nlock-path={d}/spool\nlog-level-console=warn\nstart-fast=y\nrepo1-retention-full=9\narchive-timeout=120\n\n[main]\n{pg}repo1-path={}\nrepo1-bundle=y\ncompress-type=lz4\n\n[enc]\n{pg}repo1-path={}\ncompress-type=gz\nrepo1-cipher-type=aes-256-cbc\nrepo1-cipher-pass={PASS}\n",
            main.display(),
            enc.display(),
            d = dir.display()
        ),
    )
    .unwrap();
    chown_tree_to_cluster_user(&dir);
    Old {
        _tmp: tmp,
        conf,
        main,
        enc,
    }
}

fn writes(c: &Cluster, n: u32) {
    c.psql(&format!(
        "update pgbench_accounts set abalance = abalance + 1 where aid <= {n}; insert into pgbench_history (tid, bid, aid, delta, mtime) select 1, 1, g, g, now() from generate_series(1, {n}) g"
    ));
}

/// `--copy` of the encrypted stanza: its backup and the WAL to its end go into recman's
/// repository (pgBackRest's files only read), so that with the backup's directory moved away
/// it validates and restores equal, recovering on through the imported archives and recman's.
fn copied_stanza_needs_no_repository(
    repo: &Path,
    c: &Cluster,
    old: &Old,
    before_enc: &std::collections::BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>,
    list: &[serde_json::Value],
    last: &str,
) {
    let g = |args: &[&str]| cluster_args(repo, c, args);
    let out = recman_ok(g(&[
        "catalog",
        "import",
        "--copy",
        path_str(&old.conf),
        "--stanza",
        "enc",
    ]));
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("copied backup "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("nothing copied:\n{out}"))
        .to_string();
    assert!(
        &snapshot(&old.enc) == before_enc,
        "the copy changed pgBackRest's files"
    );
    let tag = list
        .iter()
        .find(|b| b["id"] == id.as_str())
        .and_then(|b| b["tag"].as_str())
        .unwrap();
    // The backup's own directory (its label) goes; the stanza's archive stays, read on past
    // the backup's end.
    let bdir = old.enc.join(format!("backup/enc/{tag}"));
    let moved = old.enc.join("moved-away");
    std::fs::rename(&bdir, &moved).unwrap();
    let out = recman_ok(g(&["validate", "backup", &id]));
    assert!(out.contains("intact"), "{out}");
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("copied");
    restore_to(repo, &to, &["--from-tag", tag]);
    same_dump(&start_dump(&to), last, "the copied backup restored");
    std::fs::rename(&moved, &bdir).unwrap();
}

#[test]
fn pgbackrest_backups_restore_and_recover_across_the_switch() {
    let found = Command::new("pgbackrest").arg("version").output();
    if !found.is_ok_and(|o| o.status.success()) {
        recman_media::testkit::missing_prerequisite(
            "pgbackrest",
            "the pgbackrest command (Debian's package; scripts/setup.sh installs it)",
        );
        return;
    }
    let (_rtmp, repo) = new_repo();
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    // The cluster archives with pgBackRest into both stanzas first.
    let c = Cluster::init_with(ClusterOpts {
        start: false,
        ..Default::default()
    });
    let old = old_tool(&c);
    let push = |s: &str| {
        format!(
            "pgbackrest --config={} --stanza={s} archive-push %p",
            old.conf.display()
        )
    };
    std::fs::write(
        c.pgdata.join("postgresql.auto.conf"),
        format!(
            "archive_mode = on\narchive_command = '{} && {}'\n",
            push("main"),
            push("enc")
        ),
    )
    .unwrap();
    chown_to_cluster_user(&c.pgdata.join("postgresql.auto.conf"));
    c.start();
    pgbackrest(&old.conf, "main", &["stanza-create"]);
    pgbackrest(&old.conf, "enc", &["stanza-create"]);
    c.pgbench_init(1);
    pgbackrest(&old.conf, "main", &["--type=full", "backup"]);
    writes(&c, 500);
    pgbackrest(&old.conf, "main", &["--type=diff", "backup"]);
    writes(&c, 500);
    pgbackrest(&old.conf, "main", &["--type=incr", "backup"]);
    pgbackrest(&old.conf, "enc", &["--type=full", "backup"]);
    writes(&c, 100);
    c.switch_wal_and_wait_archived();

    // The day of the switch: recman takes over archive_command.
    let g = |args: &[&str]| cluster_args(&repo, &c, args);
    recman_ok(g(&["register", "database", "--name", "main"]));
    c.set_archive_command(&archive_command(&repo));
    writes(&c, 200);
    c.switch_wal_and_wait_archived();
    c.psql("checkpoint");
    let at_t = c.dumpall().unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let t = c.psql("select clock_timestamp()::text");
    std::thread::sleep(Duration::from_millis(1100));
    writes(&c, 300);
    c.switch_wal_and_wait_archived();
    let last = c.dumpall().unwrap();

    let before_main = snapshot(&old.main);
    let before_enc = snapshot(&old.enc);
    // A stanza's directory names the stanza; the configuration file gives the passphrase.
    let out = recman_ok(g(&[
        "catalog",
        "import",
        path_str(&old.main.join("backup/main")),
    ]));
    assert!(out.contains("imported 3 backup(s)"), "{out}");
    let out = recman_ok(g(&[
        "catalog",
        "import",
        path_str(&old.conf),
        "--stanza",
        "enc",
    ]));
    assert!(out.contains("imported 1 backup(s)"), "{out}");
    // Again: nothing new.
    let out = recman_ok(g(&["catalog", "import", path_str(&old.main)]));
    assert!(out.contains("imported 0 backup(s)"), "{out}");

    let list: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(g(&["list", "backup", "--json"]))).unwrap();
    let imported: Vec<&serde_json::Value> =
        list.iter().filter(|b| b["type"] == "FOREIGN").collect();
    assert_eq!(imported.len(), 4, "{list:?}");
    let text = recman_ok(g(&["list", "backup"]));
    assert!(
        text.contains("pgbackrest"),
        "list backup names the origin:\n{text}"
    );

    for b in &imported {
        let id = b["id"].as_str().unwrap();
        let out = recman_ok(g(&["validate", "backup", id]));
        assert!(out.contains("intact"), "{out}");
    }
    // Each backup restored to the end of the archives: the old tool's, then recman's.
    for b in &imported {
        let tag = b["tag"].as_str().unwrap();
        let (_t, dir) = new_scratch_dir();
        let to = dir.join("r");
        restore_to(&repo, &to, &["--from-tag", tag]);
        same_dump(&start_dump(&to), &last, &format!("backup {tag} restored"));
    }
    // To a time after the switch, from the incremental: the plan reads both archives.
    let incr = imported
        .iter()
        .map(|b| b["tag"].as_str().unwrap())
        .find(|t| t.ends_with('I'))
        .unwrap();
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("pitr");
    let plan = restore_to(
        &repo,
        &to,
        &["--from-tag", incr, "--until-time", &t, "--preview"],
    );
    assert!(
        plan.contains("imported archive")
            && plan.contains(": archive")
            && plan.contains("gaps: none"),
        "{plan}"
    );
    restore_to(&repo, &to, &["--from-tag", incr, "--until-time", &t]);
    same_dump(&start_dump(&to), &at_t, &format!("recovery to {t}"));

    assert!(
        snapshot(&old.main) == before_main,
        "the pgBackRest repository changed"
    );
    assert!(
        snapshot(&old.enc) == before_enc,
        "the encrypted repository changed"
    );
    copied_stanza_needs_no_repository(&repo, &c, &old, &before_enc, &list, &last);

    // Acceptance 3: a damaged file of the full backup.
    let full = imported
        .iter()
        .find(|b| {
            b["tag"].as_str().unwrap().ends_with('F') && !b["tag"].as_str().unwrap().contains('_')
        })
        .map(|b| (b["id"].as_str().unwrap(), b["tag"].as_str().unwrap()))
        .unwrap();
    let label = imported
        .iter()
        .map(|b| b["tag"].as_str().unwrap())
        .find(|t| !t.contains('_') && old.main.join(format!("backup/main/{t}")).exists())
        .unwrap();
    let bdir = old.main.join(format!("backup/main/{label}"));
    let victim = files_under(&bdir.join("pg_data/base"))
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "lz4"))
        .max_by_key(|f| std::fs::metadata(f).unwrap().len())
        .unwrap();
    let rel = victim
        .strip_prefix(bdir.join("pg_data"))
        .unwrap()
        .with_extension("");
    let rel = path_str(&rel).to_string();
    let manifest = std::fs::read_to_string(bdir.join("backup.manifest")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.starts_with(&format!("pg_data/{rel}=")))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(line.split_once('=').unwrap().1).unwrap();
    let sha1 = v["checksum"].as_str().unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&victim, &bytes).unwrap();
    let err = recman_err(g(&["validate", "backup", full.0]));
    assert!(err.contains(&rel) && err.contains(sha1), "{err}");
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("damaged");
    let err = recman_err([
        "--repo",
        path_str(&repo),
        "restore",
        "database",
        "--to",
        path_str(&to),
        "--from-tag",
        full.1,
    ]);
    assert!(err.contains(&rel), "{err}");
    assert!(
        !to.join("PG_VERSION").exists() && !to.join("backup_label").exists(),
        "a failed restore left a directory that could be started"
    );
}
