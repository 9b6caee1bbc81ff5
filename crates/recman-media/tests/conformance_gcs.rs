//! The conformance suite against fake-gcs-server, a Google Cloud Storage emulator, with
//! 5 MiB chunks so the large object goes through a resumable upload session.

use std::io::Write;

use recman_media::conformance::{self, pattern};
use recman_media::gcs::{self, GcsConfig};
use recman_media::s3::S3Media;
use recman_media::testkit::{FakeGcs, FaultProxy, Faults, fake_gcs_or_skip};
use recman_media::{Media, MediaWriter};

fn media(server: &FakeGcs, prefix: &str) -> S3Media {
    let mut cfg = server.config(prefix);
    cfg.tuning.part_size = 5 << 20;
    cfg.tuning.read_ahead = 1 << 20;
    gcs::open(cfg).unwrap()
}

#[test]
fn gcs_driver_passes_the_conformance_suite() {
    let Some(server) = fake_gcs_or_skip() else {
        return;
    };
    let m = media(&server, "repo/main");
    assert_eq!(m.describe(), "gs://recman-test/repo/main");
    m.check().unwrap();
    conformance::run(&m, "run1", 12 << 20);
    conformance::metered(&m, "metered");
    // The bucket root works as a repository too, and an object of whole chunks ends with a
    // full last chunk.
    conformance::run(&media(&server, ""), "run2", 10 << 20);

    // An aborted or dropped resumable upload leaves no object behind.
    let data = pattern(12 << 20, 3);
    let mut w: Box<dyn MediaWriter> = m.create("x/aborted").unwrap();
    w.write_all(&data).unwrap();
    w.abort();
    let mut w = m.create("x/dropped").unwrap();
    w.write_all(&data[..6 << 20]).unwrap();
    drop(w);
    assert!(m.list("x/").unwrap().is_empty());
    m.put("x/aborted", b"small").unwrap();
    assert_eq!(m.get("x/aborted").unwrap(), b"small");

    // A key file given as credentials-file is read (one that turns OAuth off, as an
    // emulator's), and objects are read back through it.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = server.config("keyed");
    cfg.anonymous = false;
    cfg.credentials_file = Some(server.key_file(dir.path()).unwrap());
    let keyed = gcs::open(cfg).unwrap();
    keyed.put("a", b"through a key file").unwrap();
    assert_eq!(keyed.get("a").unwrap(), b"through a key file");

    // A missing bucket is named as such, with a hint, by the check before a command and on
    // the first write.
    let mut cfg = server.config("p");
    cfg.bucket = "no-such-bucket".into();
    cfg.tuning.max_retries = 0;
    let missing = gcs::open(cfg).unwrap();
    let e = missing.check().unwrap_err().to_string();
    assert!(
        e.contains("bucket does not exist") && e.contains("gcloud"),
        "{e}"
    );
    let e = missing.put("a", b"x").unwrap_err().to_string();
    assert!(
        e.contains("bucket does not exist") && e.contains("hint"),
        "{e}"
    );

    // A key file that is not there fails at set-up, naming the setting.
    let mut cfg = server.config("p");
    cfg.anonymous = false;
    cfg.credentials_file = Some(dir.path().join("missing.json"));
    let e = gcs::open(cfg).unwrap_err().to_string();
    assert!(e.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{e}");
}

/// The last chunk reaches the service, which commits the object, but its answer is lost: the
/// writer finds the object with its size and CRC32C and reports the commit done, while a
/// different object under that name is not taken for it.
#[test]
fn a_lost_answer_to_the_last_chunk_is_recognised() {
    let Some(server) = fake_gcs_or_skip() else {
        return;
    };
    // The session's chunks go to URLs with its upload_id: the third one's answer is cut.
    let cut = Faults::CutWrites {
        path: "upload_id=",
        after: 2,
    };
    let proxy = FaultProxy::start(&server.endpoint(), cut, 7).unwrap();
    let mut cfg = server.config("lost");
    cfg.endpoint = Some(proxy.endpoint());
    cfg.tuning.part_size = 5 << 20;
    cfg.tuning.max_retries = 0;
    let through = gcs::open(cfg).unwrap();
    let direct = media(&server, "lost");
    let data = pattern(12 << 20, 9);
    let mut w = through.create("obj").unwrap();
    w.write_all(&data).unwrap();
    assert_eq!(w.commit().unwrap(), data.len() as u64);
    assert_eq!(proxy.cuts(), 1);
    assert!(direct.get("obj").unwrap() == data, "the object differs");

    // The last chunk is refused and never arrives: the object of the same size already
    // there (the one above) is not taken for this one, and stays as it was.
    proxy.set_faults(Faults::DenyWrites {
        path: "upload_id=",
        after: 2,
    });
    let mut w = through.create("obj").unwrap();
    w.write_all(&pattern(12 << 20, 10)).unwrap();
    let e = w.commit().unwrap_err();
    assert_eq!(proxy.denials(), 1);
    assert!(e.to_string().contains("commit"), "{e}");
    assert!(direct.get("obj").unwrap() == data, "the object changed");
}

#[test]
fn gcs_config_from_url_env_and_options() {
    let c = GcsConfig::from_url("gs://backups/pg/main/").unwrap();
    assert_eq!(
        (c.bucket.as_str(), c.tuning.prefix.as_str()),
        ("backups", "pg/main")
    );
    assert_eq!(c.url(), "gs://backups/pg/main");
    assert_eq!(c.base_url(), gcs::DEFAULT_ENDPOINT);
    assert!(GcsConfig::from_url("gs://my.backups.example.com").is_ok());
    for bad in [
        "gs://",
        "gs://Upper/x",
        "gs://-dash/x",
        "gs://user:key@b/x",
        "gs://bkt/a//c",
        "s3://bkt",
    ] {
        let e = GcsConfig::from_url(bad).unwrap_err().to_string();
        assert!(e.contains("hint"), "{bad}: {e}");
        assert!(!e.contains("key@"), "{bad}: {e}");
    }
    let mut c = GcsConfig::from_url("gs://backups").unwrap();
    let env = |k: &str| {
        match k {
            "STORAGE_EMULATOR_HOST" => Some("127.0.0.1:4443"),
            "RECMAN_GCS_PART_SIZE" => Some("8M"),
            "RECMAN_GCS_CREDENTIALS" => Some("/etc/recman/gcs.json"),
            _ => None,
        }
        .map(str::to_string)
    };
    c.apply_env_from(env).unwrap();
    assert_eq!(c.endpoint.as_deref(), Some("http://127.0.0.1:4443"));
    assert!(c.anonymous && c.tuning.allow_http);
    assert_eq!(c.tuning.part_size, 8 << 20);
    assert_eq!(
        c.credentials_file.as_deref(),
        Some(std::path::Path::new("/etc/recman/gcs.json"))
    );
    c.set("anonymous", "false").unwrap();
    assert!(!c.anonymous);
    assert!(c.set("region", "x").unwrap_err().hint().is_some());
    let e = c
        .set("credentials_file", "{\"private_key\": \"...\"}")
        .unwrap_err();
    assert!(!e.to_string().contains("private_key"), "{e}");
    // Chunks are multiples of 256 KiB, or the service refuses them.
    c.set("part-size", "6000000").unwrap();
    let e = gcs::open(c).unwrap_err().to_string();
    assert!(e.contains("256K"), "{e}");
}
