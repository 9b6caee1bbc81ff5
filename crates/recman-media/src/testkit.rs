//! Test helpers shared by every crate's tests: a real local S3 server (s3s-fs) and a proxy
//! that injects faults in front of it. Nothing here is used by recman itself.

mod azurite;
mod fake_gcs;
mod fault_proxy;
mod moto;
mod prereq;
mod tls_front;

pub use azurite::{Azurite, azurite_or_skip};
pub use fake_gcs::{FakeGcs, fake_gcs_or_skip};
pub use fault_proxy::{FaultProxy, Faults};
pub use moto::Moto;
pub use prereq::{missing_prerequisite, pick_port, skip_requested, skipped_part};
pub use tls_front::TlsFront;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use crate::s3::S3Config;
use prereq::private_dir;

const ACCESS_KEY: &str = "recmantestkey";
const SECRET_KEY: &str = "recmantestsecret0123456789abcdef";
const BUCKET: &str = "recman-test";
const INSTALL_HINT: &str =
    "cargo install s3s-fs@0.14.1 --locked --features binary --root .tools (in the workspace root)";

/// An s3s-fs process on 127.0.0.1 with its data in a private temporary directory, killed and
/// removed on drop.
pub struct S3Server {
    child: Child,
    dir: PathBuf,
    endpoint: String,
}

impl S3Server {
    /// Where the s3s-fs binary is: $RECMAN_S3S_FS, then `.tools/bin/s3s-fs` of the workspace,
    /// then the PATH.
    pub fn binary() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("RECMAN_S3S_FS") {
            return Some(PathBuf::from(p)).filter(|p| p.is_file());
        }
        let starts = [
            std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
            std::env::current_dir().ok(),
            Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
        ];
        for start in starts.into_iter().flatten() {
            if let Some(root) = workspace_root(&start) {
                let p = root.join(".tools/bin/s3s-fs");
                if p.is_file() {
                    return Some(p);
                }
            }
        }
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("s3s-fs"))
                .find(|p| p.is_file())
        })
    }

    /// Starts a server with one empty bucket, [`S3Server::bucket`].
    pub fn start() -> io::Result<S3Server> {
        let bin = S3Server::binary().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("s3s-fs not found; {INSTALL_HINT}"),
            )
        })?;
        let dir = private_dir()?;
        let data = dir.join("data");
        std::fs::create_dir_all(data.join(BUCKET))?;
        // The free port is only free until the server binds it; another test may take it in
        // between, so a server that exits at once gets another port.
        let mut last = None;
        for _ in 0..5 {
            match spawn(&bin, &dir, &data) {
                Ok((child, addr)) => {
                    return Ok(S3Server {
                        child,
                        dir,
                        endpoint: format!("http://{addr}"),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last.unwrap_or_else(|| io::Error::other("s3s-fs did not start")))
    }

    /// "http://127.0.0.1:PORT".
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// "127.0.0.1:PORT", for a proxy in front of the server.
    pub fn addr(&self) -> &str {
        self.endpoint.trim_start_matches("http://")
    }

    pub fn bucket(&self) -> &str {
        BUCKET
    }

    pub fn access_key(&self) -> &str {
        ACCESS_KEY
    }

    pub fn secret_key(&self) -> &str {
        SECRET_KEY
    }

    /// The server's data directory: one directory per bucket.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Adds a bucket (s3s-fs keeps a bucket as a directory).
    pub fn create_bucket(&self, name: &str) -> io::Result<()> {
        std::fs::create_dir_all(self.data_dir().join(name))
    }

    /// A configuration for this server's bucket under `prefix`, with short timeouts so
    /// failing tests fail fast.
    pub fn config(&self, prefix: &str) -> S3Config {
        let mut c = S3Config::new(BUCKET, prefix);
        c.endpoint = Some(self.endpoint.clone());
        c.allow_http = true;
        c.access_key_id = Some(ACCESS_KEY.to_string());
        c.secret_access_key = Some(SECRET_KEY.to_string());
        c.retry_timeout = Duration::from_secs(30);
        c.connect_timeout = Duration::from_secs(5);
        c.request_timeout = Duration::from_secs(30);
        c
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        // SIGTERM takes s3s-fs up to two seconds; its data is thrown away anyway.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server; a missing s3s-fs fails the test unless `RECMAN_TEST_SKIP` names `s3`, and then
/// None (the test returns, counted as skipped). See [`missing_prerequisite`].
pub fn s3_server_or_skip() -> Option<S3Server> {
    if S3Server::binary().is_none() {
        missing_prerequisite(
            "s3",
            &format!("s3s-fs not found; install it with: {INSTALL_HINT}"),
        );
        return None;
    }
    match S3Server::start() {
        Ok(s) => Some(s),
        Err(e) => panic!("cannot start s3s-fs: {e}"),
    }
}

fn spawn(bin: &Path, dir: &Path, data: &Path) -> io::Result<(Child, SocketAddr)> {
    let addr = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, prereq::pick_port()?));
    let mut cmd = Command::new(bin);
    cmd.args(["--host", "127.0.0.1", "--port", &addr.port().to_string()])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .arg(data);
    let log = dir.join("s3s-fs.log");
    let child = prereq::launch(
        &mut cmd,
        "s3s-fs",
        addr.port(),
        &log,
        Duration::from_secs(10),
    )?;
    Ok((child, addr))
}

/// The nearest directory at or above `start` whose Cargo.toml declares a workspace.
pub fn workspace_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find_map(|d| {
        let toml = std::fs::read_to_string(d.join("Cargo.toml")).ok()?;
        toml.lines()
            .any(|l| l.trim() == "[workspace]")
            .then(|| d.to_path_buf())
    })
}
