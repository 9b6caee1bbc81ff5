//! The I/O engine: how a channel's reads and writes are issued, and what they waited for.
//!
//! Three ways to issue the same reads, chosen per command (`--io`): native asynchronous I/O
//! through io_uring, a pool of helper threads doing blocking reads (RMAN's I/O slaves), or
//! plain synchronous reads in the channel's own thread. All of them read into buffers from the
//! channel's bounded pool, and every buffer the channel asks for is counted as READY (already
//! there), a SHORT wait (found done by a non-blocking poll) or a LONG wait (the channel
//! blocked): the columns of RMAN's V$BACKUP_ASYNC_IO.

mod engine;
pub mod input;
mod output;
pub use crate::residency;
mod settings;
mod stats;
mod sync;
mod threads;
mod throttle;
mod timed;
mod uring;

pub use crate::aligned::{ALIGN, AlignedBuf};
pub use crate::read_mode::ReadMode;
pub use engine::{IoEngine, ReadDone, ReadReq, open_engine, open_remote_engine, probe_uring};
pub use output::OutputStream;
pub use settings::{BufferPlan, IoMode, IoSettings, parse_size};
pub use stats::IoCounters;
pub use throttle::Throttle;
pub use timed::TimedReader;

/// Runs `f` again while it fails with EINTR: a signal (SIGSTOP and SIGCONT from Ctrl-Z, a
/// debugger, a cgroup freezer) interrupts a blocking io_uring_enter without anything being
/// wrong. Submitted entries the kernel took are not resubmitted: it consumed them.
pub(crate) fn retry_eintr<T>(mut f: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}
