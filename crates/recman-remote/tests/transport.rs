//! The transport end to end on loopback with a test PKI: streamed payloads both ways, the
//! three refused client certificates, and an error in the middle of a stream.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use recman_error::ErrorKind;
use recman_remote::{
    Allow, Body, Call, CallOptions, Client, RemoteError, ResponseWriter, Service, ServiceError,
    TlsFiles, serve,
};
use recman_testkit::{STRANGER_CN, TestPki, wait_until};
use std::time::Duration;

struct Echo;

impl Service for Echo {
    fn call(&self, call: Call<'_>, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        match call.method {
            "echo" => {
                out.meta(&serde_json::json!({"peer": call.peer.cn}))
                    .map_err(|e| ServiceError::io("meta", &e))?;
                let mut buf = vec![0u8; 100_000];
                loop {
                    let n = call
                        .body
                        .read(&mut buf)
                        .map_err(|e| ServiceError::io("body", &e))?;
                    if n == 0 {
                        return Ok(());
                    }
                    out.write_all(&buf[..n])
                        .map_err(|e| ServiceError::io("reply", &e))?;
                }
            }
            "torn" => {
                out.write_all(&vec![7u8; 5 << 20])
                    .map_err(|e| ServiceError::io("reply", &e))?;
                Err(ServiceError::new(
                    ErrorKind::Corrupt,
                    "page 7 of base/5/1259 is torn; hint: run validate",
                ))
            }
            "missing" => Err(ServiceError::not_found("no file base/5/99")),
            other => Err(ServiceError::invalid(format!("no method {other}"))),
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    pki: TestPki,
    log: Arc<Mutex<Vec<String>>>,
    server: recman_remote::ServerHandle,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new(dir.path(), "backup-host");
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    let server = serve(
        "127.0.0.1:0",
        &TlsFiles {
            cert: pki.server_cert.clone(),
            key: pki.server_key.clone(),
            ca: pki.ca.clone(),
        },
        Allow::Only(vec![
            "backup-host".into(),
            "expired-client".into(),
            "foreign-client".into(),
        ]),
        Arc::new(Echo),
        Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string())),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        pki,
        log,
        server,
    }
}

impl Fixture {
    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.server.local_addr.port())
    }
    fn client(&self, cert: &std::path::Path, key: &std::path::Path) -> Client {
        Client::connect(
            &self.url(),
            &TlsFiles {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
                ca: self.pki.ca.clone(),
            },
        )
        .unwrap()
    }
}

/// Deterministic bytes that differ at every offset a mix-up could hide in.
fn payload(n: usize) -> Vec<u8> {
    let mut x = 0x9e3779b97f4a7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn transport_streams_refuses_and_reports() {
    let f = fixture();
    let good = f.client(&f.pki.client_cert, &f.pki.client_key);

    // Tens of MB each way, streamed from a reader, equal byte for byte.
    let sent = payload(40 << 20);
    let mut r = good
        .call(
            "echo",
            &serde_json::json!({}),
            Body::Reader(Box::new(std::io::Cursor::new(sent.clone()))),
            CallOptions::default(),
        )
        .unwrap();
    assert_eq!(r.meta["peer"], "backup-host");
    let mut back = Vec::new();
    r.read_to_end(&mut back).unwrap();
    assert_eq!(back.len(), sent.len());
    assert!(back == sent, "the echoed payload differs");

    // An error after 5 MiB of payload reaches the reader as that error, with its kind.
    let mut r = good
        .call(
            "torn",
            &serde_json::json!({}),
            Body::Empty,
            CallOptions::default(),
        )
        .unwrap();
    let mut got = Vec::new();
    let e = r
        .read_to_end(&mut got)
        .expect_err("the stream must fail, not end");
    let e = recman_remote::from_io(&e).expect("a transport error");
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(
        e.to_string().contains("page 7 of base/5/1259 is torn"),
        "{e}"
    );
    assert!(got.len() <= 5 << 20);

    // An error before any payload keeps its kind too.
    let e = good
        .call_meta("missing", &serde_json::json!({}), CallOptions::idempotent())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");

    // The three refused certificates: clear on the client and in the server's log.
    let cases = [
        (
            &f.pki.expired_cert,
            &f.pki.expired_key,
            "expired",
            "CN=expired-client",
        ),
        (
            &f.pki.foreign_cert,
            &f.pki.foreign_key,
            "not signed by the server's CA",
            "CN=foreign-client",
        ),
        (
            &f.pki.stranger_cert,
            &f.pki.stranger_key,
            "not on the server's allow-list",
            "CN=stranger",
        ),
    ];
    for (cert, key, client_says, server_says) in cases {
        let c = f.client(cert, key);
        let e = c
            .call_meta("echo", &serde_json::json!({}), CallOptions::idempotent())
            .unwrap_err();
        assert!(matches!(e, RemoteError::Refused(_)), "{e:?}");
        let m = e.to_string();
        assert!(
            m.contains(&format!(
                "the server at {} refused our certificate",
                f.url()
            )) && m.contains(client_says)
                && m.contains("; hint:"),
            "{m}"
        );
        // The server writes its line after sending the refusal, so the client can hold the
        // refusal before the line exists (seen in a CI run): wait for it.
        let logged = || {
            f.log.lock().unwrap().iter().any(|l| {
                l.contains("refused a connection from 127.0.0.1:") && l.contains(server_says)
            })
        };
        wait_until(
            &format!("the server's log line naming {server_says}"),
            Duration::from_secs(60),
            logged,
            || f.log.lock().unwrap().join("\n"),
        );
    }
    assert!(
        f.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(STRANGER_CN))
    );
}
