//! Issue 16, acceptance 1 on a real S3 server (s3s-fs): an encrypted repository in a bucket,
//! the key from `key_file` in the config file. No object in the bucket holds the marker or
//! the passphrase; restore and recovery through archive-get reach the end of WAL. Acceptance
//! 6: every command, with a password in the conninfo, PGPASSWORD, S3 keys and a passphrase,
//! leaves none of them in any output, log, catalog row or object.

mod common;

use common::*;
use recman_media::testkit::s3_server_or_skip;
use std::time::Duration;

const PASS: &str = "h16 s3 passphrase in a key file";
const MARKER: &str = "MARKER-s3-51c0ffee-secret-row";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn encrypted_s3_repository_hides_data_and_restores() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let (_t, dir) = new_scratch_dir();
    let key = dir.join("repo.key");
    std::fs::write(&key, format!("{PASS}\n")).unwrap();
    chown_to_cluster_user(&key);
    let config = dir.join("recman.toml");
    std::fs::write(
        &config,
        format!(
            "key_file = \"{}\"\n[s3]\nendpoint = \"{}\"\nregion = \"us-east-1\"\naccess-key-id = \"{}\"\nsecret-access-key = \"{}\"\n",
            key.display(),
            server.endpoint(),
            server.access_key(),
            server.secret_key()
        ),
    )
    .unwrap();
    chown_to_cluster_user(&config);
    let cache = dir.join("cache");
    let url = format!("s3://{}/enc", server.bucket());
    let base = |c: &Cluster| -> Vec<String> {
        vec![
            "--config".into(),
            path_str(&config).into(),
            "--repo".into(),
            url.clone(),
            "--repo-cache".into(),
            path_str(&cache).into(),
            "--pgdata".into(),
            path_str(&c.pgdata).into(),
            "--target".into(),
            c.conninfo(),
        ]
    };
    recman_ok([
        "--config",
        path_str(&config),
        "--repo",
        &url,
        "--repo-cache",
        path_str(&cache),
        "create",
        "catalog",
        "--encrypt",
    ]);
    let archive = object_store_archive_command(&url, &config, &cache);
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!("archive_command = {archive}"),
        ],
        ..Default::default()
    });
    let run = |args: &[&str]| {
        let mut v = base(&c);
        v.extend(args.iter().map(|s| s.to_string()));
        recman_ok(v)
    };
    run(&["register", "database", "--name", "main"]);
    c.psql(&format!(
        "create table secret(id int, v text); insert into secret select g, '{MARKER}' from generate_series(1, 200) g"
    ));
    run(&["backup", "database", "--compress", "none"]);
    c.psql(&format!(
        "insert into secret select g, '{MARKER}-after' from generate_series(1, 50) g"
    ));
    c.switch_wal_and_wait_archived();

    let bucket = server.data_dir().join(server.bucket()).join("enc");
    let objects = files_under(&bucket);
    assert!(
        objects
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".rmp")),
        "{objects:?}"
    );
    assert!(
        objects
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".rmw")),
        "{objects:?}"
    );
    for p in objects.iter().chain(files_under(&cache).iter()) {
        let b = std::fs::read(p).unwrap();
        assert!(
            !contains(&b, MARKER.as_bytes()),
            "{} holds the marker",
            p.display()
        );
        assert!(
            !contains(&b, PASS.as_bytes()),
            "{} holds the passphrase",
            p.display()
        );
    }

    let to = dir.join("restored");
    run(&["restore", "database", "--to", path_str(&to)]);
    let conf = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(
        conf.contains("archive-get") && !conf.contains(PASS),
        "{conf}"
    );
    c.stop();
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    let rows = r.psql(&format!(
        "select count(*) filter (where v = '{MARKER}') || '/' || count(*) filter (where v = '{MARKER}-after') from secret"
    ));
    assert_eq!(rows, "200/50", "recovery did not reach the end of WAL");
}

const CONN_PW: &str = "connpw-7d1a-SECRET";
const ENV_PW: &str = "envpw-93fe-SECRET";
const SECRET_PASS: &str = "passphrase-5b2c-SECRET";
const WRONG_PASS: &str = "wrongpass-11aa-SECRET";
const WRONG_PW: &str = "wrongpw-22bb-SECRET";
const WRONG_S3: &str = "wrongs3-33cc-SECRET";

fn start_with_env(c: &Cluster, env: &[(&str, &str)]) {
    let opts = format!(
        "-p {} -c unix_socket_directories='{}' -c listen_addresses=''",
        c.port,
        c.sockdir.display()
    );
    let mut cmd = std::process::Command::new(pg_bin("pg_ctl"));
    cmd.arg("-D").arg(&c.pgdata);
    as_cluster_user(&mut cmd);
    cmd.envs(env.iter().copied());
    cmd.arg("-l")
        .arg(&c.log)
        .args(["-w", "-t", "120", "-o", &opts, "start"]);
    let out = cmd.output().expect("pg_ctl runs");
    assert!(out.status.success(), "pg_ctl start: {}", c.log_tail());
}

/// Every row of every table of a SQLite catalog, as text.
fn dump_sqlite(path: &std::path::Path) -> String {
    let out = std::process::Command::new("sqlite3")
        .arg("-readonly")
        .arg(path)
        .arg(".dump")
        .output()
        .expect("missing prerequisite 'sqlite3' (the command, to dump the catalog)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn no_secret_reaches_output_logs_catalog_or_objects() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let (_t, dir) = new_scratch_dir();
    let cache = dir.join("cache");
    let url = format!("s3://{}/sec", server.bucket());
    let s3_env = [
        ("AWS_ACCESS_KEY_ID", server.access_key()),
        ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
        ("RECMAN_S3_ENDPOINT", server.endpoint()),
        ("RECMAN_PASSPHRASE", SECRET_PASS),
    ];
    let archive = format!(
        "'{} --repo {url} --repo-cache {} archive-push %p'",
        recman_bin().display(),
        cache.display()
    );
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!("archive_command = {archive}"),
        ],
        start: false,
        ..Default::default()
    });
    let hba = c.pgdata.join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("local all app scram-sha-256\nlocal all app2 scram-sha-256\n{old}"),
    )
    .unwrap();
    // The server's archive-push gets the S3 keys and the passphrase from its environment.
    start_with_env(&c, &s3_env);
    for (role, pw) in [("app", CONN_PW), ("app2", ENV_PW)] {
        c.psql(&format!(
            "create role {role} login superuser password {}",
            sql_literal(pw)
        ));
    }
    c.psql(&format!(
        "create table secret(id int, v text); insert into secret select g, '{MARKER}' from generate_series(1, 50) g"
    ));
    let sock = format!(
        "host={} port={} dbname=postgres",
        c.sockdir.display(),
        c.port
    );
    let with_pw = format!("{sock} user=app password={CONN_PW}");
    let by_env = format!("{sock} user=app2");

    // Every output, kept with the command that made it.
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut run = |target: Option<&str>, args: &[&str], extra: &[(&str, &str)], ok: bool| {
        let mut v: Vec<String> = vec![
            "--repo".into(),
            url.clone(),
            "--repo-cache".into(),
            path_str(&cache).into(),
            "--pgdata".into(),
            path_str(&c.pgdata).into(),
        ];
        if let Some(t) = target {
            v.extend(["--target".to_string(), t.to_string()]);
        }
        v.extend(args.iter().map(|s| s.to_string()));
        let mut env: Vec<(&str, &str)> = s3_env.to_vec();
        if target == Some(by_env.as_str()) {
            env.push(("PGPASSWORD", ENV_PW));
        }
        // Later entries win: the error cases override a variable.
        env.extend_from_slice(extra);
        let out = recman_env(&v, &env);
        assert_eq!(
            out.status.success(),
            ok,
            "recman {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let label = format!("recman {args:?}");
        outputs.push((format!("{label} stdout"), out.stdout.clone()));
        outputs.push((format!("{label} stderr"), out.stderr.clone()));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(None, &["create", "catalog", "--encrypt"], &[], true);
    run(
        Some(&with_pw),
        &["register", "database", "--name", "main"],
        &[],
        true,
    );
    run(
        Some(&with_pw),
        &["backup", "database", "--compress", "none"],
        &[],
        true,
    );
    c.switch_wal_and_wait_archived();
    for args in [
        &["list", "backup"][..],
        &["list", "archivelog", "all"],
        &["report", "schema"],
        &["report", "need-backup"],
        &["validate", "backup"],
        &["crosscheck", "backup"],
        &["show", "all"],
        &["key", "show"],
    ] {
        run(Some(&by_env), args, &[], true);
    }
    // A copy to a second tier (virtual tape).
    let lib = dir.join("lib");
    let spec = format!("vtape:{},drives=1,capacity=64M", path_str(&lib));
    run(
        Some(&with_pw),
        &["configure", "device-type", "sbt", "parms", &spec],
        &[],
        true,
    );
    run(
        Some(&with_pw),
        &["backup", "backupset", "all", "--device-type", "sbt"],
        &[],
        true,
    );
    // archive-get of a segment the server archived.
    let done = std::fs::read_dir(c.pgdata.join("pg_wal/archive_status"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find_map(|n| n.strip_suffix(".done").map(str::to_string))
        .expect("an archived segment");
    let got = dir.join("got");
    run(
        None,
        &["archive-get", &done, path_str(&got), "--prefetch", "0"],
        &[],
        true,
    );
    assert!(got.is_file());
    let to = dir.join("restored");
    run(
        Some(&with_pw),
        &["restore", "database", "--to", path_str(&to)],
        &[],
        true,
    );
    run(
        Some(&by_env),
        &["delete", "obsolete", "--redundancy", "1", "--noprompt"],
        &[],
        true,
    );
    // Errors: a wrong passphrase, a wrong password, a conninfo that does not parse, a wrong
    // S3 secret. None may echo what it was given.
    run(
        Some(&by_env),
        &["list", "backup"],
        &[("RECMAN_PASSPHRASE", WRONG_PASS)],
        false,
    );
    let wrong_pw = format!("{sock} user=app password={WRONG_PW}");
    run(Some(&wrong_pw), &["report", "schema"], &[], false);
    let unparsable = format!("{sock} user=app password={WRONG_PW} 'unterminated");
    run(Some(&unparsable), &["report", "schema"], &[], false);
    run(
        Some(&by_env),
        &["validate", "backup"],
        &[
            ("AWS_SECRET_ACCESS_KEY", WRONG_S3),
            ("RECMAN_CACHE_BYPASS", "1"),
        ],
        false,
    );

    // Where secrets could land: outputs, the server log (archive-push's stderr goes there),
    // the catalog cache (its files and a dump of every row), the bucket, the tape library,
    // and the restored cluster (restore_command).
    let mut places: Vec<(String, Vec<u8>)> = outputs;
    places.push(("server log".into(), std::fs::read(&c.log).unwrap()));
    for f in files_under(&cache) {
        if f.extension().is_some_and(|e| e == "db") {
            places.push((
                format!("dump of {}", f.display()),
                dump_sqlite(&f).into_bytes(),
            ));
        }
    }
    let bucket = server.data_dir().join(server.bucket()).join("sec");
    let files: Vec<_> = [&cache, &bucket, &lib]
        .iter()
        .flat_map(|d| files_under(d))
        .chain(["postgresql.auto.conf", "postgresql.conf"].map(|n| to.join(n)))
        .collect();
    assert!(files.iter().any(|p| p.starts_with(&lib)), "nothing on tape");
    for f in files {
        places.push((f.display().to_string(), std::fs::read(&f).unwrap()));
    }
    let secrets = [
        CONN_PW,
        ENV_PW,
        SECRET_PASS,
        WRONG_PASS,
        WRONG_PW,
        WRONG_S3,
        server.secret_key(),
    ];
    let mut leaks = Vec::new();
    for (place, bytes) in &places {
        for s in secrets {
            if contains(bytes, s.as_bytes()) {
                leaks.push(format!("{s} in {place}"));
            }
        }
    }
    assert!(leaks.is_empty(), "secrets leaked:\n{}", leaks.join("\n"));
    assert!(
        places.len() > 40,
        "too few places looked at: {}",
        places.len()
    );
}
