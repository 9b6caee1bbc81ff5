//! Issue 16, acceptance 1 on a real S3 server (s3s-fs): an encrypted repository in a bucket,
//! the key from `key_file` in the config file. No object in the bucket holds the marker or
//! the passphrase; restore and recovery through archive-get reach the end of WAL.

mod common;

use common::*;
use recman_media::testkit::s3_server_or_skip;
use std::time::Duration;

const PASS: &str = "h16 s3 passphrase in a key file";
const MARKER: &str = "MARKER-s3-51c0ffee-secret-row";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn encrypted_s3_repository_hides_data_and_restores() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let (_t, dir) = new_scratch_dir();
    let key = dir.join("repo.key");
    std::fs::write(&key, format!("{PASS}\n")).unwrap();
    chown_to_cluster_user(&key);
    let config = dir.join("recman.toml");
    std::fs::write(
        &config,
        format!(
            "key_file = \"{}\"\n[s3]\nendpoint = \"{}\"\nregion = \"us-east-1\"\naccess-key-id = \"{}\"\nsecret-access-key = \"{}\"\n",
            key.display(),
            server.endpoint(),
            server.access_key(),
            server.secret_key()
        ),
    )
    .unwrap();
    chown_to_cluster_user(&config);
    let cache = dir.join("cache");
    let url = format!("s3://{}/enc", server.bucket());
    let base = |c: &Cluster| -> Vec<String> {
        vec![
            "--config".into(),
            path_str(&config).into(),
            "--repo".into(),
            url.clone(),
            "--repo-cache".into(),
            path_str(&cache).into(),
            "--pgdata".into(),
            path_str(&c.pgdata).into(),
            "--target".into(),
            c.conninfo(),
        ]
    };
    recman_ok([
        "--config",
        path_str(&config),
        "--repo",
        &url,
        "--repo-cache",
        path_str(&cache),
        "create",
        "catalog",
        "--encrypt",
    ]);
    let archive = format!(
        "'{} --config {} --repo {url} --repo-cache {} archive-push %p'",
        recman_bin().display(),
        config.display(),
        cache.display()
    );
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!("archive_command = {archive}"),
        ],
        ..Default::default()
    });
    let run = |args: &[&str]| {
        let mut v = base(&c);
        v.extend(args.iter().map(|s| s.to_string()));
        recman_ok(v)
    };
    run(&["register", "database", "--name", "main"]);
    c.psql(&format!(
        "create table secret(id int, v text); insert into secret select g, '{MARKER}' from generate_series(1, 200) g"
    ));
    run(&["backup", "database", "--compress", "none"]);
    c.psql(&format!(
        "insert into secret select g, '{MARKER}-after' from generate_series(1, 50) g"
    ));
    c.switch_wal_and_wait_archived();

    let bucket = server.data_dir().join(server.bucket()).join("enc");
    let objects = files_under(&bucket);
    assert!(
        objects
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".rmp")),
        "{objects:?}"
    );
    assert!(
        objects
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".rmw")),
        "{objects:?}"
    );
    for p in objects.iter().chain(files_under(&cache).iter()) {
        let b = std::fs::read(p).unwrap();
        assert!(
            !contains(&b, MARKER.as_bytes()),
            "{} holds the marker",
            p.display()
        );
        assert!(
            !contains(&b, PASS.as_bytes()),
            "{} holds the passphrase",
            p.display()
        );
    }

    let to = dir.join("restored");
    run(&["restore", "database", "--to", path_str(&to)]);
    let conf = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(
        conf.contains("archive-get") && !conf.contains(PASS),
        "{conf}"
    );
    c.stop();
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    let rows = r.psql(&format!(
        "select count(*) filter (where v = '{MARKER}') || '/' || count(*) filter (where v = '{MARKER}-after') from secret"
    ));
    assert_eq!(rows, "200/50", "recovery did not reach the end of WAL");
}
