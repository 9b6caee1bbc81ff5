/// Progress of a long operation, reported in bytes. Implementations must be cheap and
/// thread-safe: every channel calls `advance` after each chunk.
pub trait Progress: Send + Sync {
    /// Called once, before any `advance`, with the bytes the operation expects to process.
    fn start(&self, what: &str, total_bytes: u64);
    fn advance(&self, bytes: u64);
    /// A line for the user (verbose output); not an error.
    fn message(&self, line: &str);
    /// A line every user should see (the memory budget, a fallback); printed unless quiet.
    fn notice(&self, line: &str) {
        self.message(line)
    }
    fn finish(&self);
}

thread_local! {
    static CHANNEL: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The channel (1, 2, ...) whose worker runs on this thread, 0 outside channel workers: lets a
/// [`Progress`] split its bytes by channel without a channel argument on every call.
pub fn current_channel() -> u32 {
    CHANNEL.with(|c| c.get())
}

pub(crate) fn set_current_channel(no: u32) {
    CHANNEL.with(|c| c.set(no));
}

/// Reports nothing; for quiet runs and tests.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn message(&self, _: &str) {}
    fn finish(&self) {}
}
