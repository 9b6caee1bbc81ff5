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
    /// Time spent inside the read or write calls themselves (for a piece, its commit too).
    pub io_time: Duration,
    /// For writes: CPU time of the writer thread (a piece's BLKSIZE blocks copied into the
    /// page cache or handed to an upload), and the time it was ready to run but waited for a
    /// CPU (a loaded machine, or a cgroup's CPU quota spent). What tells an output that holds
    /// the channels because the disk is slow from one whose writer could not get the CPU.
    /// Zero for reads: a channel's own CPU is in its AGGREGATE row.
    pub cpu_time: Duration,
    pub cpu_wait: Duration,
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
        self.cpu_time += o.cpu_time;
        self.cpu_wait += o.cpu_wait;
    }

    pub fn record_ready(&mut self) {
        self.ready += 1;
    }

    pub fn record_short(&mut self, since: Instant) {
        self.short_waits += 1;
        self.short_wait_time += since.elapsed();
    }

    /// A wait at a piece's end: for its last writes to reach the device, then for its commit
    /// (fsync, an upload's completion). The device's time, so it counts in the writes' time as
    /// well as in the channel's waits, and the writer's CPU share of the waits
    /// ([`crate::tuning::writer_cpu_share`]) does not take it for CPU. (The writer thread's
    /// own timing cannot see the first part: a thread that queued direct writes on an io_uring
    /// waits for them as it exits, after its last measurement.)
    pub fn record_final_wait(&mut self, waited: Duration) {
        self.long_wait_time += waited;
        self.io_time += waited;
    }

    pub fn record_long(&mut self, since: Instant) {
        self.long_waits += 1;
        self.long_wait_time += since.elapsed();
    }
}
