//! Issue 22, acceptance 7 and "connections behave like libpq": against a real PostgreSQL 15
//! listening on TCP 127.0.0.1 without TLS, PGSSLMODE=require (or sslmode=verify-full) refuses
//! to connect instead of falling back to plaintext; the password file (mode 0600) and a
//! service file are honoured; no password reaches the error text.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;

const PASSWORD: &str = "s3cr:et\\pw";

/// A cluster on 127.0.0.1 (ssl off, every connection logged) where role `app` must give its
/// password (scram-sha-256) over TCP.
fn tcp_cluster() -> Cluster {
    let c = Cluster::init_with(ClusterOpts {
        start: false,
        extra_conf: vec![
            "ssl = off".into(),
            "log_connections = on".into(),
            "password_encryption = 'scram-sha-256'".into(),
        ],
        ..ClusterOpts::default()
    });
    // Before initdb's trust lines: the first matching line decides.
    let hba = c.pgdata.join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("host all app 127.0.0.1/32 scram-sha-256\n{old}"),
    )
    .unwrap();
    // The harness starts servers on the socket only; this one listens on TCP as well.
    let opts = format!(
        "-p {} -c unix_socket_directories='{}' -c listen_addresses='127.0.0.1'",
        c.port,
        c.sockdir.display()
    );
    run_as_cluster_user_ok(
        std::process::Command::new(pg_bin("pg_ctl"))
            .arg("-D")
            .arg(&c.pgdata)
            .arg("-l")
            .arg(&c.log)
            .args(["-w", "-o", &opts, "start"]),
    );
    c.psql(&format!(
        "create role app login superuser password {}",
        sql_literal(PASSWORD)
    ));
    c
}

/// A home directory for the cluster user holding `files` (name, text, mode).
fn home_with(files: &[(&str, String, u32)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let (t, dir) = new_scratch_dir();
    for (name, text, mode) in files {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
        chown_to_cluster_user(&p);
    }
    (t, dir)
}

fn run(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = recman_env(args, env);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn connections_logged(c: &Cluster) -> usize {
    std::fs::read_to_string(&c.log)
        .unwrap_or_default()
        .matches("connection received: host=127.0.0.1")
        .count()
}

fn pgpass_line(c: &Cluster) -> String {
    // libpq's escapes: `\:` and `\\` inside a field.
    let escaped = PASSWORD.replace('\\', "\\\\").replace(':', "\\:");
    format!("# test\n127.0.0.1:{}:*:app:{escaped}\n", c.port)
}

#[test]
fn sslmode_require_refuses_a_server_without_tls() {
    let c = tcp_cluster();
    let tcp = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres",
        c.port
    );
    // Control: plaintext over TCP works (trust for postgres), so a refusal is recman's own.
    let (ok, err) = run(&["--target", &tcp, "report", "schema"], &[]);
    assert!(ok, "plaintext control failed: {err}");

    for (target, env, named) in [
        (tcp.clone(), vec![("PGSSLMODE", "require")], "PGSSLMODE"),
        (tcp.clone(), vec![("PGSSLMODE", "verify-full")], "PGSSLMODE"),
        (
            format!("{tcp} sslmode=verify-ca"),
            vec![],
            "sslmode=verify-ca",
        ),
        (
            format!(
                "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=require",
                c.port
            ),
            vec![],
            "sslmode=require",
        ),
    ] {
        let before = connections_logged(&c);
        let (ok, err) = run(&["--target", &target, "report", "schema"], &env);
        assert!(!ok, "{target} {env:?}: connected");
        assert!(
            err.contains("refusing to connect") && err.contains(named) && err.contains("hint:"),
            "{target} {env:?}: {err}"
        );
        // Not even a plaintext connection was attempted.
        assert_eq!(
            connections_logged(&c),
            before,
            "{target} {env:?}: a connection was made"
        );
    }
    // The shared catalog's connection follows the same rules.
    let (_r, rdir) = new_scratch_dir();
    let repo = rdir.join("repo");
    let url = format!("postgresql://postgres@127.0.0.1:{}/postgres", c.port);
    let args = [
        "--repo",
        path_str(&repo),
        "--catalog",
        url.as_str(),
        "create",
        "catalog",
    ];
    let before = connections_logged(&c);
    let (ok, err) = run(&args, &[("PGSSLMODE", "require")]);
    assert!(
        !ok && err.contains("refusing to connect") && err.contains("shared catalog"),
        "{err}"
    );
    assert_eq!(connections_logged(&c), before, "the catalog connected");
    let repo2 = rdir.join("repo2");
    let mut args2 = args;
    args2[1] = path_str(&repo2);
    let (ok, err) = run(&args2, &[]);
    assert!(ok, "{err}");

    // Through the Unix socket sslmode does not apply, as in libpq: local traffic never
    // leaves the host.
    let (ok, err) = run(
        &["--target", &c.conninfo(), "report", "schema"],
        &[("PGSSLMODE", "require")],
    );
    assert!(ok, "socket with PGSSLMODE=require: {err}");

    // prefer (libpq's default) connects, unencrypted.
    let (ok, err) = run(
        &["--target", &tcp, "report", "schema"],
        &[("PGSSLMODE", "prefer")],
    );
    assert!(ok, "{err}");
}

#[test]
fn password_file_and_service_file_are_honoured() {
    let c = tcp_cluster();
    let app = format!("host=127.0.0.1 port={} user=app dbname=postgres", c.port);

    // Without a password the server refuses app.
    let (home, dir) = home_with(&[]);
    let h = path_str(&dir);
    let (ok, err) = run(&["--target", &app, "report", "schema"], &[("HOME", h)]);
    assert!(!ok && err.contains("password"), "{err}");
    drop(home);

    // ~/.pgpass with mode 0600 supplies it.
    let (_home, dir) = home_with(&[(".pgpass", pgpass_line(&c), 0o600)]);
    let h = path_str(&dir);
    let (ok, err) = run(&["--target", &app, "report", "schema"], &[("HOME", h)]);
    assert!(ok, "~/.pgpass not used: {err}");

    // Readable by others: ignored with libpq's warning, so the login fails.
    std::fs::set_permissions(dir.join(".pgpass"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let (ok, err) = run(&["--target", &app, "report", "schema"], &[("HOME", h)]);
    assert!(!ok && err.contains("group or world access"), "{err}");

    // PGPASSFILE names another file; a wrong password there is named in the error.
    let (_other, odir) = home_with(&[
        ("right", pgpass_line(&c), 0o600),
        ("wrong", format!("127.0.0.1:{}:*:app:nope\n", c.port), 0o600),
    ]);
    let right = odir.join("right");
    let wrong = odir.join("wrong");
    let (ok, err) = run(
        &["--target", &app, "report", "schema"],
        &[("HOME", h), ("PGPASSFILE", path_str(&right))],
    );
    assert!(ok, "PGPASSFILE not used: {err}");
    let (ok, err) = run(
        &["--target", &app, "report", "schema"],
        &[("HOME", h), ("PGPASSFILE", path_str(&wrong))],
    );
    assert!(!ok && err.contains(path_str(&wrong)), "{err}");
    assert!(!err.contains("nope"), "password in the error: {err}");

    // A service file gives host, port, user and database; the password comes from PGPASSFILE.
    let svc = format!(
        "# services\n[other]\nport=1\n[nightly]\nhost=127.0.0.1\nport={}\nuser=app\ndbname=postgres\n",
        c.port
    );
    let (_s, sdir) = home_with(&[("services.conf", svc, 0o644)]);
    let svcfile = sdir.join("services.conf");
    for (args, extra) in [
        (vec!["report", "schema"], vec![("PGSERVICE", "nightly")]),
        (
            vec!["--target", "service=nightly", "report", "schema"],
            vec![],
        ),
    ] {
        let mut env = vec![
            ("HOME", h),
            ("PGPASSFILE", path_str(&right)),
            ("PGSERVICEFILE", path_str(&svcfile)),
        ];
        env.extend(extra);
        let (ok, err) = run(&args, &env);
        assert!(ok, "{args:?} {env:?}: {err}");
    }
    // PGSYSCONFDIR/pg_service.conf is the fallback.
    std::fs::copy(&svcfile, sdir.join("pg_service.conf")).unwrap();
    chown_to_cluster_user(&sdir.join("pg_service.conf"));
    let (ok, err) = run(
        &["--target", "service=nightly", "report", "schema"],
        &[
            ("HOME", h),
            ("PGPASSFILE", path_str(&right)),
            ("PGSYSCONFDIR", path_str(&sdir)),
        ],
    );
    assert!(ok, "PGSYSCONFDIR: {err}");
    let (ok, err) = run(
        &["--target", "service=missing", "report", "schema"],
        &[("HOME", h), ("PGSERVICEFILE", path_str(&svcfile))],
    );
    assert!(
        !ok && err.contains("\"missing\"") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn passwords_never_reach_error_text_and_command_line_passwords_draw_a_warning() {
    let c = tcp_cluster();
    let (_home, dir) = home_with(&[]);
    let h = path_str(&dir);
    for target in [
        format!(
            "host=127.0.0.1 port={} user=app dbname=postgres password = 'wrong pw'",
            c.port
        ),
        format!("host=127.0.0.1 port={} user=app password=wrongpw", c.port),
        format!("postgresql://app:wrongpw@127.0.0.1:{}/postgres", c.port),
        format!(
            "host=127.0.0.1 port={} user=app password='wrong pw' bogus",
            c.port
        ),
        "host=127.0.0.1 port=x password='wrong pw".to_string(),
    ] {
        let (ok, err) = run(&["--target", &target, "report", "schema"], &[("HOME", h)]);
        assert!(!ok, "{target}: connected with a wrong password");
        assert!(
            !err.contains("wrong pw") && !err.contains("wrongpw"),
            "{target}: password in the output: {err}"
        );
        assert!(err.contains("error"), "{target}: {err}");
    }
    // The right password on the command line works, with a one-line warning.
    let target = format!(
        "host=127.0.0.1 port={} user=app dbname=postgres password={}",
        c.port,
        quote(PASSWORD)
    );
    let (ok, err) = run(&["--target", &target, "report", "schema"], &[("HOME", h)]);
    assert!(ok, "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains(".pgpass") && warnings[0].contains("PGPASSWORD"),
        "{err}"
    );
    assert!(!err.contains(PASSWORD), "{err}");
}

fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
}
