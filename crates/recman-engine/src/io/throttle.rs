use std::time::{Duration, Instant};

/// RMAN's RATE: at most `rate` bytes per second through one channel. The channel sleeps
/// whenever it is ahead of the schedule, so the average holds over any stretch longer than a
/// buffer's worth of data.
pub struct Throttle {
    rate: Option<u64>,
    start: Instant,
    bytes: u64,
}

impl Throttle {
    pub fn new(rate: Option<u64>) -> Throttle {
        Throttle {
            rate: rate.filter(|r| *r > 0),
            start: Instant::now(),
            bytes: 0,
        }
    }

    /// Sleeps while the channel is ahead of its schedule; call before issuing a read.
    pub fn pace(&self) {
        let Some(rate) = self.rate else { return };
        let due = Duration::from_secs_f64(self.bytes as f64 / rate as f64);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }

    /// Counts bytes actually read: a read asked for a whole buffer may return a few pages.
    pub fn add(&mut self, n: u64) {
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
    #[test]
    fn holds_the_rate() {
        let mut t = super::Throttle::new(Some(10 << 20));
        let t0 = std::time::Instant::now();
        for _ in 0..11 {
            t.admit(1 << 20);
        }
        let s = t0.elapsed().as_secs_f64();
        assert!((0.95..1.2).contains(&s), "10 MiB at 10 MiB/s took {s}s");
    }
}
