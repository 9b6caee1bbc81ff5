//! The conformance suite against Azurite, the Azure Storage emulator, with 5 MiB blocks so
//! the large object goes through a block upload and a block list.

use std::io::Write;

use recman_media::azure::{self, AzureConfig};
use recman_media::conformance::{self, pattern};
use recman_media::s3::S3Media;
use recman_media::testkit::{Azurite, azurite_or_skip};
use recman_media::{Media, MediaWriter};

fn media(server: &Azurite, prefix: &str) -> S3Media {
    let mut cfg = server.config(prefix);
    cfg.tuning.part_size = 5 << 20;
    cfg.tuning.parts_in_flight = 2;
    cfg.tuning.read_ahead = 1 << 20;
    azure::open(cfg).unwrap()
}

#[test]
fn azure_driver_passes_the_conformance_suite() {
    let Some(server) = azurite_or_skip() else {
        return;
    };
    let m = media(&server, "repo/main");
    assert_eq!(m.describe(), "azure://recman-test/repo/main");
    m.check().unwrap();
    conformance::run(&m, "run1", 12 << 20);
    conformance::metered(&m, "metered");
    // The container root works as a repository too.
    conformance::run(&media(&server, ""), "run2", 6 << 20);

    // An aborted or dropped block upload leaves no blob behind.
    let data = pattern(12 << 20, 3);
    let mut w: Box<dyn MediaWriter> = m.create("x/aborted").unwrap();
    w.write_all(&data).unwrap();
    w.abort();
    drop(m.create("x/dropped").unwrap());
    assert!(m.list("x/").unwrap().is_empty());
    m.put("x/aborted", b"small").unwrap();
    assert_eq!(m.get("x/aborted").unwrap(), b"small");

    // A missing container is named as such, with a hint, not taken for an empty repository.
    let mut cfg = server.config("p");
    cfg.container = "no-such-container".into();
    let e = azure::open(cfg).unwrap().check().unwrap_err().to_string();
    assert!(e.contains("container does not exist"), "{e}");

    // A wrong key is refused with the Azure credentials hint.
    let mut cfg = server.config("p");
    cfg.access_key = Some("d3JvbmdrZXk=".into());
    cfg.tuning.max_retries = 0;
    let e = azure::open(cfg).unwrap().check().unwrap_err().to_string();
    assert!(e.contains("AZURE_STORAGE_ACCOUNT_KEY"), "{e}");
}

#[test]
fn azure_config_from_url_env_and_options() {
    let c = AzureConfig::from_url("azure://backups/pg/main/").unwrap();
    assert_eq!(
        (c.container.as_str(), c.tuning.prefix.as_str()),
        ("backups", "pg/main")
    );
    assert_eq!(c.url(), "azure://backups/pg/main");
    for bad in [
        "azure://",
        "azure://Upper/x",
        "azure://acct:key@c/x",
        "azure://bkt/a//c",
        "s3://b",
    ] {
        let e = AzureConfig::from_url(bad).unwrap_err().to_string();
        assert!(e.contains("hint"), "{bad}: {e}");
        assert!(!e.contains("key@"), "{bad}: {e}");
    }
    let mut c = AzureConfig::from_url("azure://backups").unwrap();
    let env = |k: &str| {
        match k {
            "AZURE_STORAGE_ACCOUNT_NAME" => Some("acct"),
            "AZURE_STORAGE_ACCESS_KEY" => Some("c2VjcmV0a2V5"),
            "AZURE_STORAGE_USE_EMULATOR" => Some("true"),
            "AZURITE_BLOB_STORAGE_URL" => Some("http://127.0.0.1:10999/"),
            "RECMAN_AZURE_PART_SIZE" => Some("8M"),
            _ => None,
        }
        .map(str::to_string)
    };
    c.apply_env_from(env).unwrap();
    assert_eq!(c.account.as_deref(), Some("acct"));
    assert!(c.use_emulator);
    assert_eq!(
        c.endpoint.as_deref(),
        Some("http://127.0.0.1:10999/devstoreaccount1")
    );
    assert_eq!(c.tuning.part_size, 8 << 20);
    assert!(
        !format!("{c:?}").contains("c2VjcmV0a2V5"),
        "debug shows the key"
    );
    c.set("parts_in_flight", "3").unwrap();
    assert_eq!(c.tuning.parts_in_flight, 3);
    assert!(c.set("region", "x").unwrap_err().hint().is_some());
    let e = c.set("use-emulator", "maybe").unwrap_err().to_string();
    assert!(e.contains("use-emulator"), "{e}");
}
