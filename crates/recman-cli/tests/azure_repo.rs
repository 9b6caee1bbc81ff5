//! Repositories in the cloud object stores besides S3, each on its emulator started by the
//! test: archive-push, backup, list, validate, restore equal.
//! - Issue 19, acceptance 5: Azure Blob Storage (Azurite), the account in the config file's
//!   [azure] section.
//! - Issue 41, acceptance 5: Google Cloud Storage (fake-gcs-server), a service account key
//!   file and the emulator's address in the config file's [gcs] section.

mod common;
mod flows;

use std::path::Path;

use common::*;
use flows::start_and_compare;
use recman_media::Media;
use recman_media::azure::EMULATOR_KEY;
use recman_media::testkit::{azurite_or_skip, fake_gcs_or_skip};

#[test]
fn backup_archive_validate_and_restore_on_an_azure_repository() {
    let Some(server) = azurite_or_skip() else {
        return;
    };
    let (_dir, path) = new_scratch_dir();
    let config = path.join("recman.toml");
    std::fs::write(
        &config,
        format!(
            "[azure]\naccount = \"devstoreaccount1\"\naccess-key = \"{EMULATOR_KEY}\"\nendpoint = \"{}\"\npart-size = \"5M\"\n",
            server.endpoint()
        ),
    )
    .unwrap();
    let url = format!("azure://{}/prod/pg", server.container());
    let m = recman_media::azure::open(server.config("prod/pg")).unwrap();
    round_trip(&path, &config, &url, &m, Some(EMULATOR_KEY));
}

#[test]
fn backup_archive_validate_and_restore_on_a_gcs_repository() {
    let Some(server) = fake_gcs_or_skip() else {
        return;
    };
    let (_dir, path) = new_scratch_dir();
    let key = server.key_file(&path).unwrap();
    chown_to_cluster_user(&key);
    let config = path.join("recman.toml");
    std::fs::write(
        &config,
        format!(
            "[gcs]\ncredentials-file = \"{}\"\nendpoint = \"{}\"\npart-size = \"5M\"\n",
            key.display(),
            server.endpoint()
        ),
    )
    .unwrap();
    let url = format!("gs://{}/prod/pg", server.bucket());
    let m = recman_media::gcs::open(server.config("prod/pg")).unwrap();
    round_trip(&path, &config, &url, &m, None);
}

/// Creates the catalog at `url`, archives WAL there, backs up a pgbench cluster on two
/// channels, finds the pieces, manifest and segment as objects of `m`, validates, restores and
/// compares. `secret` must not reach the restored cluster's configuration.
fn round_trip(path: &Path, config: &Path, url: &str, m: &dyn Media, secret: Option<&str>) {
    chown_to_cluster_user(config);
    let cache = path.join("cache");
    let common = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["--config", path_str(config), "--repo", url]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(["--repo-cache".into(), path_str(&cache).into()]);
        v.extend(args.iter().map(|s| s.to_string()));
        v
    };
    recman_ok(common(&["create", "catalog"]));
    let archive = object_store_archive_command(url, config, &cache);
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!("archive_command = {archive}"),
        ],
        ..Default::default()
    });
    let run = |args: &[&str]| {
        let mut v = vec!["--pgdata", path_str(&c.pgdata), "--target"];
        let conninfo = c.conninfo();
        v.push(&conninfo);
        v.extend_from_slice(args);
        recman_ok(common(&v))
    };
    run(&["register", "database", "--name", "main"]);
    c.pgbench_init(1);
    c.psql("create table marker(x int); insert into marker values (1)");
    let out = run(&[
        "backup",
        "database",
        "--channels",
        "2",
        "--tag",
        "CLOUDFULL",
    ]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    c.psql("insert into marker values (2)");
    let segment = c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();

    // The pieces, the manifest and the archived segment are objects in the store, and some
    // (a 16 MiB segment at least) were larger than the 5M part, so went up in parts.
    let listed = m.list("").unwrap();
    assert!(listed.iter().any(|o| o.size > 5 << 20), "{listed:?}");
    let objects: Vec<String> = listed.into_iter().map(|o| o.name).collect();
    assert!(
        objects.iter().any(|o| o.ends_with("manifest.json"))
            && objects.iter().any(|o| o.ends_with(".rmp"))
            && objects
                .iter()
                .any(|o| o.contains(segment.as_str()) && o.ends_with(".rmw")),
        "{objects:?}"
    );
    let b: Vec<serde_json::Value> =
        serde_json::from_str(&run(&["list", "backup", "--json"])).unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["status"], "AVAILABLE");
    let wal: Vec<serde_json::Value> =
        serde_json::from_str(&run(&["list", "archivelog", "--json"])).unwrap();
    assert!(wal.iter().any(|w| w["name"] == segment.as_str()), "{wal:?}");
    let out = run(&["validate", "backup", "CLOUDFULL"]);
    assert!(out.contains("backup is intact"), "{out}");

    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    run(&["restore", "database", "--to", path_str(&to)]);
    let conf = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(
        conf.contains(url) && secret.is_none_or(|s| !conf.contains(s)),
        "restore_command must name the repository and carry no key:\n{conf}"
    );
    let r = start_and_compare(&to, &expected);
    assert_eq!(
        r.psql("select string_agg(x::text, ',' order by x) from marker"),
        "1,2"
    );
    r.stop();
    c.stop();
}
