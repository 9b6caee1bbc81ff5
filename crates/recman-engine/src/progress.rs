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

/// Reports nothing; for quiet runs and tests.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn message(&self, _: &str) {}
    fn finish(&self) {}
}
