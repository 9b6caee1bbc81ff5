//! Choosing direct or buffered writes while a restore writes, write by write. A probe before
//! the restore could not choose: on one host of this machine class a 64 MiB probe saw buffered
//! writes 2.4 times faster than direct ones and the buffered restore then ran at 0.38 of the
//! direct rate; on the same host a day later buffered restores ran at 1.3 times the direct
//! rate. What a disk gives a long restore is seen only while the restore runs, so a restore
//! measures both ways on its own data and keeps the faster.
//!
//! Each write of a restored file may go either way: the two kinds never cover the same bytes
//! (each byte is written once, see `chain.rs`) and the file's fsync makes both durable. A
//! write's cost is the time its writer thread spent in it per byte; buffered writes wait for
//! the writeback of what they wrote a window earlier (`outfile.rs`), so their cost is the
//! disk's and not the page cache's. The chooser first gives each way [`EXPLORE`] bytes, then
//! sends writes the cheaper way, and keeps one write in [`RESAMPLE`] on the other so that a
//! disk whose behaviour changes mid-restore is followed. The leader changes only when the
//! other way is cheaper by [`HYSTERESIS`], so noise does not make it swing.

use super::outfile::WriteMode;
use std::sync::Mutex;
use std::time::Duration;

/// Bytes each way is given before the cheaper one leads: several writes of every writer.
const EXPLORE: u64 = 48 << 20;

/// One write in this many goes the way that does not lead.
const RESAMPLE: u64 = 12;

/// The way that does not lead takes over when its cost is below this share of the leader's.
const HYSTERESIS: f64 = 0.9;

/// Bytes over which a way's cost is averaged (an exponential average): recent enough to
/// follow a disk that slows down, long enough to smooth single writes.
const WINDOW: f64 = (64 << 20) as f64;

#[derive(Debug, Default, Clone, Copy)]
struct Way {
    bytes: u64,
    busy: Duration,
    /// Nanoseconds per byte, averaged over about [`WINDOW`] bytes; None before the first write.
    cost: Option<f64>,
}

impl Way {
    fn record(&mut self, bytes: u64, took: Duration) {
        self.bytes += bytes;
        self.busy += took;
        if bytes == 0 {
            return;
        }
        // Until a window's worth is written, the cost is the plain ratio of time to bytes: an
        // average started from the first write alone would carry that write's error (a small
        // file's latency over its few bytes) far into the restore.
        if self.bytes as f64 <= WINDOW {
            self.cost = Some(self.busy.as_nanos() as f64 / self.bytes as f64);
            return;
        }
        let sample = took.as_nanos() as f64 / bytes as f64;
        let weight = (bytes as f64 / WINDOW).min(1.0);
        self.cost = Some(match self.cost {
            None => sample,
            Some(c) => c + weight * (sample - c),
        });
    }

    fn rate(&self) -> f64 {
        self.bytes as f64 / self.busy.as_secs_f64().max(1e-9)
    }
}

#[derive(Debug)]
struct State {
    direct: Way,
    buffered: Way,
    leader: WriteMode,
    picks: u64,
    /// Times the leader changed after the exploration.
    switches: u32,
}

/// The chooser one restore shares between its channels' writers.
#[derive(Debug)]
pub struct Adaptive {
    state: Mutex<State>,
}

impl Default for Adaptive {
    fn default() -> Self {
        Adaptive {
            state: Mutex::new(State {
                direct: Way::default(),
                buffered: Way::default(),
                leader: WriteMode::Direct,
                picks: 0,
                switches: 0,
            }),
        }
    }
}

fn other(m: WriteMode) -> WriteMode {
    match m {
        WriteMode::Direct => WriteMode::Buffered,
        WriteMode::Buffered => WriteMode::Direct,
    }
}

impl State {
    fn way(&mut self, m: WriteMode) -> &mut Way {
        match m {
            WriteMode::Direct => &mut self.direct,
            WriteMode::Buffered => &mut self.buffered,
        }
    }

    fn exploring(&self) -> bool {
        self.direct.bytes < EXPLORE || self.buffered.bytes < EXPLORE
    }
}

impl Adaptive {
    /// The way the next write goes.
    pub fn pick(&self) -> WriteMode {
        let mut s = self.state.lock().expect("not poisoned");
        s.picks += 1;
        if s.exploring() {
            return if s.direct.bytes <= s.buffered.bytes {
                WriteMode::Direct
            } else {
                WriteMode::Buffered
            };
        }
        if s.picks.is_multiple_of(RESAMPLE) {
            other(s.leader)
        } else {
            s.leader
        }
    }

    /// A write of `bytes` that went `mode`'s way took `took` of its writer's time.
    pub fn record(&self, mode: WriteMode, bytes: u64, took: Duration) {
        let mut s = self.state.lock().expect("not poisoned");
        s.way(mode).record(bytes, took);
        if s.exploring() {
            return;
        }
        let leader = s.leader;
        let (lead, challenger) = (s.way(leader).cost, s.way(other(leader)).cost);
        if let (Some(l), Some(c)) = (lead, challenger)
            && c < l * HYSTERESIS
        {
            s.leader = other(leader);
            s.switches += 1;
        }
    }

    /// The way that leads now.
    pub fn leader(&self) -> WriteMode {
        self.state.lock().expect("not poisoned").leader
    }

    /// What each way wrote and at what rate per writer, for `-v` and the OUTPUT rows.
    pub fn summary(&self) -> String {
        let s = self.state.lock().expect("not poisoned");
        let way = |name: &str, w: &Way| {
            format!(
                "{name} {} MiB at {:.0} MB/s per writer",
                w.bytes >> 20,
                w.rate() / 1e6
            )
        };
        format!(
            "adaptive, {} leads ({}; {}; the lead changed {} time(s) after the first {} MiB each way)",
            s.leader.name(),
            way("direct", &s.direct),
            way("buffered", &s.buffered),
            s.switches,
            EXPLORE >> 20
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds the chooser writes of 1 MiB whose cost per way `cost` gives (nanoseconds per
    /// byte), `n` writes; the bytes each way wrote.
    fn run(a: &Adaptive, n: u64, cost: impl Fn(WriteMode) -> f64) -> (u64, u64) {
        let (mut d, mut b) = (0, 0);
        for _ in 0..n {
            let m = a.pick();
            let bytes = 1u64 << 20;
            a.record(
                m,
                bytes,
                Duration::from_nanos((cost(m) * bytes as f64) as u64),
            );
            match m {
                WriteMode::Direct => d += bytes,
                WriteMode::Buffered => b += bytes,
            }
        }
        (d, b)
    }

    #[test]
    fn the_cheaper_way_takes_nearly_every_write_after_the_exploration() {
        // Buffered writes at a third of direct writes' speed, as on the host where a probe
        // chose them wrongly: after 48 MiB each way, direct writes take 11 writes in 12.
        let a = Adaptive::default();
        let (d, b) = run(&a, 3000, |m| match m {
            WriteMode::Direct => 1.0,
            WriteMode::Buffered => 3.0,
        });
        assert_eq!(a.leader(), WriteMode::Direct);
        assert!(
            b <= EXPLORE + (3000u64 << 20) / RESAMPLE + (1 << 20),
            "buffered {b}"
        );
        assert!(d > 10 * b / 2, "direct {d}, buffered {b}");
        // And the other way round: a disk that takes buffered writes faster.
        let a = Adaptive::default();
        let (d, b) = run(&a, 3000, |m| match m {
            WriteMode::Direct => 2.0,
            WriteMode::Buffered => 1.0,
        });
        assert_eq!(a.leader(), WriteMode::Buffered);
        assert!(
            d <= EXPLORE + (3000u64 << 20) / RESAMPLE + (1 << 20),
            "direct {d}"
        );
        assert!(b > d, "direct {d}, buffered {b}");
    }

    #[test]
    fn a_disk_that_changes_midway_is_followed_and_noise_does_not_swing_the_lead() {
        let a = Adaptive::default();
        run(&a, 500, |m| match m {
            WriteMode::Direct => 1.0,
            WriteMode::Buffered => 2.0,
        });
        assert_eq!(a.leader(), WriteMode::Direct);
        // Within the hysteresis: the lead stays.
        run(&a, 500, |m| match m {
            WriteMode::Direct => 1.0,
            WriteMode::Buffered => 0.95,
        });
        assert_eq!(a.leader(), WriteMode::Direct);
        // Direct writes slow down for good: the resampled buffered writes take the lead.
        run(&a, 1000, |m| match m {
            WriteMode::Direct => 4.0,
            WriteMode::Buffered => 1.0,
        });
        assert_eq!(a.leader(), WriteMode::Buffered);
        assert!(a.summary().contains("buffered leads"), "{}", a.summary());
    }

    #[test]
    fn a_slow_small_first_write_does_not_decide() {
        // A small file's write first: 8 KiB in a millisecond, a hundred times the direct rate
        // of the large writes after it. Direct writes are still the cheaper way.
        let a = Adaptive::default();
        assert_eq!(a.pick(), WriteMode::Direct);
        a.record(WriteMode::Direct, 8 << 10, Duration::from_millis(1));
        run(&a, 400, |m| match m {
            WriteMode::Direct => 1.0,
            WriteMode::Buffered => 1.5,
        });
        assert_eq!(a.leader(), WriteMode::Direct, "{}", a.summary());
    }
}
