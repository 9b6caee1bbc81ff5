//! Issue 41, acceptance 6, on moto's S3 server: `report costs` shows the requests of each kind
//! that a backup and a day of archiving made, and they are the requests the server saw. The
//! server's own access log (werkzeug writes one line per request) is the count; the repository
//! is immutable, so recman's hand-signed client (retention on every write) is counted besides
//! object_store's.
//!
//! PostgreSQL's archiver pushes WAL while a backup runs, and the server's log does not say which
//! process sent a request. The archiver therefore reaches the server through the testkit's
//! forwarding proxy, which keeps each request's first line: the backup's requests are the
//! server's lines of the backup's window less the proxy's lines of the same window.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use recman_media::testkit::{FaultProxy, Faults, Moto};
use serde_json::Value;

const BUCKET: &str = "recman-costs";
const KINDS: [&str; 5] = ["PUT", "GET", "HEAD", "LIST", "DELETE"];

type Counts = BTreeMap<&'static str, u64>;

/// The kind a store bills a request line as, decided here from the S3 API independently of
/// recman's meter: listings are GETs with `list-type`, `versions` or `uploads`; a POST is an
/// upload's start or completion unless it is a multi-object `delete`.
fn kind(line: &str) -> &'static str {
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let has = |p: &str| {
        query
            .split('&')
            .any(|kv| kv == p || kv.starts_with(&format!("{p}=")))
    };
    match method {
        "HEAD" => "HEAD",
        "DELETE" => "DELETE",
        "POST" if has("delete") => "DELETE",
        "GET" if has("list-type") || has("versions") || has("uploads") => "LIST",
        "GET" => "GET",
        "PUT" | "POST" => "PUT",
        other => panic!("a request the test does not know: {other} in {line:?}"),
    }
}

fn count<'a>(lines: impl IntoIterator<Item = &'a String>) -> Counts {
    let mut c: Counts = KINDS.iter().map(|k| (*k, 0)).collect();
    for l in lines {
        *c.get_mut(kind(l)).unwrap() += 1;
    }
    c
}

fn minus(a: &Counts, b: &Counts) -> Counts {
    KINDS
        .iter()
        .map(|k| {
            let (x, y) = (a[k], b[k]);
            assert!(x >= y, "{k}: {y} taken from {x}: {a:?} less {b:?}");
            (*k, x - y)
        })
        .collect()
}

/// The request lines moto has logged so far ("PUT /bucket/key HTTP/1.1"), colours removed.
fn server_lines(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter_map(|l| {
            let quoted = l.split('"').nth(1)?;
            let clean = strip_ansi(quoted);
            clean
                .ends_with(" HTTP/1.1")
                .then(|| clean.to_string())
                .filter(|c| {
                    KINDS
                        .iter()
                        .chain(&["POST"])
                        .any(|m| c.starts_with(&format!("{m} ")))
                })
        })
        .collect()
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Waits until the proxy has forwarded nothing for a second: the archiver (and any pusher it
/// started) is done, so a window opened or closed now cuts through no push.
fn settle(proxy: &FaultProxy) {
    let deadline = Deadline::after(Duration::from_secs(120));
    let mut seen = proxy.requests();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(1) {
        deadline.check("the archiver to stop sending requests");
        std::thread::sleep(Duration::from_millis(100));
        let now = proxy.requests();
        if now != seen {
            (seen, quiet_since) = (now, Instant::now());
        }
    }
}

/// Waits until no WAL file waits for the archiver.
fn wait_nothing_ready(pgdata: &Path) {
    let status = pgdata.join("pg_wal/archive_status");
    let deadline = Deadline::after(Duration::from_secs(120));
    loop {
        let ready = std::fs::read_dir(&status)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(".ready")
            })
            .count();
        if ready == 0 {
            return;
        }
        deadline.check(format!(
            "{ready} wal files waiting for the archiver to be archived"
        ));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The report's requests of each kind for `scope` rows whose key `pick` accepts, summed.
fn reported(report: &[Value], scope: &str, pick: impl Fn(&str) -> bool) -> Counts {
    let mut c: Counts = KINDS.iter().map(|k| (*k, 0)).collect();
    for r in report
        .iter()
        .filter(|r| r["scope"] == scope && pick(r["key"].as_str().unwrap()))
    {
        for k in KINDS {
            *c.get_mut(k).unwrap() += r["requests"][k.to_ascii_lowercase()].as_u64().unwrap();
        }
    }
    c
}

fn costs(repo: &RemoteRepo) -> Vec<Value> {
    serde_json::from_str(&repo.ok(&["report", "costs", "--json"])).unwrap()
}

fn s3_config(dir: &Path, name: &str, moto: &Moto, endpoint: &str) -> PathBuf {
    let mut toml = String::from("[s3]\n");
    for (k, v) in moto.settings() {
        let v = if k == "endpoint" {
            endpoint.to_string()
        } else {
            v
        };
        toml.push_str(&format!("{k} = \"{v}\"\n"));
    }
    let path = dir.join(name);
    std::fs::write(&path, toml).unwrap();
    chown_to_cluster_user(&path);
    path
}

#[test]
fn report_costs_matches_the_requests_the_server_saw() {
    let (_t, dir) = new_scratch_dir();
    let log = dir.join("moto.log");
    let moto = Moto::start(&log);
    moto.admin(BUCKET).create_bucket(true).unwrap();
    let proxy = FaultProxy::start(&moto.endpoint(), Faults::None, 1).unwrap();
    let cache = dir.join("cache");
    let url = format!("s3://{BUCKET}/pg");
    let repo = RemoteRepo {
        url: url.clone(),
        config: s3_config(&dir, "direct.toml", &moto, &moto.endpoint()),
        cache: cache.clone(),
    };
    let archiver_config = s3_config(&dir, "archiver.toml", &moto, &proxy.endpoint());
    repo.ok(&["create", "catalog", "--immutable", "--lock-days", "0.001"]);
    let archive = object_store_archive_command(&url, &archiver_config, &cache);
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!("archive_command = {archive}"),
        ],
        ..Default::default()
    });
    let conninfo = c.conninfo();
    let on_cluster = |extra: &[&str]| {
        let mut a = vec!["--pgdata", path_str(&c.pgdata), "--target", &conninfo];
        a.extend_from_slice(extra);
        repo.ok(&a)
    };
    on_cluster(&["register", "database", "--name", "main"]);
    c.psql("create table t(id int primary key, v text); insert into t select g, md5(g::text) from generate_series(1, 5000) g");
    c.switch_wal_and_wait_archived();
    settle(&proxy);

    // One backup: its window at the server, with the archiver's pushes in it set apart.
    let before = costs(&repo);
    let (server0, proxy0) = (server_lines(&log).len(), proxy.request_lines().len());
    on_cluster(&["backup", "database", "--tag", "PRICED"]);
    // The backup's history file is archived after the backup returns: the window ends when
    // the archiver is done, so that its pushes fall wholly inside or outside.
    wait_nothing_ready(&c.pgdata);
    settle(&proxy);
    let server = server_lines(&log);
    let proxied = proxy.request_lines();
    let seen = count(&server[server0..]);
    let archiver = count(&proxied[proxy0..]);
    let after = costs(&repo);
    let backups: Vec<Value> =
        serde_json::from_str(&repo.ok(&["list", "backup", "--json"])).unwrap();
    assert_eq!(backups.len(), 1, "{backups:?}");
    let id = backups[0]["id"].as_str().unwrap().to_string();
    let backup = reported(&after, "BACKUP", |k| k == id);
    eprintln!(
        "backup {id}: server saw {seen:?}, of which the archiver's {archiver:?}; report: {backup:?}"
    );
    assert_eq!(backup, minus(&seen, &archiver), "backup {id}: {after:?}");
    assert!(backup["PUT"] > 0 && backup["HEAD"] > 0, "{backup:?}");
    let archived_in_window = minus(
        &reported(&after, "ARCHIVE", |_| true),
        &reported(&before, "ARCHIVE", |_| true),
    );
    assert_eq!(archived_in_window, archiver, "archiving during the backup");

    // Bytes: the backup sent at least every byte of the objects it stored.
    let row = after
        .iter()
        .find(|r| r["scope"] == "BACKUP" && r["key"] == id.as_str())
        .unwrap();
    let stored: u64 = moto
        .admin(BUCKET)
        .list_versions(&format!("pg/main/backup/{id}/"))
        .unwrap()
        .iter()
        .map(|v| v.size)
        .sum();
    assert!(stored > 0, "no object under the backup's prefix");
    let sent = row["bytes_sent"].as_u64().unwrap();
    assert!(sent >= stored, "sent {sent} bytes, stored {stored}: {row}");
    assert!(row["bytes_received"].as_u64().unwrap() > 0, "{row}");

    // A day of archiving: archive-push of real segments, the archiver copying them aside.
    let spool = dir.join("spool");
    std::fs::create_dir(&spool).unwrap();
    chown_to_cluster_user(&spool);
    c.set_archive_command(&format!("cp %p {}/%f", path_str(&spool)));
    let mut segments = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while segments.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "the archiver never copied to {}",
            spool.display()
        );
        c.psql("update t set v = v || 'x' where id % 10 = 0");
        let seg = c.switch_wal_and_wait_archived();
        // Until the archiver has reloaded, a segment may still go to the repository.
        if spool.join(&seg).exists() && !segments.contains(&seg) {
            segments.push(seg);
        }
    }
    settle(&proxy);
    let before = costs(&repo);
    let server0 = server_lines(&log).len();
    for seg in &segments {
        let wal = spool.join(seg);
        repo.ok(&[
            "--pgdata",
            path_str(&c.pgdata),
            "archive-push",
            path_str(&wal),
        ]);
    }
    let seen = count(&server_lines(&log)[server0..]);
    let after = costs(&repo);
    let archived = minus(
        &reported(&after, "ARCHIVE", |_| true),
        &reported(&before, "ARCHIVE", |_| true),
    );
    eprintln!("archive-push of {segments:?}: server saw {seen:?}; report: {archived:?}");
    assert_eq!(archived, seen, "archiving: {after:?}");
    assert!(archived["PUT"] >= segments.len() as u64, "{archived:?}");
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(
        after
            .iter()
            .any(|r| r["scope"] == "ARCHIVE" && r["key"] == today.as_str()),
        "no archiving row for {today}: {after:?}"
    );

    // The table and the metrics say the same.
    let table = repo.ok(&["report", "costs"]);
    eprintln!("{table}");
    assert!(table.contains(&id) && table.contains(&today), "{table}");
    let said = repo.ok(&["run", "REPORT COSTS;"]);
    assert!(said.contains(&id) && said.contains(&today), "{said}");
    let metrics = repo.ok(&["metrics"]);
    let series = format!(
        "recman_repository_requests_total{{database=\"main\",work=\"backup\",kind=\"PUT\"}} {}\n",
        backup["PUT"]
    );
    assert!(metrics.contains(&series), "{series} not in:\n{metrics}");
    assert!(
        metrics.contains("# TYPE recman_repository_bytes_total counter"),
        "{metrics}"
    );
}
