//! What the tests need from the machine: a test server program found, a directory of their
//! own, and a missing one reported as a failure unless RECMAN_TEST_SKIP names it.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether `RECMAN_TEST_SKIP` (names separated by commas, e.g. `s3,io_uring`) names `what`.
pub fn skip_requested(what: &str) -> bool {
    std::env::var("RECMAN_TEST_SKIP")
        .is_ok_and(|v| v.split(',').any(|n| n.trim().eq_ignore_ascii_case(what)))
}

/// A prerequisite of the calling test is missing: the test fails, naming it and how to skip it,
/// unless the person running the suite opted out with `RECMAN_TEST_SKIP=<what>`; then this
/// writes `SKIPPED(<what>): <reason>` and returns, and the caller returns. The line goes
/// straight to the process's stderr, past the test harness's capture, so that scripts/test.sh
/// counts it (a skipped test is still a pass in cargo's own count).
pub fn missing_prerequisite(what: &str, reason: &str) {
    if !skip_requested(what) {
        panic!(
            "missing prerequisite '{what}': {reason}; hint: provide it, or skip the tests that \
             need it with RECMAN_TEST_SKIP={what}"
        );
    }
    use std::io::Write;
    let line = format!("\nSKIPPED({what}): {reason}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The calling test does less than it could here (an older major, a kernel without a
/// feature): it writes `SKIPPED(<what>): <reason>` past the harness's capture and goes on with
/// what it can do. scripts/test.sh and scripts/test-majors.sh count these lines, and CI fails
/// on a name that `.ci/expected-skips` does not list, so a part that stops running is seen.
pub fn skipped_part(what: &str, reason: &str) {
    use std::io::Write;
    let line = format!("\nSKIPPED({what}): {reason}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Where a test server program is: $`env`, then `cached` under the tools cache scripts/setup.sh
/// fills ($RECMAN_TOOLS_DIR or /var/cache/recman-tools), then `program` on the PATH.
pub(crate) fn find_tool(env: &str, cached: &str, program: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let tools = std::env::var_os("RECMAN_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/recman-tools"));
    let p = tools.join(cached);
    if p.is_file() {
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// A new directory of this process's own under the temporary directory, for one server's
/// files.
pub(crate) fn private_dir() -> io::Result<PathBuf> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("recman-s3s-{}-{n}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}
