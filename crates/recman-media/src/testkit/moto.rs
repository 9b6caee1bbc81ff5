//! moto's S3 server (PyPI `moto[server]`), for what s3s-fs lacks: Object Lock and versions.
//! Unlike the other servers here it is never skipped: a test that needs Object Lock has no
//! other store to run against, so a missing `moto_server` fails it, naming the package.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use crate::s3::{S3Admin, S3Config};

const KEY_ID: &str = "testing";
const SECRET: &str = "testing-secret";

/// A moto_server on a free loopback port, killed (by its pid) when dropped.
pub struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    /// Starts moto_server, its output in `log`; panics with a hint when it cannot.
    pub fn start(log: &Path) -> Moto {
        // A port picked free can be taken by another test's server first: then this one
        // exits and another port is tried.
        let mut exits = Vec::new();
        for _ in 0..5 {
            match Moto::try_start(log) {
                Some(m) => return m,
                None => exits.push(std::fs::read_to_string(log).unwrap_or_default()),
            }
        }
        panic!("moto_server exited before it listened, five times: {exits:?}");
    }

    /// One start on a new port; None when the server exits before it listens there.
    fn try_start(log: &Path) -> Option<Moto> {
        let port = super::prereq::pick_port().expect("a free loopback port");
        // scripts/setup.sh's setup_moto installs it into the tools cache and names it here.
        let program =
            std::env::var_os("RECMAN_MOTO_SERVER").unwrap_or_else(|| "moto_server".into());
        let mut cmd = Command::new(&program);
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        let started =
            super::prereq::launch(&mut cmd, "moto_server", port, log, Duration::from_secs(60));
        match started {
            Ok(child) => Some(Moto { child, port }),
            // Exited before it listened (kind Other): another port may do.
            Err(e) if e.kind() == std::io::ErrorKind::Other => None,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => panic!("{e}"),
            Err(e) => panic!(
                "cannot start {}: {e}; hint: Object Lock tests need moto's S3 server: scripts/setup.sh's setup_moto installs it (or `pip install 'moto[server]'` puts moto_server on PATH)",
                program.to_string_lossy()
            ),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `[s3]` settings that reach it.
    pub fn settings(&self) -> Vec<(String, String)> {
        [
            ("endpoint", self.endpoint()),
            ("region", "us-east-1".to_string()),
            ("access-key-id", KEY_ID.to_string()),
            ("secret-access-key", SECRET.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// The settings of repository `url` on this server.
    pub fn config(&self, url: &str) -> S3Config {
        let mut cfg = S3Config::from_url(url).expect("an s3 url");
        for (k, v) in self.settings() {
            cfg.set(&k, &v).expect("moto's settings are valid");
        }
        cfg
    }

    /// Direct API access to a bucket, as an operator or an attacker with the same keys.
    pub fn admin(&self, bucket: &str) -> S3Admin {
        S3Admin::new(self.config(&format!("s3://{bucket}"))).expect("an s3 driver for moto")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
