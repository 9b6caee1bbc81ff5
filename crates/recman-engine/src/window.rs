//! RMAN's DURATION and the live view of a running backup. A backup with a window either runs
//! flat out and stops at the window's end (MINIMIZE TIME; with PARTIAL the finished sets are
//! kept) or is spread evenly over the window (MINIMIZE LOAD): a rate shared by every channel,
//! recomputed each second as the bytes left over the time left. The same monitor thread keeps
//! one sample per channel per second (bytes read and written) for `report io --plot`, and every
//! change it makes is recorded with its reason.

use crate::pacer::Pacer;
use recman_catalog::{IoSample, TuningEvent};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a DURATION window asks the backup to minimize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Minimize {
    /// Run at full speed; the window is a deadline.
    Time,
    /// Spread the reads over the whole window.
    Load,
}

/// RMAN's DURATION hh:mm[:ss] [PARTIAL] [MINIMIZE TIME | MINIMIZE LOAD].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub length: Duration,
    /// Keep the sets finished when the window ends as a partial backup instead of failing.
    pub partial: bool,
    pub minimize: Minimize,
}

impl Window {
    /// Parses `H:MM[:SS]` (RMAN's hh:mm[:ss]).
    pub fn parse_length(text: &str) -> Result<Duration, crate::error::EngineError> {
        let bad = || {
            crate::error::EngineError::from(crate::refusal::Input::Duration {
                text: text.to_string(),
            })
        };
        let parts: Vec<&str> = text.trim().split(':').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(bad());
        }
        let mut n = [0u64; 3];
        for (i, p) in parts.iter().enumerate() {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            n[i] = p.parse().map_err(|_| bad())?;
            if i > 0 && n[i] > 59 {
                return Err(bad());
            }
        }
        let secs = n[0] * 3600 + n[1] * 60 + n[2];
        if secs == 0 {
            return Err(crate::refusal::Input::EmptyDuration {
                text: text.to_string(),
            }
            .into());
        }
        Ok(Duration::from_secs(secs))
    }

    /// `H:MM:SS`, as RMAN prints it.
    pub fn text(&self) -> String {
        let s = self.length.as_secs();
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    }

    /// When the data should be read by under MINIMIZE LOAD: a little before the window ends,
    /// leaving time to stop the backup and archive its WAL.
    fn data_length(&self) -> Duration {
        self.length - (self.length / 20).min(Duration::from_secs(30))
    }
}

/// What one channel has moved so far; the monitor turns it into per-second samples.
#[derive(Default)]
pub struct Meter {
    pub read: AtomicU64,
    pub written: AtomicU64,
}

/// What the channels of a running backup share with its monitor.
pub struct Live {
    pub meters: Vec<Meter>,
    pub pacer: Option<Arc<Pacer>>,
    pub window: Option<Window>,
    started: Instant,
    /// Bytes the backup reads in all.
    total: u64,
    events: Mutex<Vec<TuningEvent>>,
    samples: Mutex<Vec<IoSample>>,
    /// Set when a channel stopped at the window's end with work left (PARTIAL).
    pub cut_short: AtomicBool,
    /// `--tune auto`: what the channels learn between sets.
    pub tuner: Option<crate::tune::Tuner>,
}

impl Live {
    /// `started`: when the command started (the window counts from there); `total`: the bytes
    /// the channels will read.
    pub fn new(channels: u32, window: Option<Window>, started: Instant, total: u64) -> Live {
        let pacer = window
            .filter(|w| w.minimize == Minimize::Load)
            .map(|_| Arc::new(Pacer::new(None)));
        Live {
            meters: (0..channels.max(1)).map(|_| Meter::default()).collect(),
            pacer,
            window,
            started,
            total,
            events: Mutex::new(Vec::new()),
            samples: Mutex::new(Vec::new()),
            cut_short: AtomicBool::new(false),
            tuner: None,
        }
    }

    /// Adapts settings between sets (`--tune auto`).
    pub fn with_tuner(mut self, tuner: Option<crate::tune::Tuner>) -> Live {
        self.tuner = tuner;
        self
    }

    /// A meter per channel (1-based channel numbers).
    pub fn meter(&self, channel: u32) -> &Meter {
        &self.meters[(channel.max(1) as usize - 1).min(self.meters.len() - 1)]
    }

    /// Whether the window (when there is one) has ended.
    pub fn past_deadline(&self) -> bool {
        self.window
            .is_some_and(|w| w.minimize == Minimize::Time && self.started.elapsed() >= w.length)
    }

    /// Records a setting change.
    pub fn event(
        &self,
        channel: Option<u32>,
        setting: &str,
        old: Option<String>,
        new: String,
        reason: String,
    ) {
        let mut ev = self.events.lock().expect("events lock");
        let seq = ev.len() as u32 + 1;
        ev.push(TuningEvent {
            job_id: String::new(),
            seq,
            at_ms: self.started.elapsed().as_millis() as u64,
            channel,
            setting: setting.into(),
            old_value: old,
            new_value: new,
            reason,
        });
    }

    fn read_total(&self) -> u64 {
        self.meters
            .iter()
            .map(|m| m.read.load(Ordering::Relaxed))
            .sum()
    }

    /// MINIMIZE LOAD: the rate that reads what is left in the time left.
    fn repace(&self) {
        let (Some(p), Some(w)) = (&self.pacer, self.window) else {
            return;
        };
        let left = self.total.saturating_sub(self.read_total());
        let time_left = w.data_length().saturating_sub(self.started.elapsed());
        let new = (left > 0 && time_left >= Duration::from_millis(100))
            .then(|| left as f64 / time_left.as_secs_f64());
        let old = p.rate();
        let changed = match (old, new) {
            (Some(a), Some(b)) => (a - b).abs() > 0.1 * a,
            (None, None) => false,
            _ => true,
        };
        p.set_rate(new);
        if changed {
            let show = |r: Option<f64>| match r {
                Some(r) => format!("{:.2} MiB/s", r / (1u64 << 20) as f64),
                None => "unlimited".into(),
            };
            self.event(
                None,
                "rate",
                old.map(|r| show(Some(r))),
                show(new),
                format!(
                    "DURATION {} MINIMIZE LOAD: {left} bytes left to read in {:.1} s",
                    w.text(),
                    time_left.as_secs_f64()
                ),
            );
        }
    }

    /// Runs until `stop` is set: one sample per channel per second, and the LOAD rate
    /// recomputed each second.
    pub fn monitor(&self, stop: &AtomicBool) {
        let t0 = Instant::now();
        self.repace();
        let mut last: Vec<(u64, u64)> = vec![(0, 0); self.meters.len()];
        let mut second = 0u32;
        loop {
            let due = t0 + Duration::from_secs(second as u64 + 1);
            // Parked rather than asleep: whoever sets `stop` unparks this thread, so the end of
            // a backup never waits out the rest of a nap (a spurious wake-up just loops).
            while !stop.load(Ordering::Relaxed) && Instant::now() < due {
                std::thread::park_timeout(
                    due.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(50)),
                );
            }
            let stopping = stop.load(Ordering::Relaxed);
            let mut s = self.samples.lock().expect("samples lock");
            for (i, m) in self.meters.iter().enumerate() {
                let now = (
                    m.read.load(Ordering::Relaxed),
                    m.written.load(Ordering::Relaxed),
                );
                let (r, w) = (now.0 - last[i].0, now.1.saturating_sub(last[i].1));
                last[i] = now;
                if stopping && r == 0 && w == 0 {
                    continue;
                }
                s.push(IoSample {
                    job_id: String::new(),
                    channel: i as u32 + 1,
                    second,
                    bytes_read: r,
                    bytes_written: w,
                });
            }
            drop(s);
            if stopping {
                break;
            }
            self.repace();
            second += 1;
        }
    }

    /// The samples and changes, stamped with the job's id; the pacer's waits are one more
    /// change-log line, so that a throttled backup says how often it was held back.
    pub fn take(&self, job_id: &str) -> (Vec<IoSample>, Vec<TuningEvent>) {
        if let (Some(p), Some(w)) = (&self.pacer, self.window) {
            let (n, slept) = p.waits();
            self.event(
                None,
                "throttle",
                None,
                format!("{n} waits"),
                format!(
                    "DURATION {} MINIMIZE LOAD held the channels back {n} times, {:.1} s in all",
                    w.text(),
                    slept.as_secs_f64()
                ),
            );
        }
        let mut s = std::mem::take(&mut *self.samples.lock().expect("samples lock"));
        let mut e = std::mem::take(&mut *self.events.lock().expect("events lock"));
        s.iter_mut().for_each(|r| r.job_id = job_id.to_string());
        e.iter_mut().for_each(|r| r.job_id = job_id.to_string());
        (s, e)
    }
}

impl crate::tune::TuneEvents for Live {
    fn event(
        &self,
        channel: Option<u32>,
        setting: &str,
        old: Option<String>,
        new: String,
        reason: String,
    ) {
        Live::event(self, channel, setting, old, new, reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_rman_writes_them() {
        assert_eq!(
            Window::parse_length("0:00:20").unwrap(),
            Duration::from_secs(20)
        );
        assert_eq!(
            Window::parse_length("1:30").unwrap(),
            Duration::from_secs(5400)
        );
        for bad in ["", "20", "0:60", "1:2:3:4", "a:00", "0:00:00", "-1:00"] {
            assert!(Window::parse_length(bad).is_err(), "{bad}");
        }
        let w = Window {
            length: Duration::from_secs(3725),
            partial: false,
            minimize: Minimize::Load,
        };
        assert_eq!(w.text(), "1:02:05");
    }

    #[test]
    fn the_load_rate_is_bytes_left_over_time_left() {
        let w = Window {
            length: Duration::from_secs(20),
            partial: false,
            minimize: Minimize::Load,
        };
        let live = Live::new(2, Some(w), Instant::now(), 190 << 20);
        live.repace();
        // 190 MiB over the 19 s before the end margin: about 10 MiB/s.
        let r = live.pacer.as_ref().unwrap().rate().unwrap();
        assert!((r - (10 << 20) as f64).abs() < (1 << 20) as f64, "{r}");
        live.meter(1).read.store(190 << 20, Ordering::Relaxed);
        live.repace();
        assert_eq!(live.pacer.as_ref().unwrap().rate(), None);
        let (_, ev) = live.take("B1");
        assert_eq!(ev.len(), 3, "{ev:?}");
        assert_eq!(ev[0].setting, "rate");
        assert_eq!(ev[1].new_value, "unlimited");
        assert_eq!(ev[2].setting, "throttle");
        assert!(ev.iter().all(|e| e.job_id == "B1"));
    }
}
