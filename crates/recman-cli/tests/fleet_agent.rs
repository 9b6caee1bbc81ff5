//! Issue 19, the database-host agent: a backup host whose OS user cannot read the data
//! directory backs a cluster up through `recman server --pgdata` (running as postgres) over
//! mutual TLS, validates it, and the backup restores to the same data; a certificate the agent
//! does not allow fails the backup with a clear error on both sides. With a streaming standby
//! behind an agent of its own, the channels read relation files from the standby's agent and
//! the rest from the primary's (acceptance 3), as the I/O statistics show; the channels are
//! allocated in the language, one CONNECTed to the standby's agent. A backup host
//! given no conninfo starts and stops the backup through the agent's own server session.

mod common;
mod flows;

use common::*;
use flows::start_and_compare;
use std::process::Command;

#[test]
fn backup_and_validate_through_the_agent() {
    let (_pki_dir, pki_path) = new_scratch_dir();
    let pki = TestPki::new(&pki_path, "backup-host");
    let host = BackupHost::new(&pki);
    let mut shuttle = WalShuttle::new();
    let cluster = Cluster::init_with(ClusterOpts {
        extra_conf: shuttle.conf(),
        ..Default::default()
    });
    cluster.restart_on_tcp();
    shuttle.start(&host);
    cluster.pgbench_init(1);
    assert!(
        !host.can_read(&cluster.pgdata.join("PG_VERSION")),
        "the backup host's user must not be able to read the data directory"
    );
    let agent = Agent::start(&cluster, &pki, &["backup-host"]);
    let target = cluster.tcp_conninfo();
    let with = |extra: &[&str]| {
        let mut a = host.base_args();
        a.extend(["--target".to_string(), target.clone()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };

    let out = host.ok(with(&["register", "database", "--agent", &agent.url]));
    assert!(out.contains("registered"), "{out}");
    host.ok(with(&["backup", "database", "--channels", "2"]));
    let list: serde_json::Value =
        serde_json::from_str(&host.ok(with(&["list", "backup", "--json"]))).unwrap();
    let backups = list.as_array().expect("a list");
    assert_eq!(backups.len(), 1, "{list}");
    assert_eq!(backups[0]["status"], "AVAILABLE", "{list}");
    let v = host.ok(with(&["validate", "database"]));
    assert!(v.contains(&agent.url), "validate names where it read: {v}");
    assert!(v.contains("no corrupt blocks found"), "{v}");

    // A certificate signed by the CA but not allowed: refused, on both sides, and no backup.
    let (cert, key) = host.other_identity(&pki.stranger_cert, &pki.stranger_key, "stranger");
    let mut args = with(&["backup", "database"]);
    let at = args.iter().position(|a| a == "--tls-cert").unwrap() + 1;
    args[at] = path_str(&cert).into();
    let at = args.iter().position(|a| a == "--tls-key").unwrap() + 1;
    args[at] = path_str(&key).into();
    let e = host.err(args);
    assert!(
        e.contains(&format!(
            "the server at {} refused our certificate",
            agent.url
        )) && e.contains("stranger")
            && e.contains("hint:"),
        "{e}"
    );
    let log = agent.log_text();
    assert!(
        log.lines()
            .any(|l| l.contains("refused a connection from 127.0.0.1") && l.contains("CN=stranger")),
        "agent log:\n{log}"
    );
    let list: serde_json::Value =
        serde_json::from_str(&host.ok(with(&["list", "backup", "--json"]))).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");

    // Channels on two hosts: the primary's agent and a streaming standby's.
    let (_standby_dir, standby_path) = new_scratch_dir();
    let data = standby_path.join("standby");
    run_as_cluster_user_ok(
        Command::new(pg_bin("pg_basebackup"))
            .arg("-D")
            .arg(&data)
            .args(["-R", "-X", "stream", "--no-sync", "-c", "fast", "-d"])
            .arg(cluster.conninfo()),
    );
    let standby = Cluster::adopt(data);
    standby.restart_on_tcp();
    let standby_agent = Agent::start(&standby, &pki, &["backup-host"]);
    cluster.psql("create table after_first(x int); insert into after_first values (1)");
    // In the language (RMAN's CONNECT on a channel): the agent's URL alone, whose own session
    // checks the standby's replay.
    let script = format!(
        "RUN {{ ALLOCATE CHANNEL c1 DEVICE TYPE DISK; \
         ALLOCATE CHANNEL c2 DEVICE TYPE DISK CONNECT '{}'; \
         BACKUP DATABASE TAG 'TWO_HOSTS'; }}",
        standby_agent.url
    );
    host.ok(with(&["run", &script]));
    let io: serde_json::Value =
        serde_json::from_str(&host.ok(with(&["report", "io", "TWO_HOSTS", "--json"]))).unwrap();
    let inputs: Vec<&serde_json::Value> = io["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "INPUT")
        .collect();
    let from = |url: &str| {
        inputs
            .iter()
            .filter(|r| r["device"] == url)
            .map(|r| r["filename"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    let (primary_files, standby_files) = (from(&agent.url), from(&standby_agent.url));
    assert!(
        primary_files.iter().any(|f| f == "PG_VERSION")
            && standby_files.iter().any(|f| f.starts_with("base/"))
            && primary_files.len() + standby_files.len() == inputs.len(),
        "each file read through one of the two agents: primary {primary_files:?}, standby {standby_files:?}"
    );

    // The agent starts and stops a backup for a backup host given no conninfo at all (its
    // environment holds no PG* either): only the agent's session reaches this cluster, whose
    // system identifier the backup checks. This is the backup restored below.
    cluster.psql("create table via_agent(x int); insert into via_agent values (42)");
    let mut args = host.base_args();
    args.extend(["backup", "database", "--tag", "VIA_AGENT"].map(String::from));
    host.ok(args);
    let list: serde_json::Value =
        serde_json::from_str(&host.ok(with(&["list", "backup", "--json"]))).unwrap();
    let via = list
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tag"] == "VIA_AGENT");
    assert_eq!(
        via.map(|b| &b["status"]),
        Some(&"AVAILABLE".into()),
        "{list}"
    );

    // The backup restores (locally, as postgres, from a copy of the repository) to the data:
    // `--agent local`, since the database was registered with an agent.
    let expected = cluster.all_table_checksums();
    drop(shuttle);
    let (_copy_dir, repo) = host.repo_copy_for_cluster_user();
    let (_scratch, dir) = new_scratch_dir();
    let to = dir.join("restored");
    recman_ok([
        "--repo",
        path_str(&repo),
        "--agent",
        "local",
        "restore",
        "database",
        "--to",
        path_str(&to),
    ]);
    start_and_compare(&to, &expected);

    lease_ends_the_backup_of_a_silent_backup_host(&cluster, &pki);
}

/// A backup host that started a backup through the agent and then went silent: when its lease
/// runs out the agent closes the session, which ends the backup on the server. The agent runs
/// in this process (a one-second lease); the client calls by hand, renewing nothing.
fn lease_ends_the_backup_of_a_silent_backup_host(cluster: &Cluster, pki: &TestPki) {
    use recman_remote::{Allow, CallOptions, Client, TlsFiles};
    use serde_json::json;
    use std::time::{Duration, Instant};
    let svc = recman_engine::source::agent::AgentService::new(&cluster.pgdata, None)
        .unwrap()
        .with_lease(Some(cluster.conninfo()), Duration::from_secs(1));
    let server_tls = TlsFiles {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        ca: pki.ca.clone(),
    };
    let server = recman_remote::serve(
        "127.0.0.1:0",
        &server_tls,
        Allow::Any,
        std::sync::Arc::new(svc),
        recman_remote::stderr_log(),
    )
    .unwrap();
    let client_tls = TlsFiles {
        cert: pki.client_cert.clone(),
        key: pki.client_key.clone(),
        ca: pki.ca.clone(),
    };
    let url = format!("https://127.0.0.1:{}", server.local_addr.port());
    let client = Client::connect(&url, &client_tls).unwrap();
    let opened = client
        .call_meta("pg-open", &json!({}), CallOptions::default())
        .unwrap();
    let id = opened["id"].clone();
    assert_eq!(
        opened["facts"]["data_directory"].as_str(),
        Some(path_str(&cluster.pgdata)),
        "{opened}"
    );
    let started = json!({"id": id, "op": "backup-start", "label": "lease test"});
    client
        .call_meta("pg-call", &started, CallOptions::default())
        .unwrap();
    let sessions = || {
        cluster.psql(
            "select count(*) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()",
        )
    };
    assert_eq!(
        sessions().trim(),
        "1",
        "the agent's session holds the backup"
    );
    // Watched from the server's side: asking the agent would renew the lease.
    let deadline = Instant::now() + Duration::from_secs(60);
    while sessions().trim() != "0" {
        assert!(Instant::now() < deadline, "the lease never ran out");
        std::thread::sleep(Duration::from_millis(100));
    }
    let e = client
        .call_meta("pg-renew", &json!({ "id": id }), CallOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), recman_error::ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("lease"), "{e}");
}
