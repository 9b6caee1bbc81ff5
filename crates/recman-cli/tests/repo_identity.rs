//! Issue 41, acceptance 7 (first half): a remote repository's catalog cache is bound to the
//! repository's identity (the id in its marker), not only to its URL. A bucket emptied and
//! made a repository again at the same URL is never served from the old cache: a new cluster
//! registers under the old name, and no backup of the old repository is listed.

mod common;

use common::*;
use recman_media::Media;
use recman_media::s3::S3Media;
use recman_media::testkit::s3_server_or_skip;
use std::path::PathBuf;

struct Remote {
    config: PathBuf,
    cache: PathBuf,
    url: String,
}

impl Remote {
    fn args(&self, c: Option<&Cluster>, args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--config".into(),
            path_str(&self.config).into(),
            "--repo".into(),
            self.url.clone(),
            "--repo-cache".into(),
            path_str(&self.cache).into(),
        ];
        if let Some(c) = c {
            v.extend([
                "--pgdata".into(),
                path_str(&c.pgdata).into(),
                "--target".into(),
                c.conninfo(),
            ]);
        }
        v.extend(args.iter().map(|s| s.to_string()));
        v
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

#[test]
fn a_repository_made_again_at_the_same_url_is_not_served_from_the_old_cache() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let (_dir, path) = new_scratch_dir();
    let config = path.join("recman.toml");
    std::fs::write(
        &config,
        format!(
            "[s3]\nendpoint = \"{}\"\nregion = \"us-east-1\"\naccess-key-id = \"{}\"\nsecret-access-key = \"{}\"\n",
            server.endpoint(),
            server.access_key(),
            server.secret_key()
        ),
    )
    .unwrap();
    chown_to_cluster_user(&config);
    let r = Remote {
        config,
        cache: path.join("cache"),
        url: format!("s3://{}/reused", server.bucket()),
    };
    let media = S3Media::new(server.config("reused")).unwrap();

    recman_ok(r.args(None, &["create", "catalog"]));
    let first_id = r.marker_id(&media);
    let old = r.cluster();
    recman_ok(r.args(Some(&old), &["register", "database", "--name", "main"]));
    old.psql("create table t as select g from generate_series(1, 1000) g");
    recman_ok(r.args(Some(&old), &["backup", "database", "--tag", "OLD"]));
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(r.args(None, &["list", "backup", "--json"]))).unwrap();
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
    let err = recman_err(r.args(None, &["list", "backup"]));
    assert!(err.contains("not a recman repository"), "{err}");

    let out = recman_ok(r.args(None, &["create", "catalog"]));
    assert!(out.contains("created repository and catalog"), "{out}");
    let second_id = r.marker_id(&media);
    assert_ne!(first_id, second_id);

    // A new cluster registers under the old name, and the old backup is gone from the list.
    let new = r.cluster();
    recman_ok(r.args(Some(&new), &["register", "database", "--name", "main"]));
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&recman_ok(r.args(None, &["list", "backup", "--json"]))).unwrap();
    assert!(
        listed.is_empty(),
        "backups of the old repository: {listed:?}"
    );

    // The same again when the cache is found stale at open rather than at create: another
    // host empties the bucket and creates the repository anew with its own cache.
    new.psql("create table n as select g from generate_series(1, 100) g");
    recman_ok(r.args(Some(&new), &["backup", "database", "--tag", "SECOND"]));
    new.stop();
    for o in media.list("").unwrap() {
        media.remove(&o.name).unwrap();
    }
    let (_other, other_path) = new_scratch_dir();
    let elsewhere = Remote {
        config: r.config.clone(),
        cache: other_path.join("cache"),
        url: r.url.clone(),
    };
    recman_ok(elsewhere.args(None, &["create", "catalog"]));
    let third = elsewhere.cluster();
    recman_ok(elsewhere.args(Some(&third), &["register", "database", "--name", "main"]));
    third.psql("create table x as select g from generate_series(1, 100) g");
    recman_ok(elsewhere.args(Some(&third), &["backup", "database", "--tag", "THIRD"]));
    // This host's cache still describes the second repository: it is discarded, said so, and
    // rebuilt from what the bucket holds now.
    let out = recman(r.args(None, &["list", "backup", "--json"]));
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
    let err = recman_err(r.args(Some(&third), &["register", "database", "--name", "main"]));
    assert!(
        err.contains(&format!(
            "(system identifier {}) is already registered",
            third.system_identifier()
        )),
        "{err}"
    );
}
