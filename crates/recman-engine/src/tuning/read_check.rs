//! How far a channel's reads and its CPU work overlap. The read probes measure a device alone
//! and the CPU rates a core alone; a channel does both, and a backup runs at the slower of the
//! two only when the one fully hides the other. Seed 000's first tuning step measures the read
//! phase as a backup runs it (BACKUP VALIDATE: read and check, write nothing); calibrate does
//! the same on the cluster's largest files, and the gap between that rate and the two measured
//! alone is the overlap `advise` predicts with. On this project's virtual machines a channel's
//! data phase came out as the sum of its read waits and its CPU time more than their maximum
//! (docs/tuning.md), which the rates alone predicted 40 % too fast.

use serde::{Deserialize, Serialize};

/// Reading and checking pages on one thread, as `backup validate` does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadAndCheck {
    pub request_size: u64,
    pub queue_depth: u32,
    pub bytes: u64,
    pub bytes_per_second: u64,
    /// 1 when reading and checking at once takes as long as the slower of the two alone, 0 when
    /// it takes their sum.
    pub overlap: f64,
    /// The same with several threads at once, each on its share of the files, all together:
    /// one per core, then two per core. What several channels get from the device while the
    /// CPU is busy too: on a virtual disk one thread per core got less than one thread alone,
    /// and more threads than cores, more reads in flight, got more.
    #[serde(default)]
    pub parallel: Vec<ThreadsRate>,
    /// Bytes read and checked per second of the process's CPU time, the kernel's work for
    /// the reads included: what the read side of a channel costs a core. Where the CPU is
    /// scarce (a container's limit) this, not the checks alone, adds to the codec's cost.
    /// 0 in calibrations taken before it was measured.
    #[serde(default)]
    pub cpu_bytes_per_second: u64,
}

/// Bytes/s that `threads` threads reading and checking at once reached together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadsRate {
    pub threads: u32,
    pub bytes_per_second: u64,
}

impl ReadAndCheck {
    /// Bytes/s `channels` channels read and check at: linear between the thread counts
    /// measured, and the widest measurement past it.
    pub fn rate(&self, channels: u32) -> f64 {
        let mut at = (1u32, self.bytes_per_second as f64);
        for p in &self.parallel {
            if p.threads <= at.0 || p.bytes_per_second == 0 {
                continue;
            }
            let next = (p.threads, p.bytes_per_second as f64);
            if channels <= next.0 {
                let t = (channels.max(at.0) - at.0) as f64 / (next.0 - at.0) as f64;
                return at.1 + t * (next.1 - at.1);
            }
            at = next;
        }
        at.1
    }
}

/// The overlap of reads at `read` bytes/s and checks at `check` bytes/s that a thread doing both
/// at `both` bytes/s shows: where the measured time per byte falls between the larger of the
/// two times (full overlap) and their sum (none).
pub fn overlap(read: f64, check: f64, both: f64) -> f64 {
    if !(read > 0.0 && check > 0.0 && both > 0.0) {
        return 1.0;
    }
    let (r, c, t) = (1.0 / read, 1.0 / check, 1.0 / both);
    ((r + c - t) / r.min(c)).clamp(0.0, 1.0)
}

/// The rate, in input bytes/s, of `channels` channels whose devices allow `io` and whose CPU
/// allows `cpu` (both aggregate), given the measured `overlap`. What one channel cannot hide,
/// another channel's work partly does (one computes while another waits), so the part that
/// adds is shared out over the channels.
pub fn combined(io: f64, cpu: f64, overlap: f64, channels: u32) -> f64 {
    let (a, b) = (1.0 / io.max(1e-9), 1.0 / cpu.max(1e-9));
    let serial = (1.0 - overlap.clamp(0.0, 1.0)) * a.min(b) / channels.max(1) as f64;
    1.0 / (a.max(b) + serial)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_runs_from_the_sum_to_the_maximum() {
        // 1 s to read, 1 s to check: 2 s together is no overlap, 1 s is full.
        assert_eq!(overlap(100.0, 100.0, 50.0), 0.0);
        assert_eq!(overlap(100.0, 100.0, 100.0), 1.0);
        assert!((overlap(100.0, 200.0, 80.0) - 0.5).abs() < 1e-9);
        // Faster than either alone (noise between probes) or slower than the sum: clamped.
        assert_eq!(overlap(100.0, 100.0, 150.0), 1.0);
        assert_eq!(overlap(100.0, 100.0, 10.0), 0.0);
        // Nothing measured: the old assumption, full overlap.
        assert_eq!(overlap(0.0, 100.0, 50.0), 1.0);
    }

    #[test]
    fn channels_read_and_check_at_the_measured_rates() {
        let point = |threads, bytes_per_second| ThreadsRate {
            threads,
            bytes_per_second,
        };
        let rc = ReadAndCheck {
            request_size: 1 << 20,
            queue_depth: 1,
            bytes: 1,
            bytes_per_second: 1000,
            overlap: 0.0,
            parallel: vec![point(3, 700), point(6, 1000)],
            cpu_bytes_per_second: 0,
        };
        assert_eq!(rc.rate(1), 1000.0);
        assert_eq!(rc.rate(2), 850.0);
        assert_eq!(rc.rate(3), 700.0);
        assert_eq!(rc.rate(4), 800.0);
        assert_eq!(rc.rate(6), 1000.0);
        assert_eq!(rc.rate(8), 1000.0);
        let alone = ReadAndCheck {
            parallel: Vec::new(),
            ..rc
        };
        assert_eq!(alone.rate(4), 1000.0);
    }

    #[test]
    fn the_combined_rate_lies_between_the_sum_and_the_slower_side() {
        // The figures of a scale-20 backup here: reads 1070 MB/s, checks and lz4 1640 MB/s.
        let full = combined(1070.0, 1640.0, 1.0, 1);
        let none = combined(1070.0, 1640.0, 0.0, 1);
        assert!((full - 1070.0).abs() < 1e-6);
        assert!((none - 1.0 / (1.0 / 1070.0 + 1.0 / 1640.0)).abs() < 1e-6);
        // A second channel hides half of what one cannot.
        let two = combined(1070.0, 1640.0, 0.0, 2);
        assert!(none < two && two < full, "{none} {two} {full}");
    }
}
