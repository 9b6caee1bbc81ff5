//! Azurite, Microsoft's Azure Storage emulator (a Node.js program, `npm install azurite`),
//! as a real blob service for the tests of the Azure driver.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::azure::{AzureConfig, EMULATOR_ACCOUNT, EMULATOR_KEY};

const CONTAINER: &str = "recman-test";
const INSTALL_HINT: &str = "scripts/setup.sh installs it (npm install azurite into /var/cache/recman-tools/azurite), or set RECMAN_AZURITE to an azurite-blob program";

/// An azurite-blob process on 127.0.0.1 with its data in a private temporary directory,
/// killed and removed on drop.
pub struct Azurite {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Azurite {
    /// Where azurite-blob is: $RECMAN_AZURITE, then the tools cache scripts/setup.sh fills
    /// ($RECMAN_TOOLS_DIR or /var/cache/recman-tools), then the PATH.
    pub fn binary() -> Option<PathBuf> {
        super::prereq::find_tool(
            "RECMAN_AZURITE",
            "azurite/node_modules/.bin/azurite-blob",
            "azurite-blob",
        )
    }

    /// Starts the emulator with one empty container, [`Azurite::container`].
    pub fn start() -> io::Result<Azurite> {
        let bin = Azurite::binary().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("azurite-blob not found; {INSTALL_HINT}"),
            )
        })?;
        let dir = super::prereq::private_dir()?;
        let mut last = None;
        for _ in 0..5 {
            match spawn(&bin, &dir) {
                Ok((child, port)) => {
                    let a = Azurite { child, dir, port };
                    a.create_container(CONTAINER)?;
                    return Ok(a);
                }
                Err(e) => last = Some(e),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last.unwrap_or_else(|| io::Error::other("azurite did not start")))
    }

    /// "http://127.0.0.1:PORT/devstoreaccount1", the account's blob service.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{EMULATOR_ACCOUNT}", self.port)
    }

    /// "http://127.0.0.1:PORT", what AZURITE_BLOB_STORAGE_URL takes.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn container(&self) -> &str {
        CONTAINER
    }

    /// A configuration for the test container under `prefix`, with short timeouts.
    pub fn config(&self, prefix: &str) -> AzureConfig {
        let mut c = AzureConfig::new(CONTAINER, prefix);
        c.use_emulator = true;
        c.endpoint = Some(self.endpoint());
        c.tuning.allow_http = true;
        c.tuning.retry_timeout = Duration::from_secs(30);
        c.tuning.connect_timeout = Duration::from_secs(5);
        c.tuning.request_timeout = Duration::from_secs(30);
        c
    }

    /// Creates a container with one Shared Key signed request (object_store has no call
    /// for it).
    pub fn create_container(&self, name: &str) -> io::Result<()> {
        let date = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let version = "2021-08-06";
        let path = format!("/{EMULATOR_ACCOUNT}/{name}");
        let to_sign = format!(
            "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n/{EMULATOR_ACCOUNT}{path}\nrestype:container"
        );
        let key = STANDARD
            .decode(EMULATOR_KEY)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let tag = ring::hmac::sign(
            &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key),
            to_sign.as_bytes(),
        );
        let sig = STANDARD.encode(tag.as_ref());
        let req = format!(
            "PUT {path}?restype=container HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nx-ms-date: {date}\r\nx-ms-version: {version}\r\nAuthorization: SharedKey {EMULATOR_ACCOUNT}:{sig}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        );
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(req.as_bytes())?;
        let mut resp = String::new();
        s.read_to_string(&mut resp)?;
        let status = resp.split_whitespace().nth(1).unwrap_or("");
        if status == "201" {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "azurite refused to create container {name}: {}",
                resp.lines().next().unwrap_or("")
            )))
        }
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The emulator; a missing Azurite fails the test unless `RECMAN_TEST_SKIP` names `azure`,
/// and then None (the test returns, counted as skipped).
pub fn azurite_or_skip() -> Option<Azurite> {
    if Azurite::binary().is_none() {
        super::prereq::missing_prerequisite(
            "azure",
            &format!("azurite-blob not found; {INSTALL_HINT}"),
        );
        return None;
    }
    match Azurite::start() {
        Ok(a) => Some(a),
        Err(e) => panic!("cannot start azurite: {e}"),
    }
}

fn spawn(bin: &std::path::Path, dir: &std::path::Path) -> io::Result<(Child, u16)> {
    let port = super::prereq::pick_port()?;
    let mut cmd = Command::new(bin);
    cmd.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
        .current_dir(dir)
        .args(["--silent", "--skipApiVersionCheck", "--disableTelemetry"])
        .arg("--inMemoryPersistence");
    // Node takes a moment to load Azurite.
    let log = dir.join("azurite.log");
    let child = super::prereq::launch(&mut cmd, "azurite", port, &log, Duration::from_secs(30))?;
    Ok((child, port))
}
