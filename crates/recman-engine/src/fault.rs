//! Fault switches for the tests, read from the environment. They exist only in builds with the
//! `fault-injection` feature, which the workspace's test builds turn on (recman-cli's
//! dev-dependency on this crate) and release builds never do: a product built for users neither
//! reads these variables nor contains their names.

use std::time::Duration;

/// A change-tracking answer's block lists, spelt out here so that this leaf of test hooks
/// imports nothing of the engine (tracking.rs names the same type).
type BlockLists = std::collections::HashMap<recman_pg::walsummary::ForkKey, Vec<u32>>;

/// `RECMAN_FAULT_SLOW_READ=<path substring>:<milliseconds>` makes every read of matching files
/// complete that much later: a slow device for tests of the statistics, and a backup (data
/// files), restore (pieces: each record of a matching piece waits) or second-tier copy (each
/// block of a matching object) slow enough to be signalled or killed half-way.
#[cfg(feature = "fault-injection")]
pub(crate) fn slow_read() -> Option<(String, Duration)> {
    let v = std::env::var("RECMAN_FAULT_SLOW_READ").ok()?;
    let (pat, ms) = v.rsplit_once(':')?;
    Some((pat.to_string(), Duration::from_millis(ms.parse().ok()?)))
}

#[cfg(not(feature = "fault-injection"))]
pub(crate) fn slow_read() -> Option<(String, Duration)> {
    None
}

/// The delay [`slow_read`] puts on each read of object `rel`, if it matches.
pub(crate) fn slow_read_of(rel: &str) -> Option<Duration> {
    slow_read()
        .filter(|(pat, _)| rel.contains(pat.as_str()))
        .map(|(_, d)| d)
}

/// `RECMAN_FAULT_SLOW_DELETE=<milliseconds>` makes each object a deletion removes (a backup's
/// directory, an archived WAL file) wait that long first: a delete slow enough to be
/// signalled half-way.
#[cfg(feature = "fault-injection")]
pub(crate) fn slow_delete() -> Option<Duration> {
    let v = std::env::var("RECMAN_FAULT_SLOW_DELETE").ok()?;
    Some(Duration::from_millis(v.parse().ok()?))
}

#[cfg(not(feature = "fault-injection"))]
pub(crate) fn slow_delete() -> Option<Duration> {
    None
}

/// `RECMAN_FAULT_URING_REFUSED=1` makes every io_uring setup fail with EPERM, as a kernel with
/// `kernel.io_uring_disabled` set (or a seccomp policy) refuses it, so that the fallback is
/// tested on any kernel without touching a system-wide knob.
#[cfg(feature = "fault-injection")]
pub(crate) fn uring_refused() -> Option<std::io::Error> {
    (std::env::var_os("RECMAN_FAULT_URING_REFUSED").is_some_and(|v| v == "1"))
        .then(|| std::io::Error::from_raw_os_error(libc::EPERM))
}

#[cfg(not(feature = "fault-injection"))]
pub(crate) fn uring_refused() -> Option<std::io::Error> {
    None
}

/// `RECMAN_FAULT_WAL_RECYCLED=1` makes the background pusher find every local segment changed
/// when it makes their change-tracking summaries, as after PostgreSQL recycled them at a
/// checkpoint once archived: the window between a push and its summary, which a test cannot
/// reach from outside the pusher.
#[cfg(feature = "fault-injection")]
pub(crate) fn wal_recycled() -> bool {
    std::env::var_os("RECMAN_FAULT_WAL_RECYCLED").is_some_and(|v| v == "1")
}

#[cfg(not(feature = "fault-injection"))]
pub(crate) fn wal_recycled() -> bool {
    false
}

/// Whether this build has the test-only switches (the `fault-injection` feature): the CLI's
/// own test hooks (listing its numeric options for the range test) follow it.
pub fn test_build() -> bool {
    cfg!(feature = "fault-injection")
}

/// `RECMAN_FAULT_TRACKING_DROP=<relfilenode>:<block>` removes that block of the main fork of
/// every relation with that relfilenode from a level 1's change-tracking answer, as if one
/// summary had lost it: the mutation the change-tracking tests must catch.
#[cfg(feature = "fault-injection")]
pub(crate) fn drop_tracked_block(blocks: &mut BlockLists) {
    let Some((rel, block)) = std::env::var("RECMAN_FAULT_TRACKING_DROP")
        .ok()
        .and_then(|v| {
            let (r, b) = v.split_once(':')?;
            Some((r.parse::<u32>().ok()?, b.parse::<u32>().ok()?))
        })
    else {
        return;
    };
    for ((id, fork), list) in blocks.iter_mut() {
        if id.rel == rel && *fork == 0 {
            list.retain(|&b| b != block);
        }
    }
}

#[cfg(not(feature = "fault-injection"))]
pub(crate) fn drop_tracked_block(_: &mut BlockLists) {}
