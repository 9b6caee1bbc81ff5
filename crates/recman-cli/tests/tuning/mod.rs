//! Real bottlenecks for the tuning tests: the kernel's block-I/O throttle (cgroup v1 blkio)
//! around one recman process, and a TCP relay that holds uploads to a bandwidth.
#![allow(dead_code)]

use crate::common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// "MAJ:MIN" of the whole disk holding `path` (the throttle takes disks, not partitions).
pub fn disk_of(path: &Path) -> String {
    let dev = std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("stat {}: {e}", path.display()))
        .dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    if sys.join("partition").exists() {
        let parent = std::fs::read_to_string(sys.join("../dev")).expect("the partition's disk");
        return parent.trim().to_string();
    }
    format!("{maj}:{min}")
}

/// A blkio cgroup with read and/or write limits on one disk, removed when dropped.
pub struct Blkio {
    path: PathBuf,
}

impl Blkio {
    /// None when the machine has no blkio controller and `RECMAN_TEST_SKIP` names `blkio`
    /// (the test returns); without the opt-out a missing controller fails the test.
    pub fn new(disk: &str, read_bps: Option<u64>, write_bps: Option<u64>) -> Option<Blkio> {
        let root = Path::new(BLKIO);
        if !root.join("blkio.throttle.read_bps_device").exists() {
            recman_media::testkit::missing_prerequisite(
                "blkio",
                "no cgroup v1 block-I/O controller at /sys/fs/cgroup/blkio (the tests throttle a real device with it)",
            );
            return None;
        }
        let path = root.join(format!("recman-test-{}-{}", std::process::id(), unique()));
        if let Err(e) = std::fs::create_dir(&path) {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                recman_media::testkit::missing_prerequisite(
                    "blkio",
                    &format!("cannot create a blkio cgroup ({e}): the tests must run as root"),
                );
                return None;
            }
            panic!("create {}: {e}", path.display());
        }
        let g = Blkio { path };
        if let Some(r) = read_bps {
            g.write("blkio.throttle.read_bps_device", &format!("{disk} {r}"));
        }
        if let Some(w) = write_bps {
            g.write("blkio.throttle.write_bps_device", &format!("{disk} {w}"));
        }
        // The recman process moves itself in before exec; it runs as the cluster user.
        chown_to_cluster_user(&g.path.join("cgroup.procs"));
        Some(g)
    }

    fn write(&self, file: &str, v: &str) {
        std::fs::write(self.path.join(file), v)
            .unwrap_or_else(|e| panic!("write {v:?} to {}/{file}: {e}", self.path.display()));
    }

    /// Runs recman with `args` inside the group: a shell moves itself in, then execs recman,
    /// so every thread recman starts is throttled from its first I/O.
    pub fn recman(&self, args: &[String]) -> Output {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("echo $$ > \"$0/cgroup.procs\" && exec \"$@\"")
            .arg(&self.path)
            .arg(recman_bin())
            .args(args);
        as_cluster_user(&mut cmd);
        eprintln!(
            "$ (blkio {}) recman {}",
            self.path.display(),
            args.join(" ")
        );
        cmd.stdin(Stdio::null())
            .output()
            .expect("run recman in the group")
    }
}

impl Drop for Blkio {
    fn drop(&mut self) {
        // The group empties when its recman exits; rmdir is refused while it holds a task.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove {}", self.path.display());
    }
}

fn unique() -> u64 {
    use std::sync::atomic::AtomicU64;
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A TCP relay to `upstream` that passes what the client sends at most `bps` bytes per second
/// (answers pass freely): a slow uplink to an object store.
pub struct SlowLink {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl SlowLink {
    pub fn start(upstream: &str, bps: u64) -> SlowLink {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let st = Arc::clone(&stop);
        std::thread::spawn(move || {
            for c in l.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(c) = c else { continue };
                let Ok(u) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (c2, u2) = (c.try_clone().unwrap(), u.try_clone().unwrap());
                std::thread::spawn(move || pump(c, u, Some(bps)));
                std::thread::spawn(move || pump(u2, c2, None));
            }
        });
        SlowLink { port, stop }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for SlowLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, bps: Option<u64>) {
    let mut buf = vec![0u8; 16 << 10];
    let mut t0 = Instant::now();
    let mut sent = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(bps) = bps {
            // No credit for idle time between requests on a kept-alive connection.
            if t0.elapsed() > Duration::from_secs_f64(sent as f64 / bps as f64) {
                t0 = Instant::now();
                sent = 0;
            }
            sent += n as u64;
            let due = Duration::from_secs_f64(sent as f64 / bps as f64);
            if let Some(w) = due.checked_sub(t0.elapsed()) {
                std::thread::sleep(w);
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}
