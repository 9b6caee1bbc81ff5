//! Issue 43, the fleet page (acceptance 4): two clusters in one repository, one of them
//! registered as `<img src=x onerror=alert(1)>`, with failures made real (no backup; then
//! archive_command broken on the other). `recman server --page-listen` serves the page with
//! the fleet's mutual TLS and a read-only token; headless Chromium (Debian's package, driven
//! by Playwright) loads it with the client certificate and finds every database and every
//! open failure's kind in its text, the hostile name shown as text (no dialog, no <img>), and
//! no request outside the server; a context without a certificate is refused. curl checks
//! the HTTP side: the token, the CN allow-list, GET only, the headers. `report fleet --html`
//! writes the same page to a file.

mod common;
mod flows;

use common::*;
use flows::Setup;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const HOSTILE: &str = "<img src=x onerror=alert(1)>";
const READER_CN: &str = "fleet-reader";
const TOKEN: &str = "read-only-t0ken";

/// Starts the repository host's server with the page on `page_port` (given as a port alone:
/// the page binds 127.0.0.1) and waits until the page accepts connections.
fn start_server(repo: &Path, pki: &TestPki, token: &Path, page_port: u16, log: &Path) -> Server {
    let mut args = pki.server_args(repo);
    args.extend(
        [
            "server",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--page-allow",
            READER_CN,
            "--page-listen",
            &page_port.to_string(),
            "--page-token",
            path_str(token),
        ]
        .map(String::from),
    );
    Server::spawn(&args, page_port, log, &[])
}

/// The kinds of the open failures of the database `args` select (the checks run first).
fn open_kinds(args: Vec<String>) -> Vec<String> {
    let mut a = args;
    a.extend(["failure", "list", "--json"].map(String::from));
    let out = recman_ok(a);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
    v["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "OPEN")
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

/// curl against the page: (HTTP status, or None when the connection was refused; headers
/// and body as text).
fn curl<S: AsRef<std::ffi::OsStr>>(url: &str, extra: &[S]) -> (Option<u16>, String) {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "-k",
        "-i",
        "--max-time",
        "20",
        "-w",
        "\n%{http_code}",
    ])
    .args(extra)
    .arg(url);
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("missing prerequisite 'curl' (the command); hint: scripts/setup.sh installs it: {e}")
    });
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse::<u16>().ok());
    (code.filter(|c| *c != 0 && out.status.success()), text)
}

/// Runs check.mjs with Playwright and Chromium; its JSON.
fn browse(url: &str, pki: &TestPki) -> Value {
    let b = Browser::find();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fleet_page/check.mjs");
    let out = Command::new(&b.node)
        .arg(&script)
        .env("PAGE_URL", url)
        .env("CLIENT_CERT", &pki.client_cert)
        .env("CLIENT_KEY", &pki.client_key)
        .env("PAGE_TOKEN", TOKEN)
        .env("PLAYWRIGHT_DIR", &b.playwright)
        .env("CHROMIUM", &b.chromium)
        .stdin(Stdio::null())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "check.mjs failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Breaks archive_command and waits until the archiver has failed.
fn break_archiving(c: &Cluster) {
    c.set_archive_command("false");
    c.psql("create table t(x int); insert into t values (1)");
    c.psql("select pg_switch_wal()");
    let d = Deadline::after(Duration::from_secs(60));
    while c.psql("select failed_count from pg_stat_archiver") == "0" {
        d.check("archive_command = 'false' to fail");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_fleet_page_in_a_real_browser() {
    // Found first: a machine without the browser fails here, before any cluster starts.
    Browser::find();
    let setup = Setup::new();
    let main = &setup.cluster;
    setup.backup(&[]);
    break_archiving(main);

    // The second database, registered under the hostile name, has no backup (CRITICAL).
    let other = Cluster::init_with(ClusterOpts::archiving(&setup.repo));
    let other_args = |extra: &[&str]| {
        let mut v: Vec<String> = vec![
            "--repo".into(),
            path_str(&setup.repo).into(),
            "--pgdata".into(),
            path_str(&other.pgdata).into(),
            "--target".into(),
            other.conninfo(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    recman_ok(other_args(&["register", "database", "--name", HOSTILE]));

    let main_kinds = open_kinds(setup.args(&[]));
    let other_kinds = open_kinds(other_args(&[]));
    assert!(
        main_kinds.iter().any(|k| k == "archiving-failed"),
        "{main_kinds:?}"
    );
    assert!(
        other_kinds.iter().any(|k| k == "no-backup"),
        "{other_kinds:?}"
    );

    let (_pki_dir, pki_path) = new_scratch_dir();
    let pki = TestPki::new(&pki_path, READER_CN);
    let token = pki_path.join("page.token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    chown_to_cluster_user(&token);
    let port = free_port();
    let server = start_server(
        &setup.repo,
        &pki,
        &token,
        port,
        &pki_path.join("server.log"),
    );
    let url = format!("https://127.0.0.1:{port}/");

    let seen = browse(&url, &pki);
    let page = &seen["withCert"];
    assert_eq!(page["error"], Value::Null, "{seen:#}");
    assert_eq!(page["status"], 200, "{seen:#}");
    let text = page["text"].as_str().unwrap();
    for name in ["main", HOSTILE] {
        assert!(
            text.contains(name),
            "database {name} is on the page:\n{text}"
        );
    }
    for kind in main_kinds.iter().chain(&other_kinds) {
        assert!(
            text.contains(kind.as_str()),
            "failure {kind} is on the page:\n{text}"
        );
    }
    // The hostile name is text: nothing ran, no element came of it.
    assert_eq!(page["dialogs"], serde_json::json!([]), "{seen:#}");
    assert_eq!(page["imgs"], 0, "{seen:#}");
    assert_eq!(page["scripts"], 0, "{seen:#}");
    assert!(
        page["svgs"].as_u64().unwrap() >= 1,
        "the backup's plot: {seen:#}"
    );
    let requests = page["requests"].as_array().unwrap();
    assert!(!requests.is_empty(), "{seen:#}");
    for r in requests {
        let r = r.as_str().unwrap();
        assert!(
            r.starts_with(&format!("https://127.0.0.1:{port}/")),
            "the page made a request outside the server: {r}"
        );
    }
    assert!(
        page["csp"].as_str().unwrap().contains("default-src 'none'"),
        "{seen:#}"
    );

    // Without a client certificate the browser does not get the page.
    let refused = &seen["withoutCert"];
    eprintln!("a browser without a certificate: {}", refused["error"]);
    // Chromium names the refusal as the TLS alert reached it: ERR_BAD_SSL_CLIENT_AUTH_CERT, or
    // ERR_SOCKET_NOT_CONNECTED when the server's close came first (TLS 1.3 refuses a client
    // certificate after the client's side of the handshake is done). Either is a network
    // error, never a page.
    assert!(
        refused.get("text").is_none()
            && refused["error"]
                .as_str()
                .is_some_and(|e| e.contains("net::ERR_")),
        "a browser without a certificate was served, or failed otherwise: {refused:#}"
    );

    let cert = [
        "--cert",
        path_str(&pki.client_cert),
        "--key",
        path_str(&pki.client_key),
    ];
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let with = |extra: &[&str]| -> Vec<String> {
        cert.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let (code, out) = curl(&url, &["-H", &bearer]);
    assert_eq!(code, None, "no certificate, no page: {out}");
    let (code, out) = curl(&url, &with(&[]));
    assert_eq!(code, Some(401), "no token: {out}");
    let (code, out) = curl(&url, &with(&["-H", "Authorization: Bearer wrong"]));
    assert_eq!(code, Some(401), "a wrong token: {out}");
    let (code, out) = curl(&url, &with(&["-H", &bearer, "-X", "POST"]));
    assert_eq!(code, Some(405), "read-only: {out}");
    let (code, out) = curl(&format!("{url}etc/passwd"), &with(&["-H", &bearer]));
    assert_eq!(code, Some(404), "{out}");
    let stranger = [
        "--cert",
        path_str(&pki.stranger_cert),
        "--key",
        path_str(&pki.stranger_key),
        "-H",
        &bearer,
    ];
    let (code, out) = curl(&url, &stranger);
    assert_eq!(code, Some(403), "a CN not on --allow: {out}");
    let (code, out) = curl(&url, &with(&["-H", &bearer]));
    assert_eq!(code, Some(200), "{out}");
    assert!(out.contains("&lt;img src=x onerror=alert(1)&gt;"), "{out}");
    assert!(!out.contains(HOSTILE), "the name is escaped: {out}");
    let log = std::fs::read_to_string(&server.log).unwrap_or_default();
    assert!(log.contains("refused"), "the server logs refusals: {log}");

    // `report fleet --html`: the same page, as a file.
    let (_out_dir, out_path) = new_scratch_dir();
    let file = out_path.join("fleet.html");
    recman_ok([
        "--repo",
        path_str(&setup.repo),
        "report",
        "fleet",
        "--html",
        path_str(&file),
    ]);
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );
    assert!(!html.contains("<img"), "{html}");
    for kind in main_kinds.iter().chain(&other_kinds) {
        assert!(html.contains(kind.as_str()), "{kind} in the file:\n{html}");
    }
}
