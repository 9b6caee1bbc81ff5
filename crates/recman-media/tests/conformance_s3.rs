//! The conformance suite against a real S3 server (s3s-fs), with 5 MiB parts so the large
//! object goes through a multipart upload.

use std::io::Write;
use std::sync::Arc;

use recman_media::conformance::{self, pattern};
use recman_media::s3::{S3Config, S3Media};
use recman_media::testkit::{S3Server, s3_server_or_skip};
use recman_media::{Media, MediaWriter};

fn media(server: &S3Server, prefix: &str) -> S3Media {
    let mut cfg = server.config(prefix);
    cfg.part_size = 5 << 20;
    cfg.parts_in_flight = 2;
    cfg.read_ahead = 1 << 20;
    S3Media::new(cfg).unwrap()
}

#[test]
fn s3_driver_passes_the_conformance_suite() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let m = media(&server, "repo/main");
    assert_eq!(m.describe(), "s3://recman-test/repo/main");
    m.check().unwrap();
    conformance::run(&m, "run1", 12 << 20);
    conformance::metered(&m, "metered");
    // The bucket root works as a repository too.
    conformance::run(&media(&server, ""), "run2", 6 << 20);
}

#[test]
fn aborted_and_dropped_multipart_uploads_leave_nothing() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let m = media(&server, "abort");
    let data = pattern(12 << 20, 3);
    let mut w = m.create("x/aborted").unwrap();
    w.write_all(&data).unwrap(); // Two parts are on their way or done.
    w.abort();
    let mut w = m.create("x/dropped").unwrap();
    w.write_all(&data).unwrap();
    drop(w);
    assert!(m.list("x/").unwrap().is_empty());
    assert_eq!(m.stat("x/aborted").unwrap(), None);
    // Nothing of the aborted uploads comes back when the same name is written again.
    m.put("x/aborted", b"small").unwrap();
    assert_eq!(m.get("x/aborted").unwrap(), b"small");
}

#[test]
fn an_object_of_exactly_one_part_and_of_several_round_trip() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let m = media(&server, "sizes");
    for (i, len) in [5 << 20, (5 << 20) + 1, 10 << 20, 15 << 20]
        .into_iter()
        .enumerate()
    {
        let data = pattern(len, i as u64);
        let name = format!("obj{i}");
        let mut w = m.create(&name).unwrap();
        w.write_all(&data).unwrap();
        assert_eq!(w.commit().unwrap(), len as u64);
        assert!(
            m.get(&name).unwrap() == data,
            "object of {len} bytes differs"
        );
    }
}

#[test]
fn two_threads_write_through_one_driver_at_once() {
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let m = Arc::new(media(&server, "threads"));
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = (0..2u64)
        .map(|t| {
            let (m, barrier) = (Arc::clone(&m), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let data = pattern(11 << 20, t);
                let mut w: Box<dyn MediaWriter> = m.create(&format!("t{t}/obj")).unwrap();
                barrier.wait();
                for chunk in data.chunks(1 << 20) {
                    w.write_all(chunk).unwrap();
                }
                w.commit().unwrap();
                data
            })
        })
        .collect();
    let written: Vec<Vec<u8>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (t, data) in written.iter().enumerate() {
        assert!(
            m.get(&format!("t{t}/obj")).unwrap() == *data,
            "thread {t}'s object differs"
        );
    }
    assert_eq!(m.list("t").unwrap().len(), 2);
}

#[test]
fn config_from_url_and_options() {
    let c = S3Config::from_url("s3://bucket/some/prefix/").unwrap();
    assert_eq!(
        (c.bucket.as_str(), c.prefix.as_str()),
        ("bucket", "some/prefix")
    );
    assert_eq!(c.url(), "s3://bucket/some/prefix");
    for bad in [
        "bucket/x",
        "s3://",
        "s3:///x",
        "s3://key:secret@bucket/x",
        "s3://bkt/a//c",
    ] {
        let e = S3Config::from_url(bad).unwrap_err().to_string();
        assert!(e.contains("hint"), "{bad}: {e}");
        assert!(!e.contains("secret@"), "{bad}: {e}");
    }
    let mut c = S3Config::from_url("s3://bucket").unwrap();
    c.set("part-size", "32M").unwrap();
    c.set("parts_in_flight", "8").unwrap();
    c.set("endpoint", "http://127.0.0.1:9000/").unwrap();
    c.set("virtual-hosted", "true").unwrap();
    c.set("secret-access-key", "hunter2-secret").unwrap();
    c.set("request-timeout", "45").unwrap();
    assert_eq!((c.part_size, c.parts_in_flight), (32 << 20, 8));
    assert!(c.allow_http && c.virtual_hosted);
    assert_eq!(c.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
    assert_eq!(c.request_timeout.as_secs(), 45);
    assert!(c.set("part-size", "1M").is_err(), "below the S3 minimum");
    assert!(c.set("no-such-key", "1").unwrap_err().hint().is_some());
    assert!(
        !format!("{c:?}").contains("hunter2"),
        "debug shows the secret"
    );

    let mut c = S3Config::from_url("s3://bucket/p").unwrap();
    let env = |k: &str| {
        match k {
            "AWS_ACCESS_KEY_ID" => Some("AKIDTEST"),
            "AWS_SECRET_ACCESS_KEY" => Some("topsecret"),
            "AWS_DEFAULT_REGION" => Some("eu-west-3"),
            "AWS_ENDPOINT_URL" => Some("https://aws.example"),
            "RECMAN_S3_ENDPOINT" => Some("http://minio:9000"),
            "RECMAN_S3_PART_SIZE" => Some("8M"),
            "AWS_CA_BUNDLE" => Some("/aws/ca.pem"),
            "RECMAN_S3_CA_FILE" => Some("/recman/ca.pem"),
            _ => None,
        }
        .map(str::to_string)
    };
    c.apply_env_from(env).unwrap();
    assert_eq!(c.access_key_id.as_deref(), Some("AKIDTEST"));
    assert_eq!(c.region, "eu-west-3");
    assert_eq!(c.endpoint.as_deref(), Some("http://minio:9000"));
    assert!(c.allow_http);
    assert_eq!(c.part_size, 8 << 20);
    assert_eq!(c.ca_file, Some("/recman/ca.pem".into()));
    // A CA file that cannot be read is named before any request.
    let e = S3Media::new(c.clone()).unwrap_err().to_string();
    assert!(e.contains("/recman/ca.pem") && e.contains("hint:"), "{e}");
    c.ca_file = None;
    let e = c
        .apply_env_from(|k| (k == "RECMAN_S3_PART_SIZE").then(|| "lots".to_string()))
        .unwrap_err();
    assert!(e.to_string().contains("RECMAN_S3_PART_SIZE"), "{e}");
    let m = S3Media::new(c).unwrap();
    assert_eq!(m.describe(), "s3://bucket/p");
    assert!(!format!("{m:?}").contains("topsecret"));
}
