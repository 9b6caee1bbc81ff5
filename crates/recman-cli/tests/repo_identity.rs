//! Issue 41, acceptance 7: a remote repository's catalog cache is bound to the repository's
//! identity (the id in its marker), not only to its URL. A bucket emptied and made a
//! repository again at the same URL is never served from the old cache: a new cluster
//! registers under the old name, and no backup of the old repository is listed. And DELETE
//! OBSOLETE from a host whose cache is behind the bucket (another host deleted a backup)
//! keeps the redundancy it promises.

mod common;

use common::*;
use recman_media::Media;
use recman_media::s3::S3Media;
use recman_media::testkit::{S3Server, s3_server_or_skip};
use std::path::{Path, PathBuf};

/// What these tests do with a [`RemoteRepo`].
trait Remote {
    fn on(&self, c: Option<&Cluster>, args: &[&str]) -> Vec<String>;
    fn cluster(&self) -> Cluster;
    fn marker_id(&self, media: &S3Media) -> String;
}

impl Remote for RemoteRepo {
    /// The repository's options, then the cluster's when there is one, then `args`.
    fn on(&self, c: Option<&Cluster>, args: &[&str]) -> Vec<String> {
        let conninfo = c.map(|c| c.conninfo()).unwrap_or_default();
        let mut extra: Vec<&str> = match c {
            Some(c) => vec!["--pgdata", path_str(&c.pgdata), "--target", &conninfo],
            None => Vec::new(),
        };
        extra.extend_from_slice(args);
        RemoteRepo::args(self, &extra)
    }

    fn cluster(&self) -> Cluster {
        let archive = object_store_archive_command(&self.url, &self.config, &self.cache);
        Cluster::init_with(ClusterOpts {
            extra_conf: vec![
                "archive_mode = on".into(),
                format!("archive_command = {archive}"),
            ],
            ..Default::default()
        })
    }

    fn marker_id(&self, media: &S3Media) -> String {
        let m: serde_json::Value =
            serde_json::from_slice(&media.get("recman.repo").unwrap()).unwrap();
        m["id"].as_str().expect("the marker has an id").to_string()
    }
}

fn write_config(server: &S3Server, path: &Path) -> PathBuf {
    write_s3_config(path, server.endpoint(), server, "")
}

fn backup_ids(r: &RemoteRepo) -> Vec<String> {
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(r.on(None, &["list", "backup", "--json"]))).unwrap();
    listed
        .iter()
        .filter(|b| b["status"] == "AVAILABLE")
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_repository_made_again_at_the_same_url_is_not_served_from_the_old_cache() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let (_dir, path) = new_scratch_dir();
    let config = write_config(&server, &path);
    let r = RemoteRepo {
        config,
        cache: path.join("cache"),
        url: format!("s3://{}/reused", server.bucket()),
    };
    let media = S3Media::new(server.config("reused")).unwrap();

    recman_ok(r.on(None, &["create", "catalog"]));
    let first_id = r.marker_id(&media);
    let old = r.cluster();
    recman_ok(r.on(Some(&old), &["register", "database", "--name", "main"]));
    old.psql("create table t as select g from generate_series(1, 1000) g");
    recman_ok(r.on(Some(&old), &["backup", "database", "--tag", "OLD"]));
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(r.on(None, &["list", "backup", "--json"]))).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    // The old cluster must not archive into the new repository.
    old.stop();

    // Every object of the repository deleted through the S3 API, as another host (or a user
    // removing a container) would; the cache on this host is left as it was.
    let objects = media.list("").unwrap();
    assert!(
        objects.iter().any(|o| o.name == "recman.repo"),
        "{objects:?}"
    );
    for o in &objects {
        media.remove(&o.name).unwrap();
    }
    assert!(media.list("").unwrap().is_empty());
    assert!(r.cache.join("catalog.db").exists());

    // While the bucket is empty, the cache is not served either: there is no repository.
    let err = recman_err(r.on(None, &["list", "backup"]));
    assert!(err.contains("not a recman repository"), "{err}");

    let out = recman_ok(r.on(None, &["create", "catalog"]));
    assert!(out.contains("created repository and catalog"), "{out}");
    let second_id = r.marker_id(&media);
    assert_ne!(first_id, second_id);

    // A new cluster registers under the old name, and the old backup is gone from the list.
    let new = r.cluster();
    recman_ok(r.on(Some(&new), &["register", "database", "--name", "main"]));
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(r.on(None, &["list", "backup", "--json"]))).unwrap();
    assert!(
        listed.is_empty(),
        "backups of the old repository: {listed:?}"
    );

    // The same again when the cache is found stale at open rather than at create: another
    // host empties the bucket and creates the repository anew with its own cache.
    new.psql("create table n as select g from generate_series(1, 100) g");
    recman_ok(r.on(Some(&new), &["backup", "database", "--tag", "SECOND"]));
    new.stop();
    for o in media.list("").unwrap() {
        media.remove(&o.name).unwrap();
    }
    let (_other, other_path) = new_scratch_dir();
    let elsewhere = RemoteRepo {
        config: r.config.clone(),
        cache: other_path.join("cache"),
        url: r.url.clone(),
    };
    recman_ok(elsewhere.on(None, &["create", "catalog"]));
    let third = elsewhere.cluster();
    recman_ok(elsewhere.on(Some(&third), &["register", "database", "--name", "main"]));
    third.psql("create table x as select g from generate_series(1, 100) g");
    recman_ok(elsewhere.on(Some(&third), &["backup", "database", "--tag", "THIRD"]));
    // This host's cache still describes the second repository: it is discarded, said so, and
    // rebuilt from what the bucket holds now.
    let out = recman(r.on(None, &["list", "backup", "--json"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("was filled from another repository") && stderr.contains("discarded"),
        "{stderr}"
    );
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let tags: Vec<_> = listed.iter().map(|b| b["tag"].as_str().unwrap()).collect();
    assert_eq!(tags, ["THIRD"], "{listed:?}");
    // The rebuilt cache knows "main" as the third cluster, not the second.
    let err = recman_err(r.on(Some(&third), &["register", "database", "--name", "main"]));
    assert!(
        err.contains(&format!(
            "(system identifier {}) is already registered",
            third.system_identifier()
        )),
        "{err}"
    );
}

/// Acceptance 7, second half. REDUNDANCY 2 and three backups, seen by two hosts. Host B
/// deletes the second backup; host A's cache still lists all three, so counted from it the
/// first would be obsolete and deleting it would leave one backup. DELETE OBSOLETE on host A
/// lists the bucket first: it marks the second EXPIRED and keeps the first.
#[test]
fn delete_obsolete_from_a_cache_behind_the_bucket_keeps_the_redundancy() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let (_dir, path) = new_scratch_dir();
    let config = write_config(&server, &path);
    let url = format!("s3://{}/two-hosts", server.bucket());
    let host = |name: &str| RemoteRepo {
        config: config.clone(),
        cache: path.join(name),
        url: url.clone(),
    };
    let (a, b) = (host("cache-a"), host("cache-b"));
    recman_ok(a.on(None, &["create", "catalog"]));
    let c = a.cluster();
    recman_ok(a.on(Some(&c), &["register", "database", "--name", "main"]));
    recman_ok(a.on(None, &["configure", "retention-policy", "redundancy", "2"]));
    c.psql("create table t as select g from generate_series(1, 1000) g");
    for tag in ["ONE", "TWO", "THREE"] {
        recman_ok(a.on(Some(&c), &["backup", "database", "--tag", tag]));
    }
    let ids = backup_ids(&a);
    assert_eq!(ids.len(), 3, "{ids:?}");

    // Host B, its cache filled from the bucket, deletes the second backup.
    assert_eq!(backup_ids(&b), ids);
    recman_ok(b.on(
        None,
        &["--db", "main", "delete", "backup", &ids[1], "--noprompt"],
    ));
    assert_eq!(backup_ids(&b), vec![ids[0].clone(), ids[2].clone()]);
    // Host A's cache has not read the bucket since.
    assert_eq!(backup_ids(&a), ids, "host A's cache was meant to be behind");

    let out = recman_ok(a.on(None, &["--db", "main", "delete", "obsolete", "--noprompt"]));
    assert!(
        out.contains(&format!("backup {} is no longer whole", ids[1])),
        "{out}"
    );
    // Two backups remain in the bucket, as REDUNDANCY 2 promises: a third host sees them.
    let fresh = host("cache-c");
    assert_eq!(
        backup_ids(&fresh),
        vec![ids[0].clone(), ids[2].clone()],
        "delete obsolete on a stale cache broke the redundancy\n{out}"
    );
    c.stop();
}
