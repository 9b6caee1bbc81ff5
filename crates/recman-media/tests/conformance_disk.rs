//! The conformance suite against the local disk driver.

use recman_media::conformance;
use recman_media::disk::DiskMedia;

#[test]
fn disk_driver_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let m = DiskMedia::new(dir.path()).unwrap();
    conformance::run(&m, "run1", 3 << 20);
    // No temporary files left behind by aborted writes.
    let leftovers: Vec<_> = recman_media::conformance::files_under(dir.path());
    assert!(leftovers.is_empty(), "files left: {leftovers:?}");
}
