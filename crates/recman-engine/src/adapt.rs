//! Choosing direct or buffered I/O while an operation runs, request by request (a restore's
//! writes) or, for a backup's reads, all files in turns. A probe before the work could not
//! choose: on one host of this machine class a 64 MiB probe saw buffered writes 2.4 times
//! faster than direct ones and the buffered restore then ran at 0.38 of the direct rate; on the same host
//! a day later buffered restores ran at 1.3 times the direct rate. Reads differ the same way:
//! on one host direct reads of a cold cluster ran at 1.6 GB/s and buffered ones cost a copy the
//! two cores needed for compression; on another, direct reads held at 420-550 MB/s while
//! buffered reads of the same cold files, with the kernel's read-ahead, ran at 700 MB/s. What a
//! disk gives is seen only while the work runs, so the work measures both ways on its own data
//! and keeps the cheaper.
//!
//! The caller says what a request cost: for a write, its writer thread's time in it; for a
//! read, the time the channel waited for it (a read that was ready when wanted cost nothing).
//! The chooser first gives each way [`EXPLORE`] bytes, then sends requests the cheaper way,
//! and keeps one pick in [`RESAMPLE`] on the other so that a disk whose behaviour changes
//! midway is followed. The leader changes only when the other way is cheaper by
//! [`HYSTERESIS`] and by more than [`FLOOR`], so noise does not make it swing, and two ways
//! that both cost next to nothing (a CPU-bound backup waits for no read) keep direct I/O, the
//! way that costs the CPU no copy.

use std::sync::Mutex;
use std::time::Duration;

/// Direct I/O (O_DIRECT: no copy through the page cache) or buffered I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoWay {
    Direct,
    Buffered,
}

impl IoWay {
    pub fn name(self) -> &'static str {
        match self {
            IoWay::Direct => "direct",
            IoWay::Buffered => "buffered",
        }
    }
}

/// Bytes each way is given before the cheaper one leads: several writes of every writer, or
/// several files' reads.
const EXPLORE: u64 = 48 << 20;

/// One pick in this many goes the way that does not lead.
const RESAMPLE: u64 = 12;

/// The bytes of one window the way that does not lead takes in [`Adaptive::phase`].
const RESAMPLE_WINDOW: u64 = 16 << 20;

/// The way that does not lead takes over when its cost is below this share of the leader's.
const HYSTERESIS: f64 = 0.9;

/// ... and below the leader's by more than this many nanoseconds a byte (0.1 s a GB): two
/// ways that both cost next to nothing are a tie, which the leader keeps.
const FLOOR: f64 = 0.1;

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
    leader: IoWay,
    picks: u64,
    /// In [`Adaptive::phase`]: a window of the way that does not lead is under way.
    resampling: bool,
    /// Times the leader changed after the exploration.
    switches: u32,
}

/// The chooser one restore shares between its channels' writers, or one backup between its
/// channels' reads.
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
                leader: IoWay::Direct,
                picks: 0,
                resampling: false,
                switches: 0,
            }),
        }
    }
}

fn other(m: IoWay) -> IoWay {
    match m {
        IoWay::Direct => IoWay::Buffered,
        IoWay::Buffered => IoWay::Direct,
    }
}

impl State {
    fn way(&mut self, m: IoWay) -> &mut Way {
        match m {
            IoWay::Direct => &mut self.direct,
            IoWay::Buffered => &mut self.buffered,
        }
    }

    fn exploring(&self) -> bool {
        self.direct.bytes < EXPLORE || self.buffered.bytes < EXPLORE
    }
}

impl Adaptive {
    /// The way every request goes now, for work whose requests run side by side and would
    /// disturb each other's measure if they went both ways at once (a backup's channels
    /// reading many files, each with reads in flight): the ways take turns. First
    /// [`EXPLORE`] bytes directly, then as many buffered, then the leader, with a window of
    /// [`RESAMPLE_WINDOW`] bytes the other way whenever that way has fallen that far behind
    /// one [`RESAMPLE`]th of the bytes.
    pub fn phase(&self) -> IoWay {
        let mut s = self.state.lock().expect("not poisoned");
        if s.direct.bytes < EXPLORE {
            return IoWay::Direct;
        }
        if s.buffered.bytes < EXPLORE {
            return IoWay::Buffered;
        }
        let total = s.direct.bytes + s.buffered.bytes;
        let lead = s.leader;
        let behind = s.way(other(lead)).bytes * RESAMPLE;
        if s.resampling && behind >= total {
            s.resampling = false;
        } else if !s.resampling && behind + RESAMPLE_WINDOW * RESAMPLE <= total {
            s.resampling = true;
        }
        if s.resampling { other(lead) } else { lead }
    }

    /// The way the next write goes.
    pub fn pick(&self) -> IoWay {
        let mut s = self.state.lock().expect("not poisoned");
        s.picks += 1;
        if s.exploring() {
            return if s.direct.bytes <= s.buffered.bytes {
                IoWay::Direct
            } else {
                IoWay::Buffered
            };
        }
        if s.picks.is_multiple_of(RESAMPLE) {
            other(s.leader)
        } else {
            s.leader
        }
    }

    /// A request of `bytes` that went `mode`'s way cost `took`: a write its writer's time, a
    /// read the time the channel waited for it.
    pub fn record(&self, mode: IoWay, bytes: u64, took: Duration) {
        let mut s = self.state.lock().expect("not poisoned");
        s.way(mode).record(bytes, took);
        if s.exploring() {
            return;
        }
        let leader = s.leader;
        let (lead, challenger) = (s.way(leader).cost, s.way(other(leader)).cost);
        if let (Some(l), Some(c)) = (lead, challenger)
            && c < l * HYSTERESIS
            && l - c > FLOOR
        {
            s.leader = other(leader);
            s.switches += 1;
        }
    }

    /// The way that leads now.
    pub fn leader(&self) -> IoWay {
        self.state.lock().expect("not poisoned").leader
    }

    /// Whether any request was recorded.
    pub fn used(&self) -> bool {
        let s = self.state.lock().expect("not poisoned");
        s.direct.bytes + s.buffered.bytes > 0
    }

    /// What each way read and how long the channels waited for it, for `-v`.
    pub fn read_summary(&self) -> String {
        self.describe("adaptive reads of uncached files", |w| {
            format!(
                "{} MiB, waited {:.0} ms a GiB",
                w.bytes >> 20,
                w.busy.as_secs_f64() * 1e3 / (w.bytes.max(1) as f64 / (1u64 << 30) as f64)
            )
        })
    }

    /// What each way wrote and at what rate per writer, for `-v` and the OUTPUT rows.
    pub fn summary(&self) -> String {
        self.describe("adaptive", |w| {
            format!(
                "{} MiB at {:.0} MB/s per writer",
                w.bytes >> 20,
                w.rate() / 1e6
            )
        })
    }

    /// `what`, the leader, each way as `way` words it, and the changes of lead.
    fn describe(&self, what: &str, way: impl Fn(&Way) -> String) -> String {
        let s = self.state.lock().expect("not poisoned");
        format!(
            "{what}, {} leads (direct {}; buffered {}; the lead changed {} time(s) after the first {} MiB each way)",
            s.leader.name(),
            way(&s.direct),
            way(&s.buffered),
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
    fn run(a: &Adaptive, n: u64, cost: impl Fn(IoWay) -> f64) -> (u64, u64) {
        feed(a, n, Adaptive::pick, cost)
    }

    /// `n` requests of 1 MiB, each the way `way` asks of `a` and of the cost `cost` gives;
    /// the bytes each way took.
    fn feed(
        a: &Adaptive,
        n: u64,
        way: impl Fn(&Adaptive) -> IoWay,
        cost: impl Fn(IoWay) -> f64,
    ) -> (u64, u64) {
        let (mut d, mut b) = (0, 0);
        for _ in 0..n {
            let m = way(a);
            let bytes = 1u64 << 20;
            a.record(
                m,
                bytes,
                Duration::from_nanos((cost(m) * bytes as f64) as u64),
            );
            match m {
                IoWay::Direct => d += bytes,
                IoWay::Buffered => b += bytes,
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
            IoWay::Direct => 1.0,
            IoWay::Buffered => 3.0,
        });
        assert_eq!(a.leader(), IoWay::Direct);
        assert!(
            b <= EXPLORE + (3000u64 << 20) / RESAMPLE + (1 << 20),
            "buffered {b}"
        );
        assert!(d > 10 * b / 2, "direct {d}, buffered {b}");
        // And the other way round: a disk that takes buffered writes faster.
        let a = Adaptive::default();
        let (d, b) = run(&a, 3000, |m| match m {
            IoWay::Direct => 2.0,
            IoWay::Buffered => 1.0,
        });
        assert_eq!(a.leader(), IoWay::Buffered);
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
            IoWay::Direct => 1.0,
            IoWay::Buffered => 2.0,
        });
        assert_eq!(a.leader(), IoWay::Direct);
        // Within the hysteresis: the lead stays.
        run(&a, 500, |m| match m {
            IoWay::Direct => 1.0,
            IoWay::Buffered => 0.95,
        });
        assert_eq!(a.leader(), IoWay::Direct);
        // Direct writes slow down for good: the resampled buffered writes take the lead.
        run(&a, 1000, |m| match m {
            IoWay::Direct => 4.0,
            IoWay::Buffered => 1.0,
        });
        assert_eq!(a.leader(), IoWay::Buffered);
        assert!(a.summary().contains("buffered leads"), "{}", a.summary());
    }

    #[test]
    fn a_slow_small_first_write_does_not_decide() {
        // A small file's write first: 8 KiB in a millisecond, a hundred times the direct rate
        // of the large writes after it. Direct writes are still the cheaper way.
        let a = Adaptive::default();
        assert_eq!(a.pick(), IoWay::Direct);
        a.record(IoWay::Direct, 8 << 10, Duration::from_millis(1));
        run(&a, 400, |m| match m {
            IoWay::Direct => 1.0,
            IoWay::Buffered => 1.5,
        });
        assert_eq!(a.leader(), IoWay::Direct, "{}", a.summary());
    }

    /// Feeds the chooser reads of 1 MiB the way [`Adaptive::phase`] says, whose cost per way
    /// `cost` gives; the bytes each way read.
    fn phases(a: &Adaptive, n: u64, cost: impl Fn(IoWay) -> f64) -> (u64, u64) {
        feed(a, n, Adaptive::phase, cost)
    }

    #[test]
    fn reads_take_turns_explore_each_way_whole_then_follow_the_leader() {
        let a = Adaptive::default();
        // The first 48 MiB directly, the next 48 buffered: never both at once.
        assert_eq!(phases(&a, 48, |_| 1.0), (48 << 20, 0));
        assert_eq!(phases(&a, 48, |_| 1.0).1, 48 << 20);
        // Buffered reads cost a quarter: they lead, and direct reads get their windows.
        let (d, b) = phases(&a, 3000, |m| match m {
            IoWay::Direct => 1.2,
            IoWay::Buffered => 0.3,
        });
        assert_eq!(a.leader(), IoWay::Buffered, "{}", a.read_summary());
        assert!(d > 0 && d * 10 < b, "direct {d}, buffered {b}");
    }

    #[test]
    fn two_ways_that_both_cost_next_to_nothing_keep_direct_io() {
        // A CPU-bound backup: the channels hardly ever wait for a read either way. Buffered
        // reads waiting a third as long (0.02 against 0.06 ns a byte) is no reason to pay
        // the page cache's copy.
        let a = Adaptive::default();
        phases(&a, 500, |m| match m {
            IoWay::Direct => 0.06,
            IoWay::Buffered => 0.02,
        });
        assert_eq!(a.leader(), IoWay::Direct, "{}", a.read_summary());
        // Reads that keep the channels waiting, as on a disk whose direct reads are held at
        // 450 MB/s while buffered ones run at 700: buffered reads lead.
        phases(&a, 1000, |m| match m {
            IoWay::Direct => 1.2,
            IoWay::Buffered => 0.3,
        });
        assert_eq!(a.leader(), IoWay::Buffered, "{}", a.read_summary());
        assert!(a.read_summary().contains("buffered leads"));
    }
}
