//! A `recman server` child process for the fleet tests: started with its stderr in a log file,
//! waited for until a port accepts connections, killed when dropped.

use super::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

/// A `recman server` child, killed when dropped.
pub struct Server {
    pub child: Child,
    /// The port waited for.
    pub port: u16,
    pub log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Runs `recman ARGS` with `env` and waits until 127.0.0.1:`port` accepts connections;
    /// a server that exits first fails the test with its log.
    pub fn spawn(args: &[String], port: u16, log: &Path, env: &[(&str, &str)]) -> Server {
        let mut cmd = recman_cmd(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("start recman server");
        let mut s = Server {
            child,
            port,
            log: log.to_path_buf(),
        };
        let deadline = Deadline::after(Duration::from_secs(30));
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(st) = s.child.try_wait().unwrap() {
                panic!("recman server exited ({st}): {}", s.log_text());
            }
            deadline.check("recman server to listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
