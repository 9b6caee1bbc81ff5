//! A small file system of its own for a test: a tmpfs of a given size mounted over a
//! directory, so a test can fill it (a disk full, a repository short of space) without
//! touching the host's disk.

use crate::host::{cluster_user, path_str};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted over a directory, owned by the cluster user, for the life of the guard.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount`'s form: `64m`) over `dir`. Needs root.
    pub fn mount(dir: &Path, size: &str) -> Tmpfs {
        let u = cluster_user().expect("mounting a tmpfs needs root: run the tests as root");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={size},mode=0700,uid={},gid={}", u.uid, u.gid))
            .args(["tmpfs", path_str(dir)])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount -t tmpfs on {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_path_buf())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Bytes free, as df(1) says.
    pub fn avail(&self) -> u64 {
        let out = Command::new("df")
            .args(["-B1", "--output=avail", path_str(&self.0)])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Fills the file system with file `name` until `leave` bytes are free (or it is full,
    /// with `leave` 0).
    pub fn fill(&self, name: &str, leave: u64) -> PathBuf {
        use std::io::Write;
        let p = self.0.join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        let block = vec![0xa5u8; 64 << 10];
        loop {
            let free = self.avail();
            if free <= leave {
                break;
            }
            let n = (free - leave).min(block.len() as u64) as usize;
            if f.write_all(&block[..n]).is_err() {
                break;
            }
        }
        let _ = f.sync_all();
        p
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a cluster still running may hold a file there for a moment.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
