//! `--tune auto`: the seeds' tuning loop run by the backup itself. After each backup set a
//! channel reports how its time went — long waits for reads, long waits for the output, CPU
//! used by its thread — and the tuner changes what the next set on the same input device uses:
//! the read request size and the queue depth (input buffers per file in flight), and the
//! compression (none, lz4, then zstd levels). Each change is recorded with the figures behind it (see
//! [`crate::window::Live::event`]), so `report io` shows what the backup did and why.
//!
//! The rules are the seeds' own: a channel that waits for its reads has a device with more to
//! give when more and larger requests are in flight (and CPU to spare, so heavier compression
//! costs nothing and writes less); one that waits for its output writes less with heavier
//! compression; one that never waits is bound by its CPU, and lighter compression helps.

use crate::io::{BufferPlan, IoCounters, IoSettings};
use crate::window::Live;
use recman_format::Compression;
use std::collections::HashMap;
use std::sync::Mutex;

/// Largest read request (the format's largest chunk).
const MAX_REQUEST: usize = recman_format::MAX_CHUNK;
/// Most reads in flight per open file.
const MAX_DEPTH: usize = 32;
/// Most files read at once when the tuner adds some (the plan fixes the channels).
const MAX_FILES: u32 = 16;
/// Shares of a set's time that make a side the limit.
const WAITING: f64 = 0.3;
const BUSY: f64 = 0.8;
/// Sets shorter than this say nothing reliable.
const MIN_SET_MICROS: u64 = 200_000;

/// What one finished set measured.
pub struct SetMeasure<'a> {
    pub channel: u32,
    pub device: u64,
    pub input: &'a IoCounters,
    pub output: Option<&'a IoCounters>,
    pub elapsed_us: u64,
    pub cpu_us: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DevTune {
    size: usize,
    depth: usize,
    /// Files read at once; None: the plan's.
    files: Option<u32>,
}

pub struct Tuner {
    devices: Mutex<HashMap<u64, DevTune>>,
    compression: Mutex<Compression>,
}

impl Tuner {
    pub fn new(compression: Compression) -> Tuner {
        Tuner {
            devices: Mutex::new(HashMap::new()),
            compression: Mutex::new(compression),
        }
    }

    /// The buffers, files read at once and compression of the next set read from `device`
    /// (`mux`: the plan's files at once for that set).
    pub fn for_set(
        &self,
        device: u64,
        mux: u32,
        io: &IoSettings,
    ) -> (BufferPlan, u32, Compression) {
        let base = BufferPlan::for_mux(mux, io);
        let (plan, files) = match self.devices.lock().expect("tuner lock").get(&device) {
            Some(t) => (
                BufferPlan {
                    per_file: t.depth,
                    size: t.size,
                },
                t.files.map_or(mux, |f| f.max(mux)),
            ),
            None => (base, mux),
        };
        (plan, files, *self.compression.lock().expect("tuner lock"))
    }

    /// Learns from a finished set that used `plan` with `files` read at once, recording every
    /// change in `live`.
    pub fn learn(&self, live: &Live, plan: BufferPlan, files: u32, m: &SetMeasure) {
        if m.elapsed_us < MIN_SET_MICROS || m.input.io_count < 4 {
            return;
        }
        let el = m.elapsed_us as f64;
        let read_wait = m.input.long_wait_time.as_micros() as f64 / el;
        let write_wait = m
            .output
            .map(|o| o.long_wait_time.as_micros() as f64 / el)
            .unwrap_or(0.0);
        let cpu = m.cpu_us as f64 / el;
        let figures = format!(
            "set of {:.1} s on device {}:{}: reads waited {:.0}%, output waited {:.0}%, cpu {:.0}%",
            el / 1e6,
            libc::major(m.device),
            libc::minor(m.device),
            read_wait * 100.0,
            write_wait * 100.0,
            cpu * 100.0
        );
        let ch = Some(m.channel);
        if read_wait > WAITING {
            let mut devs = self.devices.lock().expect("tuner lock");
            let t = devs.entry(m.device).or_insert(DevTune {
                size: plan.size,
                depth: plan.per_file,
                files: None,
            });
            // Requests as deep and large as they go: more files in flight.
            let cur = t.files.unwrap_or(files).max(files);
            if t.depth >= MAX_DEPTH && t.size >= MAX_REQUEST && cur < MAX_FILES {
                let new = (cur + 2).min(MAX_FILES);
                live.event(
                    ch,
                    "files_in_flight",
                    Some(cur.to_string()),
                    new.to_string(),
                    format!("input bound: {figures}; more files read at once"),
                );
                t.files = Some(new);
            }
            if t.depth < MAX_DEPTH {
                let new = (t.depth * 2).min(MAX_DEPTH);
                live.event(
                    ch,
                    "queue_depth",
                    Some(t.depth.to_string()),
                    new.to_string(),
                    format!("input bound: {figures}; more reads in flight"),
                );
                t.depth = new;
            }
            if t.size < MAX_REQUEST {
                let new = (t.size * 2).min(MAX_REQUEST);
                live.event(
                    ch,
                    "input_buffer_size",
                    Some(t.size.to_string()),
                    new.to_string(),
                    format!("input bound: {figures}; larger read requests"),
                );
                t.size = new;
            }
            drop(devs);
            // Up to zstd's default level only: past it each level costs much more CPU for
            // little, and a channel pushed into being CPU bound loses the time it was waiting.
            let light = match *self.compression.lock().expect("tuner lock") {
                Compression::Zstd { level } => level < Compression::ZSTD_DEFAULT_LEVEL,
                Compression::None | Compression::Lz4 => true,
            };
            if cpu < 0.5 && light {
                self.step_level(live, ch, 2, &format!("input bound with cpu to spare: {figures}; heavier compression writes less at no cost in time"));
            }
        } else if write_wait > WAITING {
            self.step_level(
                live,
                ch,
                2,
                &format!("output bound: {figures}; heavier compression writes less"),
            );
        } else if cpu > BUSY {
            self.step_level(
                live,
                ch,
                -2,
                &format!("cpu bound: {figures}; lighter compression"),
            );
        }
    }

    /// Moves compression `by` zstd levels along the ladder none < lz4 < zstd:1 < … < zstd:19:
    /// from none or lz4 a step up is one rung (an output-bound backup without compression
    /// gains most from the cheapest one), within zstd `by` levels; down the same way, so a
    /// CPU-bound zstd:1 backup falls back to lz4 and then to none.
    fn step_level(&self, live: &Live, ch: Option<u32>, by: i32, reason: &str) {
        let mut c = self.compression.lock().expect("tuner lock");
        let new = match (*c, by > 0) {
            (Compression::None, true) => Compression::Lz4,
            (Compression::Lz4, true) => Compression::Zstd { level: 1 },
            (Compression::Lz4, false) => Compression::None,
            (Compression::Zstd { level: 1 }, false) => Compression::Lz4,
            (Compression::Zstd { level }, _) => Compression::Zstd {
                level: (level + by).clamp(1, 19),
            },
            (other, _) => other,
        };
        if new != *c {
            live.event(
                ch,
                "compress_level",
                Some(c.to_string()),
                new.to_string(),
                reason.to_string(),
            );
            *c = new;
        }
    }
}

/// CPU time used by the calling thread so far, in microseconds.
pub fn thread_cpu_micros() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn measure(input_wait_ms: u64, output_wait_ms: u64, cpu_ms: u64) -> (IoCounters, IoCounters) {
        let input = IoCounters {
            io_count: 100,
            long_waits: 10,
            long_wait_time: Duration::from_millis(input_wait_ms),
            ..Default::default()
        };
        let output = IoCounters {
            io_count: 10,
            long_waits: 1,
            long_wait_time: Duration::from_millis(output_wait_ms),
            ..Default::default()
        };
        let _ = cpu_ms;
        (input, output)
    }

    fn learn(t: &Tuner, live: &Live, plan: BufferPlan, waits: (u64, u64), cpu_ms: u64) {
        let (i, o) = measure(waits.0, waits.1, cpu_ms);
        t.learn(
            live,
            plan,
            2,
            &SetMeasure {
                channel: 1,
                device: 7,
                input: &i,
                output: Some(&o),
                elapsed_us: 1_000_000,
                cpu_us: cpu_ms * 1000,
            },
        );
    }

    #[test]
    fn each_bound_moves_its_setting_the_right_way() {
        let live = Live::new(1, None, Instant::now(), 0);
        let io = IoSettings::default();
        let t = Tuner::new(Compression::Zstd { level: 3 });
        let (plan, _, _) = t.for_set(7, 1, &io);
        // CPU bound: lighter compression, buffers left alone.
        learn(&t, &live, plan, (10, 10), 950);
        assert_eq!(
            t.for_set(7, 1, &io),
            (plan, 1, Compression::Zstd { level: 1 })
        );
        // Input bound with CPU to spare: deeper queue, larger requests, heavier compression.
        learn(&t, &live, plan, (600, 0), 300);
        let (p2, f2, c2) = t.for_set(7, 1, &io);
        assert_eq!(f2, 1, "requests can still grow: files in flight wait");
        assert!(
            p2.per_file > plan.per_file && p2.size >= plan.size,
            "{p2:?}"
        );
        assert_eq!(c2, Compression::Zstd { level: 3 });
        // Another device keeps its own settings.
        assert_eq!(t.for_set(8, 1, &io).0, plan);
        // Output bound: heavier compression.
        learn(&t, &live, p2, (0, 500), 300);
        assert_eq!(t.for_set(7, 1, &io).2, Compression::Zstd { level: 5 });
        // Requests at their deepest and largest: more files at once.
        for _ in 0..4 {
            learn(&t, &live, p2, (900, 0), 900);
        }
        assert_eq!(t.for_set(7, 1, &io).1, 8);
        let (_, ev) = live.take("B");
        let settings: Vec<&str> = ev.iter().map(|e| e.setting.as_str()).collect();
        assert_eq!(
            settings,
            [
                "compress_level",
                "queue_depth",
                "input_buffer_size",
                "compress_level",
                "compress_level",
                "input_buffer_size",
                "files_in_flight",
                "files_in_flight",
                "files_in_flight",
            ]
        );
        assert!(ev[1].reason.starts_with("input bound"), "{}", ev[1].reason);
    }

    #[test]
    fn compression_climbs_from_none_when_output_bound_and_falls_back_when_cpu_bound() {
        let live = Live::new(1, None, Instant::now(), 0);
        let io = IoSettings::default();
        let t = Tuner::new(Compression::None);
        let (plan, _, _) = t.for_set(7, 1, &io);
        let mut seen = Vec::new();
        for _ in 0..3 {
            learn(&t, &live, plan, (0, 600), 200);
            seen.push(t.for_set(7, 1, &io).2);
        }
        assert_eq!(
            seen,
            [
                Compression::Lz4,
                Compression::Zstd { level: 1 },
                Compression::Zstd { level: 3 }
            ]
        );
        seen.clear();
        for _ in 0..3 {
            learn(&t, &live, plan, (10, 10), 950);
            seen.push(t.for_set(7, 1, &io).2);
        }
        assert_eq!(
            seen,
            [
                Compression::Zstd { level: 1 },
                Compression::Lz4,
                Compression::None
            ]
        );
    }
}
