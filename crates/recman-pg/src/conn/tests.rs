use super::*;

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| {
        vars.iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    }
}

#[test]
fn explicit_settings_win_and_password_is_hidden() {
    let env = env_of(&[("PGPORT", "7000"), ("PGUSER", "env")]);
    let t = resolve_with(
        Some("host=/tmp/x port=6000 user=bob dbname=d password=s3cret"),
        &env,
    )
    .unwrap();
    assert_eq!(t.display, "host=/tmp/x port=6000 user=bob dbname=d");
    assert!(!format!("{t:?}").contains("s3cret"));
    assert_eq!(t.config.get_application_name(), Some("recman"));
}

#[test]
fn environment_fills_gaps() {
    let env = env_of(&[
        ("PGHOST", "/tmp/e"),
        ("PGPORT", "7000"),
        ("PGUSER", "eu"),
        ("PGDATABASE", "ed"),
        ("PGAPPNAME", "nightly"),
        ("PGCONNECT_TIMEOUT", "1"),
    ]);
    let t = resolve_with(Some("dbname=mine"), &env).unwrap();
    assert_eq!(t.display, "host=/tmp/e port=7000 user=eu dbname=mine");
    assert_eq!(t.config.get_application_name(), Some("nightly"));
    // libpq's rule: one second is too short to mean anything, so it counts as two.
    assert_eq!(
        t.config.get_connect_timeout(),
        Some(&std::time::Duration::from_secs(2))
    );
    let t = resolve_with(None, &env_of(&[("PGCONNECT_TIMEOUT", "0")])).unwrap();
    assert_eq!(t.config.get_connect_timeout(), None);
    let e = resolve_with(Some("host=h"), &env_of(&[("PGPORT", "99999")])).unwrap_err();
    assert!(e.to_string().contains("PGPORT"), "{e}");
    let e = resolve_with(None, &env_of(&[("PGCONNECT_TIMEOUT", "soon")])).unwrap_err();
    assert!(e.to_string().contains("PGCONNECT_TIMEOUT"), "{e}");
}

#[test]
fn sslmode_is_honoured_as_libpq_does() {
    use crate::tls::Verify;
    use postgres::config::SslMode as M;
    for (conninfo, vars, ssl, verify, origin) in [
        (
            "host=h sslmode=require",
            vec![],
            M::Require,
            Verify::Nothing,
            "the connection string",
        ),
        (
            "postgresql://h/db?sslmode=verify-full",
            vec![],
            M::Require,
            Verify::ChainAndName,
            "the connection string",
        ),
        (
            "postgresql://h/db?ssl=true",
            vec![],
            M::Require,
            Verify::Nothing,
            "the connection string",
        ),
        (
            "host=h",
            vec![("PGSSLMODE", "require")],
            M::Require,
            Verify::Nothing,
            "PGSSLMODE",
        ),
        (
            "host=h",
            vec![("PGSSLMODE", "require"), ("PGSSLROOTCERT", "/ca.pem")],
            M::Require,
            Verify::Chain,
            "PGSSLMODE",
        ),
        (
            "host=h",
            vec![("PGSSLMODE", "verify-ca")],
            M::Require,
            Verify::Chain,
            "PGSSLMODE",
        ),
        (
            "host=h",
            vec![("PGSSLROOTCERT", "system")],
            M::Require,
            Verify::ChainAndName,
            "PGSSLROOTCERT",
        ),
        (
            "host=h",
            vec![("PGREQUIRESSL", "1")],
            M::Require,
            Verify::Nothing,
            "PGREQUIRESSL",
        ),
        ("host=h", vec![], M::Prefer, Verify::Nothing, "the default"),
        (
            "host=h",
            vec![("PGSSLMODE", "allow")],
            M::Disable,
            Verify::Nothing,
            "PGSSLMODE",
        ),
        // The connection string's own sslmode wins over the environment, as in libpq.
        (
            "host=h sslmode=disable",
            vec![("PGSSLMODE", "verify-full")],
            M::Disable,
            Verify::Nothing,
            "the connection string",
        ),
        // A Unix socket is not TCP: sslmode does not apply, as in libpq.
        (
            "host=/tmp",
            vec![("PGSSLMODE", "verify-full")],
            M::Disable,
            Verify::ChainAndName,
            "PGSSLMODE",
        ),
    ] {
        let t = resolve_with(Some(conninfo), &env_of(&vars)).unwrap();
        assert_eq!(t.config.get_ssl_mode(), ssl, "{conninfo} {vars:?}");
        assert_eq!(t.tls.verify, verify, "{conninfo} {vars:?}");
        assert!(t.tls.described.contains(origin), "{}", t.tls.described);
    }
    let t = resolve_with(
        Some("host=h sslmode=verify-ca sslrootcert=/x/ca.pem sslcert=/x/c.pem sslkey=/x/k.pem"),
        &env_of(&[]),
    )
    .unwrap();
    assert!(t.tls.described.contains("/x/ca.pem"), "{}", t.tls.described);
    assert_eq!(t.tls.client, Some(("/x/c.pem".into(), "/x/k.pem".into())));
    // A verifying mode without any root certificate fails when connecting, naming the file.
    let t = resolve_with(Some("host=h sslmode=verify-full"), &env_of(&[])).unwrap();
    if t.tls.roots.is_none() {
        let e = t.tls.client_config(&t.display).unwrap_err().to_string();
        assert!(e.contains("root.crt") && e.contains("hint:"), "{e}");
    }
    let e = resolve_with(Some("host=h"), &env_of(&[("PGGSSENCMODE", "require")])).unwrap_err();
    assert!(
        matches!(e, PgError::EncryptionUnavailable { .. })
            && e.to_string().contains("PGGSSENCMODE"),
        "{e}"
    );
    let e = resolve_with(Some("host=h sslmode=sometimes"), &env_of(&[])).unwrap_err();
    assert!(e.to_string().contains("verify-full"), "{e}");
}

#[test]
fn bad_conninfo_is_redacted() {
    for text in [
        "host=x password=s3cret bogus",
        "host=x password = 's3cret",
        "host=x password='s3 cret' nope=1",
        "postgresql://u:s3cret@h/db?nope=1",
        "host=x port=notaport password=s3cret",
    ] {
        let e = resolve_with(Some(text), &env_of(&[])).err().unwrap();
        let msg = e.to_string();
        assert!(!msg.contains("s3cret") && !msg.contains("s3 cret"), "{msg}");
        assert!(msg.contains("hint"), "{msg}");
    }
}

#[test]
fn service_then_environment() {
    let dir = std::env::temp_dir().join(format!("recman-conn-svc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("svc.conf"),
        "[nightly]\nhost=/tmp/s\nport=6500\ndbname=sdb\n",
    )
    .unwrap();
    let file = dir.join("svc.conf").display().to_string();
    let env = env_of(&[
        ("PGSERVICEFILE", &file),
        ("PGSERVICE", "nightly"),
        ("PGPORT", "7000"),
        ("PGUSER", "eu"),
    ]);
    let t = resolve_with(Some("dbname=explicit"), &env).unwrap();
    assert_eq!(t.display, "host=/tmp/s port=6500 user=eu dbname=explicit");
    let e = resolve_with(Some("service=missing"), &env).unwrap_err();
    assert!(matches!(e, PgError::Service { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn password_file_supplies_the_password() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("recman-conn-pgpass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("pgpass");
    std::fs::write(&f, "127.0.0.1:6543:*:app:from-file\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let path = f.display().to_string();
    let env = env_of(&[("PGPASSFILE", &path)]);
    let t = resolve_with(Some("host=127.0.0.1 port=6543 user=app"), &env).unwrap();
    assert_eq!(t.config.get_password(), Some(&b"from-file"[..]));
    assert_eq!(t.password_file.as_deref(), Some(f.as_path()));
    // An explicit password wins; another port matches no line.
    let t = resolve_with(Some("host=127.0.0.1 port=6543 user=app password=x"), &env).unwrap();
    assert_eq!(t.config.get_password(), Some(&b"x"[..]));
    let t = resolve_with(Some("host=127.0.0.1 port=6544 user=app"), &env).unwrap();
    assert_eq!(t.config.get_password(), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
