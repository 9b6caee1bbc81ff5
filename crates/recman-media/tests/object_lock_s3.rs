//! Issue 41 at the driver: Object Lock writes, the refusal to overwrite or to remove a locked
//! object, removal of every version once the lock ends, extending a lock, and the bucket read
//! as of a time, against moto's S3 server (a missing moto_server fails the test).

use std::io::Write;
use std::time::Duration;

use chrono::Utc;
use recman_media::s3::S3Media;
use recman_media::testkit::Moto;
use recman_media::{LockMode, Media, Retention};

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn locked_writes_refusals_removal_and_reading_as_of_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let moto = Moto::start(&dir.path().join("moto.log"));
    moto.admin("media-lock").create_bucket(true).unwrap();
    moto.admin("media-plain").create_bucket(false).unwrap();
    let open = |url: &str| {
        let mut cfg = moto.config(url);
        cfg.set("part-size", "5M").unwrap();
        S3Media::new(cfg).unwrap()
    };
    let plain = open("s3://media-plain/r");
    assert!(!plain.object_lock().unwrap().bucket_lock_enabled().unwrap());

    let armed = open("s3://media-lock/r");
    let lock = armed.object_lock().unwrap();
    assert!(lock.bucket_lock_enabled().unwrap());
    let until = Utc::now() + chrono::Duration::seconds(8);
    lock.lock_writes(Some(Retention {
        mode: LockMode::Compliance,
        until,
    }));
    armed.put("a", b"first").unwrap();
    let big = pattern(11 << 20);
    let mut w = armed.create("big").unwrap();
    w.write_all(&big).unwrap();
    w.commit().unwrap();
    for name in ["a", "big"] {
        let r = lock.retention(name).unwrap().unwrap();
        assert_eq!(r.mode, LockMode::Compliance);
        assert!(
            r.until >= until - chrono::Duration::seconds(1),
            "{name}: {r}"
        );
    }
    let err = armed.put("a", b"second").unwrap_err().to_string();
    assert!(
        err.contains(" a:") && err.contains("never overwrites"),
        "{err}"
    );
    let err = armed.remove("a").unwrap_err().to_string();
    assert!(err.contains("locked (COMPLIANCE until"), "{err}");
    let later = Utc::now() + chrono::Duration::seconds(60);
    lock.extend(
        "big",
        Retention {
            mode: LockMode::Compliance,
            until: later,
        },
    )
    .unwrap();
    assert!(lock.retention("big").unwrap().unwrap().until >= later - chrono::Duration::seconds(1));

    // What an attacker with the same keys does through a driver that is not armed.
    std::thread::sleep(Duration::from_millis(1100));
    let before = Utc::now();
    std::thread::sleep(Duration::from_millis(1100));
    let thief = open("s3://media-lock/r");
    thief.put("a", b"forged").unwrap();
    thief.put("new", b"planted").unwrap();
    thief.remove("big").unwrap();
    assert_eq!(thief.get("a").unwrap(), b"forged");
    assert_eq!(thief.stat("big").unwrap(), None);

    let past = armed.as_of(before).unwrap();
    let names: Vec<String> = past.list("").unwrap().into_iter().map(|o| o.name).collect();
    assert_eq!(names, ["a", "big"]);
    assert_eq!(past.get("a").unwrap(), b"first");
    assert_eq!(past.get("big").unwrap(), big);
    assert_eq!(past.stat("new").unwrap(), None);
    let err = past.put("x", b"y").err().unwrap().to_string();
    assert!(err.contains("--repo-as-of"), "{err}");
    let err = past.remove("a").unwrap_err().to_string();
    assert!(err.contains("--repo-as-of"), "{err}");

    // Once the lock ends, removing takes every version and delete marker of the key.
    let wait = until - Utc::now() + chrono::Duration::milliseconds(1500);
    if let Ok(w) = wait.to_std() {
        std::thread::sleep(w);
    }
    assert!(armed.remove("a").unwrap());
    assert!(
        moto.admin("media-lock")
            .list_versions("r/a")
            .unwrap()
            .is_empty()
    );
    // "big" was extended: still held.
    assert!(armed.remove("big").is_err());
}
