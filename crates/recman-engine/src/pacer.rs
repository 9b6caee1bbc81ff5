//! The rate every channel of a backup shares under MINIMIZE LOAD: a leaf below the I/O engine's
//! throttle, which waits on it, and the backup window, which sets it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A rate shared by every channel, whose schedule restarts whenever the rate changes. Channels
/// call [`Pacer::pace`] before a read and [`Pacer::add`] with what it returned.
pub struct Pacer {
    state: Mutex<PaceState>,
    waits: AtomicU64,
    slept_us: AtomicU64,
}

struct PaceState {
    since: Instant,
    bytes: u64,
    /// Bytes per second; None: no limit.
    rate: Option<f64>,
}

impl Pacer {
    pub fn new(rate: Option<f64>) -> Pacer {
        Pacer {
            state: Mutex::new(PaceState {
                since: Instant::now(),
                bytes: 0,
                rate,
            }),
            waits: AtomicU64::new(0),
            slept_us: AtomicU64::new(0),
        }
    }

    pub fn set_rate(&self, rate: Option<f64>) {
        let mut s = self.state.lock().expect("pacer lock");
        s.since = Instant::now();
        s.bytes = 0;
        s.rate = rate;
    }

    pub fn rate(&self) -> Option<f64> {
        self.state.lock().expect("pacer lock").rate
    }

    fn ahead_by(&self) -> Duration {
        let s = self.state.lock().expect("pacer lock");
        match s.rate {
            Some(r) if r > 0.0 => {
                Duration::from_secs_f64(s.bytes as f64 / r).saturating_sub(s.since.elapsed())
            }
            _ => Duration::ZERO,
        }
    }

    /// Sleeps while the channels together are ahead of the schedule; returns the time slept.
    pub fn pace(&self) -> Duration {
        let wait = self.ahead_by();
        if wait.is_zero() {
            return Duration::ZERO;
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        let t0 = Instant::now();
        std::thread::sleep(wait);
        let slept = t0.elapsed();
        self.slept_us
            .fetch_add(slept.as_micros() as u64, Ordering::Relaxed);
        slept
    }

    pub fn add(&self, n: u64) {
        self.state.lock().expect("pacer lock").bytes += n;
    }

    /// Times a channel waited for the schedule, and the total time waited.
    pub fn waits(&self) -> (u64, Duration) {
        (
            self.waits.load(Ordering::Relaxed),
            Duration::from_micros(self.slept_us.load(Ordering::Relaxed)),
        )
    }
}
