//! Issue 19, the repository-host and restore side of the fleet (docs/fleet.md), with real
//! processes on loopback: the cluster archives through `archive-push --repo-host` to the
//! repository host's `recman server --repo`; a restore on the backup host writes through the
//! database host's agent (`recman server --restore-dir`), which refuses paths outside its
//! directories; an agent killed mid-restore fails the restore cleanly, and the rerun, through
//! a network cut for a moment by a proxy, completes; the restored cluster recovers through
//! archive-get via the repository host and equals the source.

mod common;
mod flows;

use common::*;
use flows::start_and_compare;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// GET /metrics from the repository host's plain-HTTP endpoint; the body.
fn scrape(port: u16) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to metrics");
    write!(
        c,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut r = String::new();
    c.read_to_string(&mut r).expect("read the scrape");
    let (head, body) = r.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_string()
}

/// Starts `recman <args> server --listen 127.0.0.1:<port> <server_args>` as the cluster user
/// and waits until it accepts connections.
fn start_server(args: &[String], port: u16, log: &Path) -> Server {
    start_server_env(args, port, log, &[])
}

fn start_server_env(args: &[String], port: u16, log: &Path, env: &[(&str, &str)]) -> Server {
    let mut a = args.to_vec();
    a.push("--listen".into());
    a.push(format!("127.0.0.1:{port}"));
    Server::spawn(&a, port, log, env)
}

fn tls(cert: &Path, key: &Path, ca: &Path) -> Vec<String> {
    ["--tls-cert", "--tls-key", "--tls-ca"]
        .iter()
        .zip([cert, key, ca])
        .flat_map(|(o, p)| [o.to_string(), path_str(p).to_string()])
        .collect()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Deadline::after(Duration::from_secs(120));
    while !cond() {
        deadline.check(what);
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn restore_through_the_agent_recovers_through_the_repository_host() {
    let (_pt, pki_dir) = new_scratch_dir();
    let pki = TestPki::new(&pki_dir, "unused");
    let (db_cert, db_key) = host_cert(&pki, "db1", "db1");
    let (bk_cert, bk_key) = host_cert(&pki, "backup", "backup");
    let db_tls = tls(&db_cert, &db_key, &pki.ca);
    let bk_tls = tls(&bk_cert, &bk_key, &pki.ca);
    let (_rt, repo) = new_repo();
    recman_ok(["--repo", path_str(&repo), "create", "catalog"]);
    let (_st, scratch) = new_scratch_dir();

    // The repository host's server: only db1 may archive for database main (db2 for another).
    let repo_port = free_port();
    let repo_url = format!("https://localhost:{repo_port}");
    let mut a = vec![
        "--repo".to_string(),
        path_str(&repo).into(),
        "server".into(),
    ];
    a.extend(bk_tls.clone());
    a.extend(
        [
            "--allow",
            "main:db1",
            "--allow",
            "via:db1",
            "--allow",
            "other:db2",
        ]
        .map(String::from),
    );
    let metrics_port = free_port();
    a.extend([
        "--metrics-listen".into(),
        format!("127.0.0.1:{metrics_port}"),
    ]);
    let _repo_host = start_server(&a, repo_port, &scratch.join("repo-host.log"));

    // The cluster archives through the repository host, holding no repository path; also
    // for "via", its registration through an agent below (refused until then: `|| true`).
    let push = |db: &str| {
        format!(
            "\"{}\" --db {db} archive-push %p --repo-host {repo_url} {}",
            recman_bin().display(),
            db_tls.join(" ")
        )
    };
    let push = format!("{} && ({} || true)", push("main"), push("via"));
    let cluster = Cluster::init_with(ClusterOpts {
        archive_repo: Some(repo.clone()),
        extra_conf: vec![format!("archive_command = '{push}'")],
        ..Default::default()
    });
    let local = |args: &[&str]| {
        let mut v = vec![
            "--repo".to_string(),
            path_str(&repo).into(),
            "--pgdata".into(),
            path_str(&cluster.pgdata).into(),
            "--target".into(),
            cluster.conninfo(),
        ];
        v.extend(args.iter().map(|s| s.to_string()));
        v
    };
    recman_ok(local(&["register", "database", "--name", "main"]));
    cluster.pgbench_init(1);
    recman_ok(local(&["backup", "database"]));
    cluster.psql("create table after_backup as select generate_series(1, 5000) g");
    let expected = cluster.all_table_checksums();
    let seg = cluster.switch_wal_and_wait_archived();
    let logs = recman_ok(local(&["list", "archivelog", "--json"]));
    assert!(
        logs.contains(&seg),
        "{seg} not archived through the repository host: {logs}"
    );
    // The repository host's scrape endpoint serves the catalog's state as of the request.
    let text = scrape(metrics_port);
    let scraped = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("prometheus text");
    let has = |metric: &str, label: (&str, &str)| {
        scraped.samples.iter().any(|x| {
            x.metric == metric && x.labels.get(label.0) == Some(label.1) && {
                let prometheus_parse::Value::Gauge(v) = x.value else {
                    return false;
                };
                v > 0.0
            }
        })
    };
    assert!(
        has("recman_backup_last_size_bytes", ("type", "full")),
        "{text}"
    );
    assert!(
        has("recman_wal_last_archived_segment_info", ("segment", &seg)),
        "{seg} not in the scrape:\n{text}"
    );

    // Without --db the repository host takes the one database this certificate may archive
    // for (main: "via" is not registered yet).
    let got = scratch.join("got-without-db");
    recman_ok(
        ["archive-get", &seg, path_str(&got)]
            .iter()
            .map(|s| s.to_string())
            .chain(["--repo-host".into(), repo_url.clone()])
            .chain(db_tls.clone()),
    );
    assert!(got.is_file(), "archive-get without --db fetched nothing");

    // A certificate the repository host allows, but not for main, is refused for main.
    let (st_cert, st_key) = host_cert(&pki, "db2", "db2");
    let e = recman_err(
        [
            "--db",
            "main",
            "archive-get",
            &seg,
            path_str(&scratch.join("x")),
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(["--repo-host".into(), repo_url.clone()])
        .chain(tls(&st_cert, &st_key, &pki.ca)),
    );
    assert!(
        e.contains("\"db2\" is not allowed to archive for database main"),
        "{e}"
    );

    // The database host's agent writes restores only into its --restore-dir.
    let restore_root = scratch.join("restores");
    std::fs::create_dir(&restore_root).unwrap();
    chown_to_cluster_user(&restore_root);
    let agent_port = free_port();
    let mut agent_args = vec!["server".to_string()];
    agent_args.extend(db_tls.clone());
    agent_args.extend([
        "--allow".into(),
        "backup".into(),
        "--restore-dir".into(),
        path_str(&restore_root).into(),
        "--repo-host".into(),
        repo_url.clone(),
    ]);
    let agent_log = scratch.join("agent.log");
    let agent = start_server(&agent_args, agent_port, &agent_log);
    let restore = |port: u16, to: &Path, extra: &[&str]| {
        let mut v = vec![
            "--repo".to_string(),
            path_str(&repo).into(),
            "--db".into(),
            "main".into(),
            "--agent".into(),
            format!("https://localhost:{port}"),
        ];
        v.extend(bk_tls.clone());
        v.extend(["restore", "database", "--to", path_str(to)].map(String::from));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let outside = scratch.join("outside");
    let e = recman_err(restore(agent_port, &outside, &[]));
    assert!(e.contains("outside the agent's restore directories"), "{e}");
    assert!(!outside.exists(), "the agent wrote outside its directories");

    // The agent killed mid-restore: the restore fails, naming the agent; what it wrote is
    // marked as an interrupted restore, never a startable cluster.
    let to = restore_root.join("main");
    let slow = [
        ("RECMAN_FAULT_SLOW_READ", "backup/:5"),
        ("RECMAN_FLEET_RETRY_SECS", "5"),
    ];
    let mut run = recman_cmd(restore(agent_port, &to, &[]));
    for (k, v) in slow {
        run.env(k, v);
    }
    let running = run
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let marker = to.join(".recman-restore-in-progress");
    wait_for("the restore to start writing", || marker.exists());
    drop(agent);
    let out = running.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the restore survived its agent");
    assert!(
        err.contains(&format!("agent https://localhost:{agent_port}"))
            && err.contains("interrupted restore")
            && err.contains("--force"),
        "{err}"
    );
    assert!(marker.exists() && !to.join("recovery.signal").exists());

    // The rerun (with --force, as the interrupted directory needs) goes through a proxy whose
    // network is cut while the restore runs: the transport retries, the restore completes.
    let agent = start_server(&agent_args, agent_port, &agent_log);
    let proxy = TcpProxy::start(format!("127.0.0.1:{}", agent.port).parse().unwrap()).unwrap();
    let mut run = recman_cmd(restore(proxy.addr().port(), &to, &["--force"]));
    for (k, v) in slow {
        run.env(k, v);
    }
    let running = run
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The interrupted restore's marker is still there: wait for the rerun's own.
    let mine = format!("(process {})", running.id());
    wait_for("the rerun to start writing", || {
        std::fs::read_to_string(&marker).is_ok_and(|m| m.contains(&mine))
            && std::fs::read_dir(to.join("base")).is_ok()
    });
    proxy.cut();
    wait_for("the client to redial during the cut", || {
        proxy.refused() >= 2
    });
    proxy.heal();
    let out = running.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the restore did not ride out the cut: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(proxy.forwarded() >= 2, "the restore never reconnected");

    // Recovery on the database host fetches WAL through the repository host.
    let auto = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(
        auto.contains(&format!("--repo-host \"{repo_url}\"")),
        "{auto}"
    );

    // An agent started without --repo-host: the restore goes through, warning that its
    // restore_command reads this host's repository path on the database host.
    let bare_args: Vec<String> = agent_args[..agent_args.len() - 2].to_vec();
    assert!(!bare_args.contains(&"--repo-host".to_string()));
    let bare_port = free_port();
    let _bare = start_server(&bare_args, bare_port, &scratch.join("bare-agent.log"));
    let bare_to = restore_root.join("bare");
    let out = recman_cmd(restore(bare_port, &bare_to, &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "the agent at https://localhost:{bare_port} was started without --repo-host"
        )) && err.contains(
            "hint: restart the agent with `recman server --restore-dir DIR --repo-host URL`"
        ),
        "{err}"
    );
    let bare_auto = std::fs::read_to_string(bare_to.join("postgresql.auto.conf")).unwrap();
    assert!(
        bare_auto.contains(path_str(&repo)) && !bare_auto.contains("--repo-host"),
        "{bare_auto}"
    );
    assert!(
        !auto.contains(path_str(&repo)),
        "the restore_command names the repository: {auto}"
    );
    let restored = start_and_compare(&to, &expected);
    drop(restored);

    // A backup through an agent (--pgdata) killed mid-way fails, and is never AVAILABLE.
    let backup_port = free_port();
    let mut a = vec!["--pgdata".to_string(), path_str(&cluster.pgdata).into()];
    a.extend(db_tls.clone());
    a.extend(["server", "--allow", "backup"].map(String::from));
    let reader = start_server_env(
        &a,
        backup_port,
        &scratch.join("reader.log"),
        &[("RECMAN_FAULT_SLOW_READ", "base/:20")],
    );
    let mut via = vec![
        "--repo".to_string(),
        path_str(&repo).into(),
        "--target".into(),
        cluster.conninfo(),
    ];
    via.extend(bk_tls.clone());
    let with = |args: &[&str]| {
        let mut v = via.clone();
        v.extend(args.iter().map(|s| s.to_string()));
        v
    };
    let url = format!("https://localhost:{backup_port}");
    recman_ok(with(&[
        "register", "database", "--name", "via", "--agent", &url,
    ]));
    // Now db1 may archive for two registered databases: without --db it is refused, naming
    // both.
    let e = recman_err(
        ["archive-get", &seg, path_str(&scratch.join("y"))]
            .iter()
            .map(|s| s.to_string())
            .chain(["--repo-host".into(), repo_url.clone()])
            .chain(db_tls.clone()),
    );
    assert!(
        e.contains("several databases") && e.contains("(main, via)") && e.contains("--db NAME"),
        "{e}"
    );
    let running = recman_cmd(with(&["--db", "via", "backup", "database"]))
        .env("RECMAN_FLEET_RETRY_SECS", "5")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pieces = repo.join("via/backup");
    wait_for("the backup to write its first piece", || {
        std::fs::read_dir(&pieces).is_ok_and(|mut d| d.next().is_some())
    });
    drop(reader);
    let out = running.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the backup survived its agent");
    assert!(err.contains(&url), "{err}");
    let list = recman_ok(with(&["--db", "via", "list", "backup", "--json"]));
    assert!(
        !list.contains("AVAILABLE"),
        "a backup through a killed agent: {list}"
    );

    // A database registered with --agent is restored through that agent by default (here one
    // agent reads for backups and writes restores); `--agent local` restores here anyway.
    let mut a = vec!["--pgdata".to_string(), path_str(&cluster.pgdata).into()];
    a.extend(agent_args.clone());
    let _both = start_server(&a, backup_port, &scratch.join("both.log"));
    recman_ok(with(&["--db", "via", "backup", "database"]));
    let e = recman_err(with(&[
        "--db",
        "via",
        "restore",
        "database",
        "--to",
        path_str(&outside),
    ]));
    assert!(e.contains("outside the agent's restore directories"), "{e}");
    assert!(!outside.exists(), "the agent wrote outside its directories");
    let to = restore_root.join("via");
    recman_ok(with(&[
        "--db",
        "via",
        "restore",
        "database",
        "--to",
        path_str(&to),
    ]));
    // Written by the agent (its restore_command fetches WAL through the repository host);
    // the data through an agent was compared above, so here the files are compared with a
    // local restore of the same backup, below.
    let auto = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(
        auto.contains(&format!("--repo-host \"{repo_url}\"")),
        "{auto}"
    );
    assert!(to.join("recovery.signal").exists());
    let here = scratch.join("here");
    recman_ok(with(&[
        "--db",
        "via",
        "--agent",
        "local",
        "restore",
        "database",
        "--to",
        path_str(&here),
    ]));
    let auto = std::fs::read_to_string(here.join("postgresql.auto.conf")).unwrap();
    assert!(
        auto.contains(path_str(&repo)) && !auto.contains("--repo-host"),
        "a restore with --agent local did not write here: {auto}"
    );
    assert_eq!(
        files_under(&to.join("base")),
        files_under(&here.join("base")),
        "the agent's restore and the local one of the same backup differ"
    );
}

/// Each file below `dir` (relative path) with its length.
fn files_under(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, m.len());
            }
        }
    }
    assert!(
        out.len() > 100,
        "{} holds {} files",
        dir.display(),
        out.len()
    );
    out
}
