//! Issue 8, acceptance 2 and 4: a repository on a real S3 server (s3s-fs, started by the
//! test): archive-push, backup, validate, list, crosscheck, restore, delete, a catalog cache
//! rebuilt from the manifests; a server that fails requests or drops connections does not
//! fail the backup, and a permanent error fails it cleanly. Issue 16, acceptance 5: the
//! store over https with a private CA (RECMAN_S3_CA_FILE); a wrong CA is refused with a hint.

mod common;
mod flows;

use common::*;
use flows::start_and_compare;
use recman_media::testkit::{FaultProxy, Faults, S3Server, TlsFront, s3_server_or_skip};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

struct S3Setup {
    _dir: TempDir,
    config: PathBuf,
    cache: PathBuf,
    url: String,
    cluster: Cluster,
}

fn write_config(dir: &Path, endpoint: &str, server: &S3Server) -> PathBuf {
    write_s3_config(
        dir,
        endpoint,
        server,
        "part-size = \"5M\"\nmax-retries = 12\n",
    )
}

impl S3Setup {
    /// A repository at s3://BUCKET/PREFIX reached through `endpoint`, and a cluster archiving
    /// into it, registered as "main".
    fn new(server: &S3Server, endpoint: &str, prefix: &str) -> S3Setup {
        let (dir, path) = new_scratch_dir();
        let config = write_config(&path, endpoint, server);
        let cache = path.join("cache");
        let url = format!("s3://{}/{prefix}", server.bucket());
        let archive = object_store_archive_command(&url, &config, &cache);
        recman_ok([
            "--config",
            path_str(&config),
            "--repo",
            &url,
            "--repo-cache",
            path_str(&cache),
            "create",
            "catalog",
        ]);
        let cluster = Cluster::init_with(ClusterOpts {
            extra_conf: vec![
                "archive_mode = on".into(),
                format!("archive_command = {archive}"),
            ],
            ..Default::default()
        });
        let s = S3Setup {
            _dir: dir,
            config,
            cache,
            url,
            cluster,
        };
        s.ok(&["register", "database", "--name", "main"]);
        s
    }

    fn args(&self, args: &[&str]) -> Vec<String> {
        let repo = RemoteRepo {
            config: self.config.clone(),
            url: self.url.clone(),
            cache: self.cache.clone(),
        };
        let conninfo = self.cluster.conninfo();
        let mut v = repo.args(&[
            "--pgdata",
            path_str(&self.cluster.pgdata),
            "--target",
            &conninfo,
        ]);
        v.extend(args.iter().map(|s| s.to_string()));
        v
    }

    fn ok(&self, args: &[&str]) -> String {
        recman_ok(self.args(args))
    }

    fn err(&self, args: &[&str]) -> String {
        recman_err(self.args(args))
    }

    fn backups(&self) -> Vec<serde_json::Value> {
        serde_json::from_str(&self.ok(&["list", "backup", "--json"])).unwrap()
    }

    /// Switches WAL and waits until the catalog lists the finished segment.
    fn archive_now(&self) {
        self.cluster.switch_wal_and_wait_archived();
    }
}

/// Object names under `dir` of a bucket kept by s3s-fs (a directory tree).
fn objects(server: &S3Server, prefix: &str) -> Vec<String> {
    let root = server.data_dir().join(server.bucket());
    let mut out = Vec::new();
    let mut stack = vec![root.join(prefix)];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue; // s3s-fs's own metadata files
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(
                    e.path()
                        .strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    out.sort();
    out
}

#[test]
fn everything_works_on_an_s3_repository() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let s = S3Setup::new(&server, server.endpoint(), "prod/pg");
    let c = &s.cluster;
    c.pgbench_init(2);
    c.psql("create table marker(x int); insert into marker values (1)");
    let out = s.ok(&[
        "backup",
        "database",
        "--channels",
        "2",
        "--compress",
        "lz4",
        "--tag",
        "S3FULL",
    ]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    c.psql("insert into marker values (2)");
    let segment = c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();

    // The pieces and the manifest are objects in the bucket, under the prefix.
    let objs = objects(&server, "prod/pg");
    assert!(
        objs.iter().any(|o| o.ends_with("manifest.json"))
            && objs.iter().any(|o| o.ends_with(".rmp"))
            && objs.iter().any(|o| o.ends_with(".rmw"))
            && objs.iter().any(|o| o.ends_with("recman.repo")),
        "{objs:?}"
    );

    let b = s.backups();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["status"], "AVAILABLE");
    let id = b[0]["id"].as_str().unwrap().to_string();
    // Validate read every piece of the backup that is in the bucket, and found it intact.
    let pieces = objs
        .iter()
        .filter(|o| o.contains(&id) && o.ends_with(".rmp"))
        .count();
    assert!(pieces >= 2, "two channels wrote {pieces} pieces: {objs:?}");
    let out = s.ok(&["validate", "backup", "S3FULL"]);
    assert!(
        out.contains(&format!(
            "validated backup {id} (tag S3FULL): {pieces} pieces, "
        )) && out.contains("backup is intact"),
        "{out}"
    );
    let out = s.ok(&["crosscheck", "backup"]);
    assert!(
        out.contains(&id) && out.contains("found to be 'AVAILABLE'"),
        "{out}"
    );
    // The segment archived above is listed, and its object is in the bucket.
    let wal: Vec<serde_json::Value> =
        serde_json::from_str(&s.ok(&["list", "archivelog", "--json"])).unwrap();
    assert!(wal.iter().any(|w| w["name"] == segment.as_str()), "{wal:?}");
    let objs = objects(&server, "prod/pg");
    assert!(
        objs.iter()
            .any(|o| o.contains(segment.as_str()) && o.ends_with(".rmw")),
        "{segment} is not in the bucket: {objs:?}"
    );

    // The catalog is a cache: without it, the next command rebuilds it from the manifests.
    std::fs::remove_dir_all(&s.cache).unwrap();
    let again = s.backups();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0]["id"], b[0]["id"]);
    assert_eq!(again[0]["status"], "AVAILABLE");

    // Restore from S3 (pieces and, through restore_command, the archived WAL) gives the data.
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    s.ok(&[
        "restore",
        "database",
        "--to",
        path_str(&to),
        "--channels",
        "2",
    ]);
    let conf = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(
        conf.contains(&s.url) && !conf.contains(server.secret_key()),
        "restore_command must name the repository and carry no secret:\n{conf}"
    );
    let r = start_and_compare(&to, &expected);
    assert_eq!(
        r.psql("select string_agg(x::text, ',' order by x) from marker"),
        "1,2"
    );
    r.stop();

    // Delete removes the objects from the bucket.
    s.ok(&["delete", "backup", &id, "--noprompt"]);
    let left: Vec<_> = objects(&server, "prod/pg")
        .into_iter()
        .filter(|o| o.contains(&id))
        .collect();
    assert!(
        left.is_empty(),
        "objects of the deleted backup remain: {left:?}"
    );
    assert!(s.backups().is_empty());
}

#[test]
fn a_flaky_server_does_not_fail_the_backup_and_a_permanent_error_is_clean() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let proxy = FaultProxy::start(server.endpoint(), Faults::None, 7).unwrap();
    let s = S3Setup::new(&server, &proxy.endpoint(), "flaky");
    let c = &s.cluster;
    c.pgbench_init(2);
    c.psql("create table marker(x int); insert into marker values (1)");
    s.archive_now();

    // One request in eight fails: a 503, or a connection cut mid-response.
    proxy.set_faults(Faults::Random {
        slowdown: 0.07,
        cut: 0.06,
    });
    let before = proxy.faults();
    let out = s.ok(&["backup", "database", "--channels", "2", "--compress", "lz4"]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    s.ok(&["validate", "backup"]);
    assert!(proxy.faults() > before, "no fault was injected");
    proxy.set_faults(Faults::None);
    s.archive_now();
    let expected = c.all_table_checksums();
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    s.ok(&["restore", "database", "--to", path_str(&to)]);
    start_and_compare(&to, &expected).stop();

    // Write permission revoked in the middle of a backup: the repository opened and the
    // backup's row exists, ten piece writes (a few whole pieces) pass, then every further one is
    // refused. The backup fails naming the store, with a hint, is not AVAILABLE, and nothing
    // of it is left in the bucket.
    let ok_before: Vec<_> = s.backups().iter().map(|b| b["id"].clone()).collect();
    proxy.set_faults(Faults::DenyWrites {
        path: ".rmp",
        after: 10,
    });
    let denials = proxy.denials();
    let err = s.err(&[
        "backup",
        "database",
        "--filesperset",
        "1",
        "--compress",
        "none",
        "--tag",
        "DENIED",
    ]);
    // A permanent error is not retried as if it were a slow-down: counted in requests, not
    // timed. Retried, one refused write alone would be refused 1 + max-retries (13) times.
    let refused = proxy.denials() - denials;
    eprintln!("piece writes refused: {refused}");
    assert!(refused > 0, "no piece upload was refused: {err}");
    assert!(
        refused < 13,
        "{refused} refusals: a permanent error was retried\n{err}"
    );
    assert!(
        err.contains("s3://") && err.contains(".rmp") && err.contains("hint"),
        "{err}"
    );
    proxy.set_faults(Faults::None);
    let all = s.backups();
    let denied: Vec<_> = all.iter().filter(|b| b["tag"] == "DENIED").collect();
    assert_eq!(denied.len(), 1, "the denied backup is not listed: {all:?}");
    let b = denied[0];
    assert_ne!(b["status"], "AVAILABLE", "{b}");
    assert_eq!(b["status"], "FAILED", "{b}");
    let id = b["id"].as_str().unwrap();
    let left: Vec<_> = objects(&server, "flaky")
        .into_iter()
        .filter(|o| o.contains(id))
        .collect();
    assert!(
        left.is_empty(),
        "pieces of the failed backup remain: {left:?}"
    );
    // The backups made before are untouched and still restore-ready.
    let now: Vec<_> = all
        .iter()
        .filter(|b| b["tag"] != "DENIED")
        .map(|b| b["id"].clone())
        .collect();
    assert_eq!(now, ok_before);
    let last = ok_before.last().unwrap().as_str().unwrap();
    assert!(
        s.ok(&["validate", "backup", last])
            .contains("backup is intact")
    );
}

#[test]
fn https_store_with_a_private_ca() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let (_d, dir) = new_scratch_dir();
    let pki_dir = dir.join("pki");
    std::fs::create_dir(&pki_dir).unwrap();
    let pki = TestPki::new(&pki_dir, "unused");
    let front = TlsFront::start(server.addr(), &pki.server_cert, &pki.server_key).unwrap();
    let config = dir.join("recman.toml");
    // One retry: a refused certificate is retried like any failed connect.
    std::fs::write(
        &config,
        format!(
            "[s3]\nendpoint = \"{}\"\naccess-key-id = \"{}\"\nsecret-access-key = \"{}\"\nmax-retries = 1\n",
            front.endpoint(),
            server.access_key(),
            server.secret_key()
        ),
    )
    .unwrap();
    chown_tree_to_cluster_user(&dir);
    let create = |prefix: &str, ca: Option<&Path>| {
        let url = format!("s3://{}/{prefix}", server.bucket());
        let cache = dir.join(format!("cache-{prefix}"));
        let args = [
            "--config",
            path_str(&config),
            "--repo",
            &url,
            "--repo-cache",
            path_str(&cache),
            "create",
            "catalog",
        ];
        let env: Vec<(&str, &str)> = ca
            .map(|c| vec![("RECMAN_S3_CA_FILE", path_str(c))])
            .unwrap_or_default();
        let out = recman_env(args, &env);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, err) = create("tls", Some(&pki.ca));
    assert!(ok, "https with the test CA: {err}");
    assert!(
        !objects(&server, "tls").is_empty(),
        "nothing was written over https"
    );
    for (prefix, ca) in [("wrong", Some(pki.other_ca.as_path())), ("none", None)] {
        let (ok, err) = create(prefix, ca);
        assert!(
            !ok,
            "{prefix}: a certificate from an untrusted CA was accepted"
        );
        assert!(
            err.contains("TLS certificate was refused")
                && err.contains("unknown issuer")
                && err.contains("hint: give the CA"),
            "{prefix}: {err}"
        );
        assert!(
            objects(&server, prefix).is_empty(),
            "{prefix}: objects written"
        );
    }
}

/// archive-get while the store is unreachable during recovery: recovery stops with an error
/// instead of ending early on the last segment it could fetch (which would open the cluster
/// without the commits after it, on a new timeline); once the store is back, the same
/// restored directory recovers everything.
#[test]
fn an_unreachable_store_stops_recovery_instead_of_ending_it_early() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let proxy = TcpProxy::start(server.addr().parse().unwrap()).unwrap();
    let s = S3Setup::new(&server, &format!("http://{}", proxy.addr()), "unreachable");
    let c = &s.cluster;
    c.psql("create table markers(id int)");
    c.psql("insert into markers values (1)");
    s.ok(&["backup", "database"]);
    c.psql("insert into markers values (2)");
    s.archive_now();
    c.psql("insert into markers values (3)");
    s.archive_now();
    c.stop();
    let (_k, dir) = new_scratch_dir();
    let to = dir.join("restored");
    s.ok(&["restore", "database", "--to", path_str(&to)]);
    // Few retries, so that the failing fetch gives up in seconds (the restore_command names
    // this config file).
    let auto = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(auto.contains(path_str(&s.config)), "{auto}");
    let cfg = std::fs::read_to_string(&s.config).unwrap();
    std::fs::write(
        &s.config,
        cfg.replace("max-retries = 12", "max-retries = 1"),
    )
    .unwrap();

    proxy.cut();
    let r = Cluster::adopt(to.clone());
    let e = r
        .try_start()
        .expect_err("recovery went on without its archive");
    let log = std::fs::read_to_string(&r.log).unwrap_or_default();
    assert!(
        !log.contains("selected new timeline ID"),
        "recovery ended early and opened a new timeline:\n{log}"
    );
    assert!(log.contains("FATAL"), "{e}\n{log}");

    proxy.heal();
    r.start();
    r.wait_recovery_done(std::time::Duration::from_secs(180));
    assert_eq!(
        r.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1,2,3"
    );
}
