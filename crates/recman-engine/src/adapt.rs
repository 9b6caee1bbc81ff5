//! Choosing direct or buffered I/O while an operation runs: a backup's reads and a restore's
//! writes take turns, all files one way and then the other. A probe before the work could not
//! choose: on one host of this machine class a 64 MiB probe saw buffered writes 2.4 times
//! faster than direct ones and the buffered restore then ran at 0.38 of the direct rate; on
//! the same host a day later buffered restores ran at 1.3 times the direct rate. Reads differ
//! the same way: on one host direct reads of a cold cluster ran at 1.6 GB/s and buffered ones
//! cost a copy the two cores needed for compression; on another, direct reads held at 420-550
//! MB/s while buffered reads of the same cold files, with the kernel's read-ahead, ran at 700
//! MB/s. What a disk gives is seen only while the work runs, so the work measures both ways on
//! its own data and keeps the cheaper.
//!
//! A read's cost is the time its channel waited for it (a read that was ready when wanted cost
//! nothing). A write's is its turn's wall-clock time over the bytes the disk wrote in it
//! ([`Adaptive::by_turns`]). The chooser first gives each way a turn, then the cheaper way
//! leads and the other gets a window whenever it falls behind one [`RESAMPLE`]th of the
//! bytes, so that a disk whose behaviour changes midway is followed. The leader changes only
//! when the other way is cheaper by [`HYSTERESIS`] and by more than [`FLOOR`], so noise does
//! not make it swing, and two ways that both cost next to nothing (a CPU-bound backup waits
//! for no read) keep direct I/O, the way that costs the CPU no copy.

use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// The way that does not lead keeps at least one byte in this many.
const RESAMPLE: u64 = 12;

/// The bytes of one window the way that does not lead takes in [`Adaptive::phase`].
const RESAMPLE_WINDOW: u64 = 16 << 20;

/// [`EXPLORE`] and [`RESAMPLE_WINDOW`] where turns are timed ([`Adaptive::by_turns`]): a
/// turn's first and last moments mix with its neighbours' (a buffered turn's writeback goes
/// on in the turn after it), which a turn must be long enough to outweigh.
const TURN_EXPLORE: u64 = 128 << 20;
const TURN_WINDOW: u64 = 64 << 20;

/// The way that does not lead takes over when its cost is below this share of the leader's.
const HYSTERESIS: f64 = 0.9;

/// ... and below the leader's by more than this many nanoseconds a byte (0.1 s a GB): two
/// ways that both cost next to nothing are a tie, which the leader keeps.
const FLOOR: f64 = 0.1;

/// Bytes over which a way's cost is averaged (an exponential average): recent enough to
/// follow a disk that slows down, long enough to smooth single writes.
const WINDOW: f64 = (64 << 20) as f64;

/// How a way's cost is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// Each request's own time, as its caller reports it.
    Request,
    /// The wall-clock time of each turn of [`Adaptive::phase`] over the bytes of all the
    /// requests that went that way in it.
    Turn,
}

#[derive(Debug, Default, Clone, Copy)]
struct Way {
    bytes: u64,
    /// Bytes whose time is counted in `busy`: all of `bytes` when each request is timed, those
    /// of closed turns when turns are.
    charged: u64,
    busy: Duration,
    /// Nanoseconds per byte, averaged over about [`WINDOW`] bytes; None before the first write.
    cost: Option<f64>,
}

impl Way {
    fn record(&mut self, bytes: u64, took: Duration) {
        self.bytes += bytes;
        self.charge(bytes, took);
    }

    /// Counts `took` for `bytes` this way moved.
    fn charge(&mut self, bytes: u64, took: Duration) {
        self.charged += bytes;
        self.busy += took;
        if bytes == 0 {
            return;
        }
        // Until a window's worth is written, the cost is the plain ratio of time to bytes: an
        // average started from the first write alone would carry that write's error (a small
        // file's latency over its few bytes) far into the restore.
        if self.charged as f64 <= WINDOW {
            self.cost = Some(self.busy.as_nanos() as f64 / self.charged as f64);
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
        self.charged as f64 / self.busy.as_secs_f64().max(1e-9)
    }
}

/// The turn under way when turns are timed: its way, when it began, the bytes it moved, and
/// the device's count of bytes written when it began.
#[derive(Debug, Clone, Copy)]
struct Turn {
    way: IoWay,
    began: Instant,
    bytes: u64,
    device_at: Option<u64>,
}

/// The bytes a device has written since it started, as the kernel counts them; None when it
/// cannot be read. Contract: the count never goes down while the device stays.
pub type DeviceMeter = Box<dyn Fn() -> Option<u64> + Send + Sync>;

#[derive(Debug)]
struct State {
    direct: Way,
    buffered: Way,
    leader: IoWay,
    /// In [`Adaptive::phase`]: a window of the way that does not lead is under way.
    resampling: bool,
    /// Times the leader changed after the exploration.
    switches: u32,
    measure: Measure,
    turn: Option<Turn>,
}

/// The chooser one restore shares between its channels' writers, or one backup between its
/// channels' reads.
pub struct Adaptive {
    state: Mutex<State>,
    /// Where turns are timed, the device the requests go to: a turn's bytes are then what
    /// the device wrote in it.
    device: Option<DeviceMeter>,
}

impl std::fmt::Debug for Adaptive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adaptive")
            .field("state", &self.state)
            .field("device", &self.device.is_some())
            .finish()
    }
}

impl Default for Adaptive {
    /// A chooser that takes each request's time as its caller reports it.
    fn default() -> Self {
        Adaptive::measured(Measure::Request, None)
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

    /// The bytes each way is given first, and those of a window of the way that does not lead.
    fn turn_sizes(&self) -> (u64, u64) {
        match self.measure {
            Measure::Request => (EXPLORE, RESAMPLE_WINDOW),
            Measure::Turn => (TURN_EXPLORE, TURN_WINDOW),
        }
    }

    fn exploring(&self) -> bool {
        let explore = self.turn_sizes().0;
        self.direct.bytes < explore || self.buffered.bytes < explore
    }

    /// What `way` costs now: its recent average per request, or where turns are timed, the
    /// average of all its turns. A turn's figure is rough (its first and last moments mix with
    /// its neighbours'). Restores of scale 200 on one host, with a recent average and turns a
    /// quarter as long, handed the lead back and forth and ended with the slower way in two
    /// runs of three; with the average of all turns and these turns, none of three changed
    /// the lead after the first turns, and all kept the faster way.
    fn cost(&self, way: IoWay) -> Option<f64> {
        let w = match way {
            IoWay::Direct => &self.direct,
            IoWay::Buffered => &self.buffered,
        };
        match self.measure {
            Measure::Request => w.cost,
            Measure::Turn => (w.charged > 0).then(|| w.busy.as_nanos() as f64 / w.charged as f64),
        }
    }

    /// Hands the lead to the other way when it is cheaper by both margins.
    fn reconsider(&mut self) {
        if self.exploring() {
            return;
        }
        let leader = self.leader;
        let (lead, challenger) = (self.cost(leader), self.cost(other(leader)));
        if let (Some(l), Some(c)) = (lead, challenger)
            && c < l * HYSTERESIS
            && l - c > FLOOR
        {
            self.leader = other(leader);
            self.switches += 1;
        }
    }

    /// The way of the turn now: see [`Adaptive::phase`].
    fn turn_now(&mut self) -> IoWay {
        let (explore, window) = self.turn_sizes();
        if self.direct.bytes < explore {
            return IoWay::Direct;
        }
        if self.buffered.bytes < explore {
            return IoWay::Buffered;
        }
        let total = self.direct.bytes + self.buffered.bytes;
        let lead = self.leader;
        let behind = self.way(other(lead)).bytes * RESAMPLE;
        if self.resampling && behind >= total {
            self.resampling = false;
        } else if !self.resampling && behind + window * RESAMPLE <= total {
            self.resampling = true;
        }
        if self.resampling { other(lead) } else { lead }
    }

    /// `bytes` went `mode`'s way: they count for the turn under way when they went its way; a
    /// request of the turn before that, ending in this one, adds to its way's bytes only.
    fn count(&mut self, mode: IoWay, bytes: u64) {
        self.way(mode).bytes += bytes;
        if let Some(t) = self.turn.as_mut().filter(|t| t.way == mode) {
            t.bytes += bytes;
        }
    }

    /// Begins a turn of `way` at `now`, closing the turn of the other way: that turn's
    /// wall-clock time is charged to the bytes the device wrote in it (`device`, the device's
    /// count now), or where the device is not known, to the bytes that went its way.
    fn enter(&mut self, way: IoWay, now: Instant, device: Option<u64>) {
        if let Some(t) = self.turn {
            let took = now.saturating_duration_since(t.began);
            let moved = match (t.device_at, device) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => t.bytes,
            };
            self.way(t.way).charge(moved, took);
            self.reconsider();
        }
        self.turn = Some(Turn {
            way,
            began: now,
            bytes: 0,
            device_at: device,
        });
    }
}

impl Adaptive {
    fn measured(measure: Measure, device: Option<DeviceMeter>) -> Adaptive {
        Adaptive {
            device,
            state: Mutex::new(State {
                direct: Way::default(),
                buffered: Way::default(),
                leader: IoWay::Direct,
                resampling: false,
                switches: 0,
                measure,
                turn: None,
            }),
        }
    }

    /// A chooser for writes that many workers make side by side, each waiting for its own
    /// (a restore's writer threads): the ways take turns ([`Adaptive::phase`]) and a way's
    /// cost is the wall-clock time of its turns over the bytes `device` says the disk wrote in
    /// them (or, without a meter, the bytes all the workers wrote in them). One write's own
    /// time says little there: while the ways mix, each way's writes wait behind the other's.
    /// Nor do the bytes handed to the kernel: a buffered write may return at once, its pages
    /// dirty, and leave its writeback to the turns after it.
    pub fn by_turns(device: Option<DeviceMeter>) -> Adaptive {
        Adaptive::measured(Measure::Turn, device)
    }

    /// The way every request goes now, for work whose requests run side by side and would
    /// disturb each other's measure if they went both ways at once (a backup's channels
    /// reading many files, each with reads in flight): the ways take turns. First
    /// [`EXPLORE`] bytes directly, then as many buffered, then the leader, with a window of
    /// [`RESAMPLE_WINDOW`] bytes the other way whenever that way has fallen that far behind
    /// one [`RESAMPLE`]th of the bytes ([`TURN_EXPLORE`] and [`TURN_WINDOW`] where turns are
    /// timed).
    pub fn phase(&self) -> IoWay {
        self.phase_at(Instant::now())
    }

    /// [`Adaptive::phase`] at `now`.
    fn phase_at(&self, now: Instant) -> IoWay {
        let mut s = self.state.lock().expect("not poisoned");
        let way = s.turn_now();
        if s.measure == Measure::Turn && s.turn.map(|t| t.way) != Some(way) {
            let device = self.device.as_ref().and_then(|m| m());
            s.enter(way, now, device);
        }
        way
    }

    /// A request of `bytes` went `mode`'s way and cost `took` (a read: the time its channel
    /// waited for it). Where turns are timed, `took` is not asked: see [`Adaptive::count`].
    pub fn record(&self, mode: IoWay, bytes: u64, took: Duration) {
        let mut s = self.state.lock().expect("not poisoned");
        match s.measure {
            Measure::Request => {
                s.way(mode).record(bytes, took);
                s.reconsider();
            }
            Measure::Turn => s.count(mode, bytes),
        }
    }

    /// A request of `bytes` went `mode`'s way, for a chooser that times its turns
    /// ([`Adaptive::by_turns`]): the turn's clock and the disk say what it cost, so the
    /// request itself need not be timed.
    pub fn count(&self, mode: IoWay, bytes: u64) {
        self.state.lock().expect("not poisoned").count(mode, bytes);
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

    /// What each way of a restore's turns wrote and at what rate, for `-v` and the OUTPUT
    /// rows.
    pub fn summary(&self) -> String {
        self.describe("adaptive", |w| {
            format!(
                "{} MiB at {:.0} MB/s in its turns",
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
            s.turn_sizes().0 >> 20
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// `n` requests of 1 MiB, each the way [`Adaptive::phase`] says and of the cost (the
    /// time the request reports, nanoseconds a byte) `cost` gives; the bytes each way took.
    fn phases(a: &Adaptive, n: u64, cost: impl Fn(IoWay) -> f64) -> (u64, u64) {
        let (mut d, mut b) = (0, 0);
        for _ in 0..n {
            let m = a.phase();
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
    fn the_cheaper_way_takes_nearly_every_request_after_the_exploration() {
        // Buffered requests at a third of direct ones' speed: after 48 MiB each way, direct
        // requests take 11 bytes in 12.
        let a = Adaptive::default();
        let (d, b) = phases(&a, 3000, |m| match m {
            IoWay::Direct => 1.0,
            IoWay::Buffered => 3.0,
        });
        assert_eq!(a.leader(), IoWay::Direct);
        assert!(
            b <= EXPLORE + (3000u64 << 20) / RESAMPLE + RESAMPLE_WINDOW,
            "buffered {b}"
        );
        assert!(d > 10 * b / 2, "direct {d}, buffered {b}");
        // And the other way round: a disk that takes buffered writes faster.
        let a = Adaptive::default();
        let (d, b) = phases(&a, 3000, |m| match m {
            IoWay::Direct => 2.0,
            IoWay::Buffered => 1.0,
        });
        assert_eq!(a.leader(), IoWay::Buffered);
        assert!(
            d <= EXPLORE + (3000u64 << 20) / RESAMPLE + RESAMPLE_WINDOW,
            "direct {d}"
        );
        assert!(b > d, "direct {d}, buffered {b}");
    }

    #[test]
    fn a_disk_that_changes_midway_is_followed_and_noise_does_not_swing_the_lead() {
        let a = Adaptive::default();
        phases(&a, 500, |m| match m {
            IoWay::Direct => 1.0,
            IoWay::Buffered => 2.0,
        });
        assert_eq!(a.leader(), IoWay::Direct);
        // Within the hysteresis: the lead stays.
        phases(&a, 500, |m| match m {
            IoWay::Direct => 1.0,
            IoWay::Buffered => 0.95,
        });
        assert_eq!(a.leader(), IoWay::Direct);
        // Direct writes slow down for good: the resampled buffered writes take the lead.
        phases(&a, 1000, |m| match m {
            IoWay::Direct => 4.0,
            IoWay::Buffered => 1.0,
        });
        assert_eq!(a.leader(), IoWay::Buffered);
        assert!(
            a.read_summary().contains("buffered leads"),
            "{}",
            a.read_summary()
        );
    }

    #[test]
    fn a_slow_small_first_write_does_not_decide() {
        // A small file's write first: 8 KiB in a millisecond, a hundred times the direct rate
        // of the large writes after it. Direct writes are still the cheaper way.
        let a = Adaptive::default();
        assert_eq!(a.phase(), IoWay::Direct);
        a.record(IoWay::Direct, 8 << 10, Duration::from_millis(1));
        phases(&a, 400, |m| match m {
            IoWay::Direct => 1.0,
            IoWay::Buffered => 1.5,
        });
        assert_eq!(a.leader(), IoWay::Direct, "{}", a.read_summary());
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

    /// A disk and a clock for turns: the bytes the disk has written, which the chooser's meter
    /// reads, and the time now.
    struct Disk {
        written: Arc<AtomicU64>,
        now: Instant,
    }

    impl Disk {
        /// A chooser whose turns are timed on a disk of its own.
        fn with_chooser() -> (Disk, Adaptive) {
            let written = Arc::new(AtomicU64::new(0));
            let w = written.clone();
            let a = Adaptive::by_turns(Some(Box::new(move || Some(w.load(Ordering::Relaxed)))));
            let now = Instant::now();
            (Disk { written, now }, a)
        }

        /// `n` requests of 1 MiB made the way `a`'s turns say; each moves the clock on by what
        /// its way takes of all the workers' time (`handed`, seconds a byte) while the disk
        /// writes at what it writes that way (`disk`, bytes a second). The bytes each way was
        /// handed.
        fn turns(
            &mut self,
            a: &Adaptive,
            n: u64,
            handed: impl Fn(IoWay) -> f64,
            disk: impl Fn(IoWay) -> f64,
        ) -> (u64, u64) {
            let (mut d, mut b) = (0, 0);
            for _ in 0..n {
                let m = a.phase_at(self.now);
                let bytes = 1u64 << 20;
                a.count(m, bytes);
                let took = handed(m) * bytes as f64;
                self.now += Duration::from_secs_f64(took);
                self.written
                    .fetch_add((disk(m) * took) as u64, Ordering::Relaxed);
                match m {
                    IoWay::Direct => d += bytes,
                    IoWay::Buffered => b += bytes,
                }
            }
            (d, b)
        }
    }

    /// Seconds a byte at `mb_s` MB/s.
    fn at(mb_s: f64) -> f64 {
        1.0 / (mb_s * 1e6)
    }

    #[test]
    fn turns_keep_the_way_the_disk_writes_faster() {
        // Buffered turns write 440 MB/s, direct ones 280 (a restore on this host class's
        // slower disk): buffered leads, direct keeps its windows.
        let (mut disk, a) = Disk::with_chooser();
        let speed = |m| match m {
            IoWay::Direct => 280e6,
            IoWay::Buffered => 440e6,
        };
        let (d, b) = disk.turns(&a, 2000, |m| 1.0 / speed(m), speed);
        assert_eq!(a.leader(), IoWay::Buffered, "{}", a.summary());
        assert!(d > TURN_EXPLORE && d * 6 < b, "direct {d}, buffered {b}");
        assert!(a.summary().contains("MB/s in its turns"), "{}", a.summary());
        // A disk whose direct writes are the faster: direct keeps the lead.
        let (mut disk, a) = Disk::with_chooser();
        let speed = |m| match m {
            IoWay::Direct => 1500e6,
            IoWay::Buffered => 600e6,
        };
        disk.turns(&a, 2000, |m| 1.0 / speed(m), speed);
        assert_eq!(a.leader(), IoWay::Direct, "{}", a.summary());
        // Both ways held by one limit (a restore waiting on its decompression): a tie, and
        // direct writes stay.
        let (mut disk, a) = Disk::with_chooser();
        disk.turns(&a, 2000, |_| at(400.0), |_| 400e6);
        assert_eq!(a.leader(), IoWay::Direct, "{}", a.summary());
    }

    #[test]
    fn turns_count_what_the_disk_wrote_not_what_the_page_cache_took() {
        // Buffered writes handed to the page cache at 800 MB/s while the disk writes them at
        // 400; direct writes at 450. Direct writes are the faster way to the disk and keep
        // the lead: a turn's bytes are what the disk wrote in it.
        let handed = |m| match m {
            IoWay::Direct => at(450.0),
            IoWay::Buffered => at(800.0),
        };
        let written = |m| match m {
            IoWay::Direct => 450e6,
            IoWay::Buffered => 400e6,
        };
        let (mut disk, a) = Disk::with_chooser();
        disk.turns(&a, 2000, handed, written);
        assert_eq!(a.leader(), IoWay::Direct, "{}", a.summary());
        // Without a meter the page cache's pace is all there is to see, and it misleads.
        let a = Adaptive::by_turns(None);
        disk.turns(&a, 2000, handed, written);
        assert_eq!(a.leader(), IoWay::Buffered, "{}", a.summary());
    }
}
