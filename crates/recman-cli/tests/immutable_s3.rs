//! Issue 41, acceptance 1 and 2, on moto's S3 server with Object Lock: an immutable repository
//! survives an attacker holding its keys (every object deleted, every manifest overwritten) and
//! restores equal as of a time before; locked versions cannot be removed, by recman nor by a
//! direct DeleteObject of a version, and DELETE OBSOLETE keeps them, says until when, exits 0,
//! and removes them once their lock ends.

mod common;
mod flows;

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use common::*;
use flows::start_and_compare;
use recman_media::testkit::Moto;

/// One repository of the test: [`RemoteRepo`] and what this test asks of it.
trait Repo {
    fn archive_command(&self) -> String;
    fn backups(&self, extra: &[&str]) -> Vec<serde_json::Value>;
}

impl Repo for RemoteRepo {
    fn archive_command(&self) -> String {
        object_store_archive_command(&self.url, &self.config, &self.cache)
            .trim_matches('\'')
            .to_string()
    }

    fn backups(&self, extra: &[&str]) -> Vec<serde_json::Value> {
        let mut a = extra.to_vec();
        a.extend(["list", "backup", "--json"]);
        serde_json::from_str(&self.ok(&a)).unwrap()
    }
}

fn lock_until(b: &serde_json::Value) -> DateTime<Utc> {
    let until = b["lock"]["until"]
        .as_str()
        .unwrap_or_else(|| panic!("backup {} shows no lock: {b}", b["id"]));
    DateTime::parse_from_rfc3339(until)
        .unwrap()
        .with_timezone(&Utc)
}

#[test]
fn immutable_repository_survives_an_attacker_and_keeps_locked_versions() {
    let (_t, dir) = new_scratch_dir();
    let moto = Moto::start(&dir.join("moto.log"));
    moto.admin("recman-lock").create_bucket(true).unwrap();
    moto.admin("recman-plain").create_bucket(false).unwrap();
    let config = dir.join("recman.toml");
    let mut toml = String::from("[s3]\n");
    for (k, v) in moto.settings() {
        toml.push_str(&format!("{k} = \"{v}\"\n"));
    }
    std::fs::write(&config, toml).unwrap();
    chown_to_cluster_user(&config);
    let repo = |name: &str, bucket: &str| RemoteRepo {
        url: format!("s3://{bucket}/{name}"),
        config: config.clone(),
        cache: dir.join(format!("cache-{name}")),
    };

    // Without Object Lock on the bucket, nothing is made, and the hint says what is missing.
    let plain = repo("pg", "recman-plain");
    let err = plain.err(&["create", "catalog", "--immutable"]);
    assert!(err.contains("Object Lock"), "{err}");
    assert!(
        moto.admin("recman-plain")
            .list_versions("")
            .unwrap()
            .is_empty(),
        "a refused create left objects behind"
    );

    // "attack": locked for a day; "short": for 0.001 day (86.4 s), so its locks end in the test.
    let attack = repo("attack", "recman-lock");
    let short = repo("short", "recman-lock");
    let out = attack.ok(&[
        "create",
        "catalog",
        "--immutable",
        "--lock-mode",
        "compliance",
    ]);
    assert!(out.contains("COMPLIANCE"), "{out}");
    short.ok(&["create", "catalog", "--immutable", "--lock-days", "0.001"]);

    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!(
                "archive_command = '{} && {}'",
                attack.archive_command(),
                short.archive_command()
            ),
        ],
        ..Default::default()
    });
    let target = |r: &RemoteRepo, extra: &[&str]| {
        let conninfo = c.conninfo();
        let mut a = vec!["--pgdata", path_str(&c.pgdata), "--target", &conninfo];
        a.extend_from_slice(extra);
        r.ok(&a)
    };
    for r in [&attack, &short] {
        target(r, &["register", "database", "--name", "main"]);
    }
    c.psql("create table t(id int primary key, v text); insert into t select g, md5(g::text) from generate_series(1, 2000) g");
    target(&attack, &["backup", "database", "--tag", "A1"]);
    target(&short, &["backup", "database", "--tag", "B1"]);
    c.psql("update t set v = v || 'x' where id % 7 = 0");
    target(&short, &["backup", "database", "--tag", "B2"]);

    // Acceptance 2, inside the locks: nothing locked goes, by recman or by a direct call.
    let listed = short.backups(&[]);
    let b1 = listed.iter().find(|b| b["tag"] == "B1").unwrap().clone();
    let b1_id = b1["id"].as_str().unwrap().to_string();
    let b1_until = lock_until(&b1);
    assert!(b1_until > Utc::now(), "{b1}");
    assert_eq!(b1["lock"]["mode"], "COMPLIANCE", "{b1}");
    let text = short.ok(&["list", "backup"]);
    assert!(text.contains("Lock: COMPLIANCE until"), "{text}");
    let admin = moto.admin("recman-lock");
    let b1_prefix = format!("short/main/backup/{b1_id}/");
    let b1_versions = admin.list_versions(&b1_prefix).unwrap();
    assert!(!b1_versions.is_empty());
    for v in &b1_versions {
        let r = admin.retention(&v.key, &v.version_id).unwrap();
        assert!(
            r.is_some_and(|r| r.until >= b1_until - chrono::Duration::seconds(1)),
            "{} is not locked with its backup: {r:?}",
            v.key
        );
    }
    let manifest = b1_versions
        .iter()
        .find(|v| v.key.ends_with("manifest.json"))
        .unwrap();
    let denied = admin
        .delete_version(&manifest.key, &manifest.version_id)
        .unwrap_err()
        .to_string();
    assert!(denied.contains("AccessDenied"), "{denied}");
    let out = short.ok(&["delete", "backup", b1_id.as_str(), "--noprompt"]);
    assert!(
        out.contains("held by lock") && out.contains(&b1_id),
        "{out}"
    );
    let out = short.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    assert!(
        out.contains(&format!("held by lock: main/backup/{b1_id}/manifest.json"))
            && out.contains("COMPLIANCE until"),
        "{out}"
    );
    assert!(!out.contains("deleted backup set"), "{out}");
    assert_eq!(admin.list_versions(&b1_prefix).unwrap(), b1_versions);
    assert!(short.backups(&[]).iter().any(|b| b["id"] == b1_id.as_str()));

    // CHANGE … KEEP extends the lock of every object of the backup.
    let keep = (Utc::now() + chrono::Duration::days(2)).to_rfc3339_opts(SecondsFormat::Secs, true);
    attack.ok(&["change", "backup", "A1", "--keep-until", keep.as_str()]);
    let a1 = attack.backups(&[]).remove(0);
    assert!(
        lock_until(&a1) > Utc::now() + chrono::Duration::days(1),
        "{a1}"
    );

    // Acceptance 1: data after the backups, archived; then the attack.
    c.psql("insert into t select g, 'after' from generate_series(2001, 2100) g");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    c.stop();
    std::thread::sleep(Duration::from_millis(1500));
    let before = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
    std::thread::sleep(Duration::from_millis(1500));
    let thief = recman_media::open_spec(&attack.url, &moto.settings(), &[]).unwrap();
    let objects = thief.list("").unwrap();
    assert!(
        objects.iter().any(|o| o.name.ends_with(".rmw")),
        "{objects:?}"
    );
    for o in &objects {
        if o.name.ends_with("manifest.json") {
            thief.put(&o.name, b"{\"forged\": true}").unwrap();
        }
    }
    for o in &objects {
        thief.remove(&o.name).unwrap();
    }
    assert!(thief.list("").unwrap().is_empty());
    let err = attack.err(&["list", "backup"]);
    assert!(
        err.contains("not a recman repository") && err.contains("--repo-as-of"),
        "{err}"
    );

    let at = before.as_str();
    let listed = attack.backups(&["--repo-as-of", at]);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["tag"], "A1");
    assert!(lock_until(&listed[0]) > Utc::now() + chrono::Duration::days(1));
    let refused = attack.err(&["--repo-as-of", at, "backup", "database"]);
    assert!(refused.contains("--repo-as-of"), "{refused}");
    let to = dir.join("restored");
    attack.ok(&[
        "--repo-as-of",
        at,
        "restore",
        "database",
        "--to",
        path_str(&to),
    ]);
    let r = start_and_compare(&to, &expected);
    r.stop();

    // Acceptance 2, after the locks: DELETE OBSOLETE removes every version of B1.
    let wait = b1_until - Utc::now() + chrono::Duration::seconds(2);
    if let Ok(w) = wait.to_std() {
        std::thread::sleep(w);
    }
    let out = short.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    assert!(
        out.contains("deleted backup set") && out.contains(&b1_id),
        "{out}"
    );
    assert!(!short.backups(&[]).iter().any(|b| b["id"] == b1_id.as_str()));
    assert!(admin.list_versions(&b1_prefix).unwrap().is_empty());
}
