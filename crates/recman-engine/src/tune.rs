//! `--tune auto`: the seeds' tuning loop run by the backup itself. After each backup set a
//! channel reports how its time went — long waits for reads, long waits for the output, CPU
//! used by its thread — and the rate it read at; the tuner changes what the next set on the
//! same input device uses: the read request size and the queue depth (input buffers per file in
//! flight), the files read at once, and the compression (none, lz4, then zstd levels).
//!
//! The rules only say what might help; the next set's rate says whether it did. A change is a
//! trial: the first set read with it is compared with the set that caused it, and the change is
//! kept only when that set read faster by more than the noise between sets of equal settings
//! (or, for a change meant to cost nothing, not slower by more). Otherwise the settings go back
//! and that direction is not tried again on the device for some sets, twice as many each time
//! it fails — a blkio rate cap, unlike a striped device, gains nothing from a deeper queue, and
//! without this the tuner kept deepening it. Every change and every decision is recorded with
//! the figures behind it (see [`crate::window::Live::event`]), so `report io` shows what the
//! backup did and why.

use crate::io::{BufferPlan, IoCounters, IoSettings};
use recman_format::Compression;
use std::collections::HashMap;
use std::sync::Mutex;

/// Where the tuner records the setting changes it makes (a running backup's
/// [`crate::window::Live`]), so that the tuner needs nothing of the window above it.
/// Contract: `event` appends one change, numbered in call order, and never fails.
pub trait TuneEvents {
    fn event(
        &self,
        channel: Option<u32>,
        setting: &str,
        old: Option<String>,
        new: String,
        reason: String,
    );
}

mod rules;
#[cfg(test)]
mod tests;

/// Largest read request (the format's largest chunk).
const MAX_REQUEST: usize = recman_format::MAX_CHUNK;
/// Most reads in flight per open file.
const MAX_DEPTH: usize = 32;
/// Most files read at once when the tuner adds some (the plan fixes the channels).
const MAX_FILES: u32 = 16;
/// Shares of a set's time that make a side the limit.
const WAITING: f64 = 0.3;
const BUSY: f64 = 0.8;
/// The share of the cores the process may use (the machine's, within its cgroup's CPU limit)
/// that the whole process used over a set, past which the CPU has nothing to spare: waits for
/// the output or the reads are then no reason for heavier compression. Under half a core's
/// quota an uncompressed backup's channels waited 61-64 % of a set for their writers while the
/// process used 80-85 % of its quota (a CFS quota is met in whole periods, and a set of 0.2 s
/// spans two); lz4 then read 36-38 % slower.
const SATURATED: f64 = 0.75;
/// Sets shorter than this say nothing reliable.
const MIN_SET_MICROS: u64 = 200_000;
/// The shortest set the learning layout is planned for. A set of 0.2 s gives a rate, but not
/// one to judge a change by: at scale 100 unthrottled, sets of 0.2-0.4 s read at 550-960 MB/s
/// by their contents alone, and auto, tuning from them, ran at 0.73-0.83 of advise's plan left
/// as it was in three grid runs (docs/tuning.md).
const LEARN_SET_MICROS: u64 = 500_000;
/// The least relative rate difference taken as real; the measured spread between sets of equal
/// settings raises it.
const MIN_NOISE: f64 = 0.05;
/// The most taken as noise: a change that gains more is kept whatever the spread was.
const MAX_NOISE: f64 = 0.2;
/// Sets a failed direction rests before it is tried again (doubling up to the cap).
const REST_SETS: u32 = 4;
const MAX_REST_SETS: u32 = 32;

/// A setting chosen before the backup's first set (`--tune auto` starting from advise's
/// settings), recorded with the tuner's own changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneNote {
    pub setting: String,
    pub old: Option<String>,
    pub new: String,
    pub reason: String,
}

/// Sets a channel gets when auto tuning plans its backup for learning (smaller FILESPERSET,
/// sections): the tuner changes settings between sets, so it needs several.
pub const LEARNING_SETS: u64 = 8;

/// Whether the learning layout would give the tuner nothing to learn from: `bytes` read at the
/// predicted aggregate `rate` (bytes/s) in [`LEARNING_SETS`] sets a channel makes sets of
/// `bytes / (LEARNING_SETS * rate)` seconds whatever the channel count; under
/// [`LEARN_SET_MICROS`] the layout only costs (more sets, each with a piece to commit, and
/// changes judged by noise) and the note returned says the plan stays; None when learning can
/// pay, or when there is no prediction to judge by.
pub fn short_sets(bytes: u64, rate: Option<f64>) -> Option<TuneNote> {
    let rate = rate.filter(|r| r.is_finite() && *r > 0.0)?;
    let data_secs = bytes as f64 / rate;
    let set_micros = data_secs * 1e6 / LEARNING_SETS as f64;
    (set_micros < LEARN_SET_MICROS as f64).then(|| TuneNote {
        setting: "layout".into(),
        old: None,
        new: "as planned".into(),
        reason: format!(
            "tune auto: the data phase is predicted at {data_secs:.1} s, so {LEARNING_SETS} sets a channel would last under {:.1} s each, too short to learn from; sets, sections and settings stay as planned",
            LEARN_SET_MICROS as f64 / 1e6
        ),
    })
}

/// What one finished set measured.
pub struct SetMeasure<'a> {
    pub channel: u32,
    pub device: u64,
    pub input: &'a IoCounters,
    pub output: Option<&'a IoCounters>,
    pub elapsed_us: u64,
    pub cpu_us: u64,
    /// CPU time of the whole process over the set (every channel, piece writer and helper
    /// thread): how near the process ran to the cores it may use.
    pub process_cpu_us: u64,
}

/// The settings one set is read and written with, as [`Tuner::for_set`] gave them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetTune {
    pub plan: BufferPlan,
    /// Files read at once.
    pub files: u32,
    pub compression: Compression,
    /// Which of the device's settings these are; a set read with older ones says nothing about
    /// the newest change.
    generation: u64,
}

/// One input device's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Settings {
    size: usize,
    depth: usize,
    /// Files read at once; None: the plan's.
    files: Option<u32>,
    compression: Compression,
}

/// The ways the tuner moves a device's settings; a failed one rests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Direction {
    DeeperReads,
    MoreFiles,
    HeavierCompression,
    LighterCompression,
}

/// What a trial must show to be kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// A faster set (beyond the noise).
    Faster,
    /// A set not slower beyond the noise: the change is meant to cost no time (heavier
    /// compression with CPU to spare writes less).
    NoSlower,
}

/// A change under test.
struct Trial {
    before: Settings,
    base_rate: f64,
    direction: Direction,
    want: Want,
    /// The changes, as `setting old -> new` for the decision's record.
    changes: Vec<(&'static str, String, String)>,
}

/// Rest of a failed direction: sets left, and the length of the next rest.
#[derive(Clone, Copy, Default)]
struct Rest {
    left: u32,
    next: u32,
}

struct DevState {
    cur: Settings,
    generation: u64,
    trial: Option<Trial>,
    rests: HashMap<Direction, Rest>,
    /// The last set's generation, rate and limit, for the spread between sets of equal settings.
    last: Option<(u64, f64, Option<rules::Bound>)>,
    noise: f64,
}

impl DevState {
    fn new(cur: Settings) -> DevState {
        DevState {
            cur,
            generation: 0,
            trial: None,
            rests: HashMap::new(),
            last: None,
            noise: MIN_NOISE,
        }
    }

    fn resting(&self, d: Direction) -> bool {
        self.rests.get(&d).is_some_and(|r| r.left > 0)
    }
}

pub struct Tuner {
    devices: Mutex<HashMap<u64, DevState>>,
    /// The backup's compression, where every device starts.
    compression: Compression,
    /// Cores' worth of CPU time the process may use: the machine's cores within its cgroup's
    /// CPU limit.
    cores: f64,
}

impl Tuner {
    pub fn new(compression: Compression) -> Tuner {
        Tuner {
            devices: Mutex::new(HashMap::new()),
            compression,
            cores: crate::tuning::allowed_cores(),
        }
    }

    /// The buffers, files read at once and compression of the next set read from `device`
    /// (`mux`: the plan's files at once for that set).
    pub fn for_set(&self, device: u64, mux: u32, io: &IoSettings) -> SetTune {
        match self.devices.lock().expect("tuner lock").get(&device) {
            Some(d) => SetTune {
                plan: BufferPlan {
                    per_file: d.cur.depth,
                    size: d.cur.size,
                },
                files: d.cur.files.map_or(mux, |f| f.max(mux)),
                compression: d.cur.compression,
                generation: d.generation,
            },
            None => SetTune {
                plan: BufferPlan::for_mux(mux, io),
                files: mux,
                compression: self.compression,
                generation: 0,
            },
        }
    }

    /// Learns from a finished set read with `used`, recording every change and decision in
    /// `live`.
    pub fn learn(&self, live: &dyn TuneEvents, used: &SetTune, m: &SetMeasure) {
        if m.elapsed_us < MIN_SET_MICROS || m.input.io_count < 4 {
            return;
        }
        let el = m.elapsed_us as f64;
        let rate = m.input.bytes as f64 / (el / 1e6);
        let read_wait = m.input.long_wait_time.as_micros() as f64 / el;
        // What the writer spent on the CPU (or waiting for it under a quota) is no sign of a
        // slow device: heavier compression would only add to it.
        let write_wait = m
            .output
            .map(|o| {
                let share = crate::tuning::writer_cpu_share(
                    o.cpu_time.as_micros() as u64,
                    o.cpu_wait.as_micros() as u64,
                    o.io_time.as_micros() as u64,
                );
                o.long_wait_time.as_micros() as f64 / el * (1.0 - share)
            })
            .unwrap_or(0.0);
        let cpu = m.cpu_us as f64 / el;
        let process = m.process_cpu_us as f64 / (el * self.cores.max(0.01));
        let saturated = process >= SATURATED;
        let figures = format!(
            "set of {:.1} s on device {}:{} read at {:.1} MB/s: reads waited {:.0}%, output waited {:.0}%, cpu {:.0}%, the process used {:.0}% of {:.2} cores",
            el / 1e6,
            libc::major(m.device),
            libc::minor(m.device),
            rate / 1e6,
            read_wait * 100.0,
            write_wait * 100.0,
            cpu * 100.0,
            process * 100.0,
            self.cores
        );
        let ch = Some(m.channel);
        let mut devs = self.devices.lock().expect("tuner lock");
        let d = devs.entry(m.device).or_insert_with(|| {
            DevState::new(Settings {
                size: used.plan.size,
                depth: used.plan.per_file,
                files: None,
                compression: used.compression,
            })
        });
        let bound = if read_wait > WAITING {
            Some(rules::Bound::Input {
                cpu_to_spare: cpu < 0.5 && !saturated,
            })
        } else if write_wait > WAITING && !saturated {
            Some(rules::Bound::Output)
        } else if cpu > BUSY || saturated {
            Some(rules::Bound::Cpu)
        } else {
            None
        };
        // The spread between sets of equal settings and the same limit; a set after the limit
        // moved (a throttle switched on) would count the move as noise.
        if let Some((g, r, b)) = d.last
            && g == used.generation
            && b == bound
            && r > 0.0
            && rate > 0.0
        {
            let spread = (rate - r).abs() / rate.max(r);
            d.noise = 0.7 * d.noise + 0.3 * spread;
        }
        d.last = Some((used.generation, rate, bound));
        if used.generation != d.generation {
            // Read with settings changed since it started: it tells nothing about them.
            return;
        }
        for r in d.rests.values_mut() {
            r.left = r.left.saturating_sub(1);
        }
        if let Some(trial) = d.trial.take()
            && !rules::decide(live, ch, d, trial, rate, &figures)
        {
            return;
        }
        let Some(bound) = bound else {
            return;
        };
        if let Some((direction, want, next, why)) = rules::next_step(d, bound, used.files) {
            let changes = rules::record_changes(
                live,
                ch,
                &d.cur,
                &next,
                used.files,
                &format!("{why}: {figures}"),
            );
            d.trial = Some(Trial {
                before: d.cur,
                base_rate: rate,
                direction,
                want,
                changes,
            });
            d.cur = next;
            d.generation += 1;
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
