use super::{IoMode, IoSettings};
use crate::aligned::AlignedBuf;
use crate::source::SourceFile;
use std::time::Duration;

/// One read: `len` bytes of `file` at `offset` into `buf`; `tag` identifies it on completion.
pub struct ReadReq {
    pub tag: u64,
    pub file: SourceFile,
    pub offset: u64,
    pub len: usize,
    pub buf: AlignedBuf,
}

pub struct ReadDone {
    pub tag: u64,
    pub buf: AlignedBuf,
    /// Bytes read: fewer than asked only at end of file.
    pub result: std::io::Result<usize>,
    /// Time the read itself took.
    pub io_time: Duration,
}

/// Issues reads and hands back their completions.
///
/// Contract: every submitted request completes exactly once, through `try_complete` or
/// `wait_complete`, in any order, returning its buffer; `try_complete` never blocks;
/// `wait_complete` blocks only while a request is outstanding and fails if none is. An engine
/// dropped with requests outstanding waits for them first, so no buffer is freed while the
/// kernel or a helper thread may still write into it.
pub trait IoEngine: Send {
    fn mode(&self) -> IoMode;
    fn submit(&mut self, req: ReadReq) -> std::io::Result<()>;
    fn try_complete(&mut self) -> Option<ReadDone>;
    fn wait_complete(&mut self) -> std::io::Result<ReadDone>;
    fn outstanding(&self) -> usize;
    /// io_uring submission calls made so far (zero for the other engines).
    fn ring_submissions(&self) -> u64 {
        0
    }
}

/// The engine for files of a remote source: helper threads, each read one call to the
/// agent, `n` of them in flight at once on one connection (io_uring cannot read those).
pub fn open_remote_engine(n: usize) -> Box<dyn IoEngine> {
    Box::new(super::threads::ThreadsEngine::new(n))
}

/// Whether this kernel (or container policy) lets us create a ring; the error says why not.
pub fn probe_uring() -> Result<(), String> {
    if let Some(e) = crate::fault::uring_refused() {
        return Err(e.to_string());
    }
    io_uring::IoUring::new(4)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Opens the engine a channel uses, and the notice to print when `auto` had to fall back.
pub fn open_engine(
    s: &IoSettings,
    depth: usize,
) -> std::io::Result<(Box<dyn IoEngine>, Option<String>)> {
    match s.mode {
        IoMode::Sync => Ok((Box::new(super::sync::SyncEngine::default()), None)),
        IoMode::Threads => Ok((Box::new(super::threads::ThreadsEngine::new(s.slaves)), None)),
        IoMode::Uring => Ok((Box::new(super::uring::UringEngine::new(depth)?), None)),
        IoMode::Auto => match super::uring::UringEngine::new(depth) {
            Ok(e) => Ok((Box::new(e), None)),
            Err(e) => Ok((
                Box::new(super::threads::ThreadsEngine::new(s.slaves)),
                Some(format!(
                    "io_uring is not available here ({e}); using {} helper i/o threads per channel",
                    s.slaves
                )),
            )),
        },
    }
}
