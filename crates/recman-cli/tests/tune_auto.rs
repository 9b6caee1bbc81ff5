//! Issue 15: `backup database --tune auto` changes its settings in the right direction when the
//! input device slows down while it runs. The slow device is real: the kernel's cgroup v1
//! block-I/O throttle on the data directory's disk, switched on after the first pieces are
//! written. The test asserts on the changes the backup recorded, not on timing.

mod common;
mod flows;

use common::*;
use flows::*;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A blkio cgroup of its own, removed when dropped (after the process in it ended).
struct Blkio(PathBuf);

impl Blkio {
    fn new() -> Blkio {
        let root = Path::new("/sys/fs/cgroup/blkio");
        assert!(
            root.join("blkio.throttle.read_bps_device").exists(),
            "this test needs the cgroup v1 blkio controller at {}",
            root.display()
        );
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = root.join(format!("recman-tune-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        Blkio(dir)
    }

    fn add(&self, pid: u32) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).unwrap();
    }

    fn throttle_reads(&self, dev: u64, bytes_per_second: u64) {
        let rule = format!(
            "{}:{} {bytes_per_second}",
            libc::major(dev),
            libc::minor(dev)
        );
        std::fs::write(self.0.join("blkio.throttle.read_bps_device"), &rule)
            .unwrap_or_else(|e| panic!("blkio throttle {rule}: {e}"));
    }
}

impl Drop for Blkio {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn pieces(dir: &Path) -> usize {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                n += pieces(&p);
            } else if p.extension().is_some_and(|x| x == "rmp") {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn auto_mode_deepens_reads_when_the_input_device_slows_down() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(10);
    // The disk that holds the data files (its whole-disk device number).
    let dev = std::fs::metadata(setup.cluster.pgdata.join("base"))
        .unwrap()
        .dev();
    let group = Blkio::new();
    // Cold, as a large database is: read from the disk the throttle slows, not from memory.
    common::fixtures::evict_from_page_cache(&setup.cluster.pgdata);
    let mut child = recman_cmd(setup.args(&[
        "backup",
        "database",
        "--tune",
        "auto",
        "--section-size",
        "16M",
        "--tag",
        "AUTO",
    ]))
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    group.add(child.id());
    // Midway: once two pieces are written, the disk slows to 8 MB/s for this backup.
    let deadline = Deadline::after(Duration::from_secs(300));
    while pieces(&setup.repo) < 2 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the backup ended before its second piece"
        );
        deadline.check("the backup's second piece");
        std::thread::sleep(Duration::from_millis(20));
    }
    group.throttle_reads(dev, 8 << 20);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "backup failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let r: serde_json::Value =
        serde_json::from_str(&setup.ok(&["report", "io", "AUTO", "--json"])).unwrap();
    let tuning = r["tuning"].as_array().unwrap();
    for e in tuning {
        eprintln!(
            "{:>6} ms {} {} -> {}: {}",
            e["at_ms"], e["setting"], e["old_value"], e["new_value"], e["reason"]
        );
    }
    let num = |v: &serde_json::Value| v.as_str().unwrap().parse::<u64>().unwrap();
    // A change the next set's rate did not justify goes back; those steps are the decisions'.
    let reverted = |e: &serde_json::Value| e["reason"].as_str().unwrap().starts_with("reverted");
    let tries: Vec<&serde_json::Value> = tuning.iter().filter(|e| !reverted(e)).collect();
    let depth: Vec<(u64, u64)> = tries
        .iter()
        .filter(|e| e["setting"] == "queue_depth")
        .map(|e| (num(&e["old_value"]), num(&e["new_value"])))
        .collect();
    let size: Vec<(u64, u64)> = tries
        .iter()
        .filter(|e| e["setting"] == "input_buffer_size")
        .map(|e| (num(&e["old_value"]), num(&e["new_value"])))
        .collect();
    let files: Vec<(u64, u64)> = tries
        .iter()
        .filter(|e| e["setting"] == "files_in_flight")
        .map(|e| (num(&e["old_value"]), num(&e["new_value"])))
        .collect();
    assert!(
        !depth.is_empty() || !size.is_empty(),
        "a slowed input device changed no read setting: {tuning:?}"
    );
    // Waiting for reads only ever deepens the queue, enlarges requests and adds files.
    for (old, new) in depth.iter().chain(&size).chain(&files) {
        assert!(new > old, "a read setting went from {old} to {new}");
    }
    assert!(
        tries
            .iter()
            .filter(|e| {
                ["queue_depth", "input_buffer_size", "files_in_flight"]
                    .contains(&e["setting"].as_str().unwrap())
            })
            .all(|e| e["reason"].as_str().unwrap().starts_with("input bound")),
        "{tuning:?}"
    );
    // Each change was judged by the rate of the set read with it, and the judgement kept with
    // its figures; a reverted change put back exactly what it had changed.
    let decisions: Vec<&serde_json::Value> = tuning
        .iter()
        .filter(|e| e["setting"] == "decision")
        .collect();
    assert!(!decisions.is_empty(), "no change was judged: {tuning:?}");
    for d in &decisions {
        assert!(
            ["kept", "reverted"].contains(&d["new_value"].as_str().unwrap())
                && d["reason"].as_str().unwrap().contains("MB/s before"),
            "{d}"
        );
    }
    for e in tuning.iter().filter(|e| reverted(e)) {
        let tried = tuning
            .iter()
            .rev()
            .find(|t| {
                t["setting"] == e["setting"]
                    && !reverted(t)
                    && t["seq"].as_u64() < e["seq"].as_u64()
            })
            .unwrap_or_else(|| panic!("a revert of a change never made: {e}"));
        assert_eq!(
            (&tried["old_value"], &tried["new_value"]),
            (&e["new_value"], &e["old_value"]),
            "{e}"
        );
    }
    // The backup restores like any other.
    setup.ok(&["validate", "backup", "AUTO"]);
}
