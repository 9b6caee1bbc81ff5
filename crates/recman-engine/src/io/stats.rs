use std::time::{Duration, Instant};

/// Counters of one file, piece or channel, in RMAN's terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Buffers handed to the channel (reads) or taken by it (writes).
    pub io_count: u64,
    /// Buffers that were ready when the channel asked for them.
    pub ready: u64,
    /// Buffers found complete by a non-blocking poll after not being ready.
    pub short_waits: u64,
    pub short_wait_time: Duration,
    /// Times the channel blocked until a buffer completed.
    pub long_waits: u64,
    pub long_wait_time: Duration,
    pub bytes: u64,
    /// Time spent inside the read or write calls themselves.
    pub io_time: Duration,
}

impl IoCounters {
    pub fn add(&mut self, o: &IoCounters) {
        self.io_count += o.io_count;
        self.ready += o.ready;
        self.short_waits += o.short_waits;
        self.short_wait_time += o.short_wait_time;
        self.long_waits += o.long_waits;
        self.long_wait_time += o.long_wait_time;
        self.bytes += o.bytes;
        self.io_time += o.io_time;
    }

    pub fn record_ready(&mut self) {
        self.ready += 1;
    }

    pub fn record_short(&mut self, since: Instant) {
        self.short_waits += 1;
        self.short_wait_time += since.elapsed();
    }

    pub fn record_long(&mut self, since: Instant) {
        self.long_waits += 1;
        self.long_wait_time += since.elapsed();
    }
}
