//! What the tests need from the machine: a test server program found, a directory of their
//! own, and a missing one reported as a failure unless RECMAN_TEST_SKIP names it.

use std::collections::BTreeSet;
use std::io;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// A loopback port for a test server or cluster to listen on: free when picked, and never
/// handed out twice in this process. The port is free only until someone binds it, so another
/// process may still take it first: servers are waited for with [`await_listening`], which
/// sees whose socket listens.
pub fn pick_port() -> io::Result<u16> {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        if GIVEN.lock().unwrap_or_else(|e| e.into_inner()).insert(port) {
            return Ok(port);
        }
    }
}

/// Starts test server `name` from `cmd` with its output in a new file `log`, and waits for it
/// to listen on `port` ([`await_listening`]).
pub(crate) fn launch(
    cmd: &mut Command,
    name: &str,
    port: u16,
    log: &Path,
    limit: Duration,
) -> io::Result<Child> {
    let out = std::fs::File::create(log)?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()?;
    await_listening(child, port, name, log, limit)
}

/// Waits up to `limit` for test server `name` (`child`, writing to `log`) to listen on
/// `port`, and hands it back. A server that exits first is an error carrying its log (kind
/// Other: the caller may try another port); one still not listening at the limit is killed
/// (kind TimedOut).
pub(crate) fn await_listening(
    mut child: Child,
    port: u16,
    name: &str,
    log: &Path,
    limit: Duration,
) -> io::Result<Child> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            return Err(io::Error::other(format!(
                "{name} exited with {status}: {log}"
            )));
        }
        if listens(&child, port) {
            return Ok(child);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{name} not ready after {} s", limit.as_secs()),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `child` (or a process it started) holds the listening socket on `port`. A connect
/// that succeeds proves only that *someone* listens there: on a CI machine running many
/// servers at once, a port picked free can be taken by another test's server before this one
/// binds it, and this one then exits while a connect reaches the other. Where /proc cannot be
/// read, a connect is the answer.
fn listens(child: &Child, port: u16) -> bool {
    let Some(inodes) = listening_inodes(port) else {
        let addr = (Ipv4Addr::LOCALHOST, port).into();
        return TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok();
    };
    if inodes.is_empty() {
        return false;
    }
    let mut pids = vec![child.id()];
    if let Ok(kids) = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id())) {
        pids.extend(
            kids.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    pids.iter().any(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| {
                    let l = l.to_string_lossy();
                    inodes.iter().any(|i| l == format!("socket:[{i}]"))
                })
            })
        })
    })
}

/// The inodes of the sockets listening on `port` (state 0A in /proc/net/tcp and tcp6), or
/// None when neither table can be read.
fn listening_inodes(port: u16) -> Option<Vec<u64>> {
    let mut read_any = false;
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        read_any = true;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let p = local
                .rsplit(':')
                .next()
                .and_then(|h| u16::from_str_radix(h, 16).ok());
            if *state == "0A" && p == Some(port) {
                inodes.extend(inode.parse::<u64>().ok());
            }
        }
    }
    read_any.then_some(inodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_another_process_listens_on_is_not_the_childs() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let seen = listens(&child, port);
        let _ = child.kill();
        let _ = child.wait();
        assert!(!seen, "port {port} is this test's, not the child's");
        drop(held);
        assert!(pick_port().unwrap() > 0);
    }
}
