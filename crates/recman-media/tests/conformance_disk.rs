//! The conformance suite against the local disk driver.

use recman_media::conformance;
use recman_media::disk::DiskMedia;

#[test]
fn disk_driver_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let m = DiskMedia::new(dir.path()).unwrap();
    conformance::run(&m, "run1", 3 << 20);
    // No temporary files left behind by aborted writes.
    let leftovers: Vec<_> = walk(dir.path());
    assert!(leftovers.is_empty(), "files left: {leftovers:?}");
}

fn walk(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}
