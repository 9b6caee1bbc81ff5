//! Issue 22, acceptance 7 and "connections behave like libpq": against a real PostgreSQL 15
//! listening on TCP 127.0.0.1 without TLS, PGSSLMODE=require (or sslmode=verify-full) refuses
//! to connect instead of falling back to plaintext; the password file (mode 0600) and a
//! service file are honoured; no password reaches the error text. Issue 16, acceptance 5: with
//! TLS switched on (a test CA), sslmode=verify-full works, a wrong CA or a wrong host name is
//! refused with a hint, and a client certificate logs in through pg_hba's `cert` method.

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

fn sessions_authorized(c: &Cluster) -> usize {
    std::fs::read_to_string(&c.log)
        .unwrap_or_default()
        .matches("connection authorized")
        .count()
}

#[test]
fn sslmode_is_honoured_without_and_with_tls() {
    let c = tcp_cluster();
    let tcp = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres",
        c.port
    );
    // Control: plaintext over TCP works (trust for postgres), so a refusal is recman's own.
    let (ok, err) = run(&["--target", &tcp, "report", "schema"], &[]);
    assert!(ok, "plaintext control failed: {err}");

    let (_p, pdir) = new_scratch_dir();
    let pki = TestPki::new(&pdir, "tlsuser");
    let ca = path_str(&pki.ca);

    // The server has no TLS: every mode that asks for it fails, and no session is opened in
    // plaintext instead.
    for (target, env) in [
        (tcp.clone(), vec![("PGSSLMODE", "require")]),
        (
            tcp.clone(),
            vec![("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca)],
        ),
        (format!("{tcp} sslmode=verify-ca sslrootcert={ca}"), vec![]),
        (
            format!(
                "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=require",
                c.port
            ),
            vec![],
        ),
    ] {
        let before = sessions_authorized(&c);
        let (ok, err) = run(&["--target", &target, "report", "schema"], &env);
        assert!(!ok, "{target} {env:?}: connected");
        assert!(
            err.contains("does not support TLS") && err.contains("hint:"),
            "{target} {env:?}: {err}"
        );
        assert_eq!(
            sessions_authorized(&c),
            before,
            "{target} {env:?}: a plaintext session was opened"
        );
    }
    // GSSAPI encryption recman does not have: refused before any connection.
    let before = connections_logged(&c);
    let (ok, err) = run(
        &["--target", &tcp, "report", "schema"],
        &[("PGGSSENCMODE", "require")],
    );
    assert!(
        !ok && err.contains("refusing to connect") && err.contains("PGGSSENCMODE"),
        "{err}"
    );
    assert_eq!(connections_logged(&c), before, "a connection was made");
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
    let before = sessions_authorized(&c);
    let (ok, err) = run(&args, &[("PGSSLMODE", "require")]);
    assert!(
        !ok && err.contains("does not support TLS") && err.contains("shared catalog"),
        "{err}"
    );
    assert_eq!(sessions_authorized(&c), before, "the catalog connected");

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

    // Now TLS on (ssl is reloadable): a server certificate for localhost/127.0.0.1 from a
    // test CA, and role tlsuser logging in by client certificate only.
    c.set_tls(&pki);
    c.psql("create role tlsuser login superuser");
    let hba = c.pgdata.join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("hostssl all tlsuser 127.0.0.1/32 cert\n{old}"),
    )
    .unwrap();
    c.psql("select pg_reload_conf()");

    let verify_full = format!("{tcp} sslmode=verify-full sslrootcert={ca}");
    let tls_sessions = |c: &Cluster| {
        std::fs::read_to_string(&c.log)
            .unwrap_or_default()
            .matches("SSL enabled")
            .count()
    };
    let before = tls_sessions(&c);
    let (ok, err) = run(&["--target", &verify_full, "report", "schema"], &[]);
    assert!(ok, "verify-full with the test CA: {err}");
    assert!(tls_sessions(&c) > before, "the session was not encrypted");
    // The same from the environment, and by host name.
    let by_name = format!(
        "host=localhost port={} user=postgres dbname=postgres",
        c.port
    );
    let (ok, err) = run(
        &["--target", &by_name, "report", "schema"],
        &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca)],
    );
    assert!(ok, "verify-full by PGSSLMODE/PGSSLROOTCERT: {err}");

    // A CA that did not sign the server's certificate: refused, naming it, with a hint.
    let before = sessions_authorized(&c);
    let wrong = format!(
        "{tcp} sslmode=verify-full sslrootcert={}",
        path_str(&pki.other_ca)
    );
    let (ok, err) = run(&["--target", &wrong, "report", "schema"], &[]);
    assert!(!ok, "a wrong CA was accepted");
    assert!(
        err.contains("TLS certificate")
            && err.contains("unknown issuer")
            && err.contains("other-ca.crt")
            && err.contains("hint: sslrootcert"),
        "{err}"
    );
    // A certificate that does not name the host: verify-full refuses, verify-ca accepts.
    let other_name = format!(
        "host=db.example hostaddr=127.0.0.1 port={} user=postgres dbname=postgres sslrootcert={ca}",
        c.port
    );
    let (ok, err) = run(
        &[
            "--target",
            &format!("{other_name} sslmode=verify-full"),
            "report",
            "schema",
        ],
        &[],
    );
    assert!(
        !ok && err.contains("does not name host") && err.contains("db.example"),
        "{err}"
    );
    assert_eq!(
        sessions_authorized(&c),
        before,
        "a refused server got a session"
    );
    let (ok, err) = run(
        &[
            "--target",
            &format!("{other_name} sslmode=verify-ca"),
            "report",
            "schema",
        ],
        &[],
    );
    assert!(ok, "verify-ca ignores the name: {err}");
    // A server certificate from the right CA whose validity has ended: refused, saying so,
    // and no session is opened.
    let set_server_cert = |cert: &std::path::Path, key: &std::path::Path| {
        for (name, file) in [("ssl_cert_file", cert), ("ssl_key_file", key)] {
            c.psql(&format!(
                "alter system set {name} = {}",
                sql_literal(path_str(file))
            ));
        }
        c.psql("select pg_reload_conf()");
        // A new session is forked from the postmaster, so it shows the postmaster's setting
        // once the reload has reached it.
        for _ in 0..600 {
            if c.psql("show ssl_cert_file") == path_str(cert) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the server did not load {}", cert.display());
    };
    set_server_cert(&pki.expired_server_cert, &pki.expired_server_key);
    let before_expired = sessions_authorized(&c);
    let (ok, err) = run(&["--target", &verify_full, "report", "schema"], &[]);
    assert!(!ok, "an expired server certificate was accepted");
    assert!(
        err.contains("TLS certificate") && err.contains("it has expired"),
        "{err}"
    );
    assert_eq!(
        sessions_authorized(&c),
        before_expired,
        "a session was opened"
    );
    set_server_cert(&pki.server_cert, &pki.server_key);
    let (ok, err) = run(&["--target", &verify_full, "report", "schema"], &[]);
    assert!(ok, "the current certificate again: {err}");
    // A missing root certificate file is named.
    let (ok, err) = run(
        &[
            "--target",
            &format!("{tcp} sslmode=verify-full sslrootcert=/nonexistent/ca.pem"),
            "report",
            "schema",
        ],
        &[],
    );
    assert!(
        !ok && err.contains("/nonexistent/ca.pem") && err.contains("hint:"),
        "{err}"
    );
    // require encrypts without checking the certificate, as libpq does.
    let (ok, err) = run(
        &["--target", &tcp, "report", "schema"],
        &[("PGSSLMODE", "require")],
    );
    assert!(ok, "require against a TLS server: {err}");

    // Client certificates: tlsuser gets in with one, not without.
    let tlsuser = format!(
        "host=localhost port={} user=tlsuser dbname=postgres sslmode=verify-full sslrootcert={ca}",
        c.port
    );
    let (ok, _) = run(&["--target", &tlsuser, "report", "schema"], &[]);
    assert!(!ok, "tlsuser logged in without a certificate");
    let with_cert = format!(
        "{tlsuser} sslcert={} sslkey={}",
        path_str(&pki.client_cert),
        path_str(&pki.client_key)
    );
    let (ok, err) = run(&["--target", &with_cert, "report", "schema"], &[]);
    assert!(ok, "client certificate: {err}");
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
    // No password to send is the user's to fix, and says where a password goes: the driver's
    // refusal is typed where it happens, with no SQLSTATE to read.
    assert!(
        err.contains("hint: give the password in ~/.pgpass"),
        "{err}"
    );
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
    // The server's SQLSTATE (28P01) gives the hint, not the words of the message.
    assert!(
        err.contains("hint: give the password in ~/.pgpass"),
        "{err}"
    );
    // A database that is not there (3D000) is named as such.
    let (ok, err) = run(
        &[
            "--target",
            &app.replace("dbname=postgres", "dbname=nosuchdb"),
            "report",
            "schema",
        ],
        &[("HOME", h), ("PGPASSFILE", path_str(&right))],
    );
    assert!(
        !ok && err.contains("does not exist on that server"),
        "{err}"
    );

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
