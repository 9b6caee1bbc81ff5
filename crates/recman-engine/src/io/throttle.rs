use std::time::{Duration, Instant};

/// RMAN's RATE: at most `rate` bytes per second through one channel. The channel sleeps
/// whenever it is ahead of the schedule, so the average holds over any stretch longer than a
/// buffer's worth of data.
pub struct Throttle {
    rate: Option<u64>,
    start: Instant,
    bytes: u64,
    /// A schedule shared with the other channels (DURATION … MINIMIZE LOAD), kept as well.
    shared: Option<std::sync::Arc<crate::pacer::Pacer>>,
    /// Time slept so far: what the diagnosis names "rate" when it dominates the channel's time.
    slept: Duration,
}

impl Throttle {
    pub fn new(rate: Option<u64>) -> Throttle {
        Throttle {
            rate: rate.filter(|r| *r > 0),
            start: Instant::now(),
            bytes: 0,
            shared: None,
            slept: Duration::ZERO,
        }
    }

    /// Also keeps to `pacer`, the schedule every channel of the backup shares.
    pub fn shared(mut self, pacer: Option<std::sync::Arc<crate::pacer::Pacer>>) -> Throttle {
        self.shared = pacer;
        self
    }

    /// Sleeps while the channel is ahead of its schedule; call before issuing a read.
    pub fn pace(&mut self) {
        if let Some(p) = &self.shared {
            self.slept += p.pace();
        }
        let wait = self.ahead_by(self.start.elapsed());
        if !wait.is_zero() {
            let t0 = Instant::now();
            std::thread::sleep(wait);
            self.slept += t0.elapsed();
        }
    }

    /// Total time [`Throttle::pace`] slept.
    pub fn slept(&self) -> Duration {
        self.slept
    }

    /// How far ahead of its schedule the channel is `elapsed` after it started: the bytes
    /// counted so far are due at `bytes / rate` seconds. Apart from the clock, so that the
    /// schedule is tested exactly.
    fn ahead_by(&self, elapsed: Duration) -> Duration {
        let Some(rate) = self.rate else {
            return Duration::ZERO;
        };
        Duration::from_secs_f64(self.bytes as f64 / rate as f64).saturating_sub(elapsed)
    }

    /// Counts bytes actually read: a read asked for a whole buffer may return a few pages.
    pub fn add(&mut self, n: u64) {
        if let Some(p) = &self.shared {
            p.add(n);
        }
        self.bytes += n;
    }

    /// `pace` then `add`, for callers that know the size in advance.
    pub fn admit(&mut self, n: u64) {
        self.pace();
        self.add(n);
    }
}

#[cfg(test)]
mod tests {
    use super::Throttle;
    use std::time::Duration;

    #[test]
    fn the_schedule_is_bytes_over_rate() {
        let mut t = Throttle::new(Some(10 << 20));
        assert_eq!(t.ahead_by(Duration::ZERO), Duration::ZERO);
        t.add(5 << 20);
        // 5 MiB at 10 MiB/s are due at 0.5 s.
        assert_eq!(t.ahead_by(Duration::ZERO), Duration::from_millis(500));
        assert_eq!(
            t.ahead_by(Duration::from_millis(200)),
            Duration::from_millis(300)
        );
        assert_eq!(t.ahead_by(Duration::from_millis(500)), Duration::ZERO);
        // Behind schedule (a slow device, a loaded machine) nothing waits, and bytes are held
        // again as soon as they get ahead of the same schedule.
        assert_eq!(t.ahead_by(Duration::from_secs(3)), Duration::ZERO);
        t.add(30 << 20);
        assert_eq!(
            t.ahead_by(Duration::from_secs(3)),
            Duration::from_millis(500)
        );
        let none = Throttle::new(None);
        assert_eq!(none.ahead_by(Duration::ZERO), Duration::ZERO);
    }

    /// Against the real clock only the bound a loaded machine cannot break: the throttle never
    /// lets bytes through ahead of the schedule (a slower run is the machine's doing).
    #[test]
    fn admitting_waits_for_the_schedule() {
        let mut t = Throttle::new(Some(10 << 20));
        let t0 = std::time::Instant::now();
        for _ in 0..4 {
            t.admit(1 << 20);
        }
        // The fourth MiB was admitted once the first three were due: 0.3 s.
        let s = t0.elapsed();
        assert!(
            t.slept() >= Duration::from_millis(300),
            "slept {:?}",
            t.slept()
        );
        assert!(
            s >= Duration::from_millis(300),
            "3 MiB at 10 MiB/s took {s:?}"
        );
    }
}
