//! `recman advise`: the seeds' tuning steps walked from a calibration. Each choice carries the
//! figure behind it; the prediction is the slowest of the input, the output and the channels'
//! CPU, at the settings chosen.

use super::Bottleneck;
use super::calibrate::{Calibration, CodecRate, InputDevice};
use super::read_check;
use super::shared_probe::shared_seconds;
use serde::Serialize;

/// The settings advised, as `backup database` and CONFIGURE take them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    pub channels: u32,
    /// none, lz4 or zstd:N.
    pub compress: String,
    pub filesperset: u32,
    pub maxopenfiles: u32,
    pub input_buffers: u32,
    pub input_buffer_size: u64,
    /// auto (io_uring), threads.
    pub io: String,
    /// false: read through the page cache (the database is mostly there).
    pub direct_reads: bool,
    /// Bytes per section for files larger than a channel's share; None: no sections.
    pub section_size: Option<u64>,
    /// BLKSIZE of the output (tape wants at least 256K, seed 000).
    pub blksize: u64,
}

/// One step of the method: what was chosen and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub step: String,
    pub choice: String,
    pub because: String,
}

/// Whether a backup fits a window, and what would make it fit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowFit {
    pub window_seconds: f64,
    pub fits: bool,
    pub needed_bytes_per_second: u64,
    pub suggestions: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Advice {
    pub settings: Settings,
    pub steps: Vec<Step>,
    pub bottleneck: Bottleneck,
    /// What the bottleneck is: the input devices (MAJ:MIN), the output medium as its driver
    /// describes it (a disk directory, s3://..., a tape library, a plugin), or the cpu.
    pub bottleneck_device: String,
    pub predicted_bytes_per_second: u64,
    /// The data phase at the predicted rate, plus `pieces_seconds` and `fixed_seconds`.
    pub predicted_seconds: f64,
    /// The pieces' commits on one channel: its sets times the output's per-object cost.
    pub pieces_seconds: f64,
    /// Start and stop costs (checkpoint, WAL switch and archiving) learned from recent
    /// backups ([`Advice::with_fixed_cost`]); 0 until one is known.
    pub fixed_seconds: f64,
    /// What the data phase's prediction was scaled by to match the database's full backups
    /// since the calibration ([`Advice::with_history`]); 1 with none.
    pub history_factor: f64,
    /// How many backups that factor came from.
    pub history_runs: u32,
    pub total_bytes: u64,
    pub calibrated_at: i64,
    pub window: Option<WindowFit>,
}

impl Advice {
    /// Adds the start and stop costs of the database's recent backups to the prediction
    /// (see [`super::overhead`]), with a step saying where the figure came from.
    pub fn with_fixed_cost(mut self, seconds: Option<f64>) -> Advice {
        let (choice, because) = match seconds {
            Some(s) => (
                format!("{s:.1} s"),
                "median time of the recent backups outside their data phase (checkpoint, WAL archiving)".to_string(),
            ),
            None => (
                "unknown".to_string(),
                "no backup with statistics yet: the prediction covers the data phase only".to_string(),
            ),
        };
        self.steps.push(Step {
            step: "start and stop".into(),
            choice,
            because,
        });
        let s = seconds.unwrap_or(0.0);
        self.predicted_seconds += s - self.fixed_seconds;
        self.fixed_seconds = s;
        self
    }
}

/// Files per backup set advise chooses: seed 000's multiplexing gains nothing from more sets,
/// and each set costs a piece's commit.
const FILESPERSET: u64 = 64;

/// Rates, in input bytes per second, that limit a backup at one compression and channel count.
struct Limits {
    input: f64,
    output: f64,
    /// What the channels' CPU work beside the reads allows (the codec's, with the checks
    /// where the read rate does not hold them).
    cpu: f64,
    /// What the CPU allows for everything a channel does, the reads and checks included,
    /// where calibrate measured their CPU cost: a bound of its own, met where cores are
    /// scarce (a container's CPU limit), never combined with the reads (it holds them).
    cpu_all: f64,
    /// When the output is a disk that also holds the cluster: the rate at which that device
    /// both reads the input and writes the output, its time shared between them, and which of
    /// the two takes more of it.
    shared: Option<(f64, Bottleneck)>,
    /// How far a channel's reads and CPU work overlap (1: fully).
    overlap: f64,
    channels: u32,
}

impl Limits {
    /// The limiting side and the rate: the slowest device, then the CPU, combined as far as a
    /// channel's reads and its CPU work overlap ([`read_check::combined`]).
    fn min(&self) -> (Bottleneck, f64) {
        let mut dev = (Bottleneck::Input, self.input);
        if self.output < dev.1 {
            dev = (Bottleneck::Output, self.output);
        }
        if let Some((rate, side)) = self.shared
            && rate < dev.1
        {
            dev = (side, rate);
        }
        let side = if self.cpu < dev.1 {
            Bottleneck::Cpu
        } else {
            dev.0
        };
        let rate = read_check::combined(dev.1, self.cpu, self.overlap, self.channels);
        // The whole channel's CPU work bounds the rate by itself, the reads hidden behind it:
        // under a CPU quota the reads already in flight go on while the channels wait for
        // their next period (with half a core, one lz4 channel at scale 100 ran at that bound).
        if self.cpu_all < rate {
            return (Bottleneck::Cpu, self.cpu_all);
        }
        (side, rate)
    }
}

/// How far reads and CPU work overlap in a channel, as calibrate measured it on the input
/// devices (the least of them); full overlap for calibrations taken before it was measured.
fn overlap(c: &Calibration) -> f64 {
    c.inputs
        .iter()
        .filter_map(|d| d.read_and_check.as_ref().map(|r| r.overlap))
        .reduce(f64::min)
        .unwrap_or(1.0)
}

/// The input device the (first) output shares, when that output is a disk that also holds
/// part of the cluster.
fn shared_input(c: &Calibration) -> Option<&InputDevice> {
    let o = c.outputs.first().filter(|o| !o.device.is_empty())?;
    c.inputs.iter().find(|d| d.device == o.device)
}

/// Whether the (first) output is a disk that also holds part of the cluster.
fn output_shares_input(c: &Calibration) -> bool {
    shared_input(c).is_some()
}

/// How far reads and writes overlap on the device the output shares with the cluster, from
/// calibrate's probe of both at once against each alone; 0 (the two take turns) where it was
/// not measured.
fn shared_overlap(c: &Calibration) -> f64 {
    let Some(mixed) = c.outputs.first().and_then(|o| o.mixed.as_ref()) else {
        return 0.0;
    };
    mixed.overlap(shared_read_alone(c), output_rate(c, 1))
}

/// The direct read rate, alone, of the input device the output shares.
fn shared_read_alone(c: &Calibration) -> f64 {
    shared_input(c).map_or(0.0, |d| d.best_bytes_per_second as f64)
}

fn mb(b: f64) -> String {
    format!("{:.1} MB/s", b / 1e6)
}

/// Output rate with `channels` streams, from the 1- and N-stream probes (linear between).
fn output_rate(c: &Calibration, channels: u32) -> f64 {
    let Some(o) = c.outputs.first() else {
        return f64::INFINITY;
    };
    let one = o.one_stream();
    let many = o
        .probes
        .iter()
        .filter(|p| p.streams > 1)
        .max_by_key(|p| p.streams);
    match (one, many) {
        (Some(a), Some(b)) if channels > 1 => {
            let t = ((channels - 1) as f64 / (b.streams - 1) as f64).min(1.0);
            a.bytes_per_second as f64
                + t * (b.bytes_per_second as f64 - a.bytes_per_second as f64).max(0.0)
        }
        (Some(a), _) => a.bytes_per_second as f64,
        (None, Some(b)) => b.bytes_per_second as f64,
        _ => f64::INFINITY,
    }
}

/// What `channels` channels read and check at when calibrate measured it for every input
/// device (direct reads only: the probe reads direct), and what reading and checking a byte
/// cost the CPU there (bytes per CPU-second, the slowest device's; 0 where not measured).
fn checked_read(c: &Calibration, direct_reads: bool, channels: u32) -> Option<(f64, f64)> {
    if !direct_reads || c.inputs.is_empty() {
        return None;
    }
    let rate = c
        .inputs
        .iter()
        .map(|d| d.read_and_check.as_ref().map(|rc| rc.rate(channels)))
        .sum::<Option<f64>>()?;
    let cpu = c
        .inputs
        .iter()
        .filter_map(|d| d.read_and_check.as_ref())
        .map(|rc| rc.cpu_bytes_per_second as f64)
        .fold(f64::INFINITY, f64::min);
    Some((rate, if cpu.is_finite() { cpu } else { 0.0 }))
}

/// Bytes the output's one-stream probe wrote per second of the process's CPU; None where
/// calibrate did not measure it.
fn write_cpu(c: &Calibration) -> Option<f64> {
    let p = c.outputs.first()?.one_stream()?;
    (p.cpu_bytes_per_second > 0).then_some(p.cpu_bytes_per_second as f64)
}

fn limits(
    c: &Calibration,
    read: f64,
    direct_reads: bool,
    codec: &CodecRate,
    channels: u32,
) -> Limits {
    let comp = codec.bytes_per_second as f64;
    let (read, per_core, all_per_core) = match checked_read(c, direct_reads, channels) {
        // Measured reading and checking together: the checks are in the read rate, the codec
        // is the CPU's part; and with what the reads and checks cost a core, the CPU's bound
        // for the whole channel.
        Some((r, cpu)) if r > 0.0 => (
            r,
            comp,
            if cpu > 0.0 {
                1.0 / (1.0 / cpu + 1.0 / comp)
            } else {
                f64::INFINITY
            },
        ),
        // A channel checks pages then compresses in one thread: the times add.
        _ => {
            let check = c.cpu.check_bytes_per_second.max(1) as f64;
            (read, 1.0 / (1.0 / check + 1.0 / comp), f64::INFINITY)
        }
    };
    // The writes' CPU, where calibrate measured it: a compressed byte's share of it per byte
    // read.
    let ratio = codec.ratio.max(0.01);
    let all_per_core = match write_cpu(c) {
        Some(w) if all_per_core.is_finite() => 1.0 / (1.0 / all_per_core + ratio / w),
        _ => all_per_core,
    };
    // What the database's own backups with this codec ran at, where there are any: the
    // probes' figures are of milliseconds on a sample.
    let all_per_core = c
        .cpu
        .learned
        .get(&codec.compression)
        .copied()
        .unwrap_or(all_per_core);
    let cores = (channels as f64).min(c.cpu.usable_cores());
    let out = output_rate(c, channels);
    // One device reading a byte and writing its compressed share: the calibrated rates were
    // each measured alone, and the two times add as far as the device shares its time between
    // them (calibrate's probe of both at once).
    let shared = output_shares_input(c).then(|| {
        let (r, w) = (1.0 / read.max(1.0), ratio / out.max(1.0));
        let side = if r >= w {
            Bottleneck::Input
        } else {
            Bottleneck::Output
        };
        (1.0 / shared_seconds(r, w, shared_overlap(c)), side)
    });
    Limits {
        input: read,
        output: out / ratio,
        cpu: per_core * cores,
        cpu_all: all_per_core * cores,
        shared,
        overlap: overlap(c),
        channels,
    }
}

/// The input's read limit as advise counts it.
struct ReadLimit {
    read: f64,
    /// The best buffered read, through the page cache.
    buffered: f64,
    direct_reads: bool,
}

fn read_limit(c: &Calibration) -> ReadLimit {
    let direct: f64 = c
        .inputs
        .iter()
        .map(|d| d.best_bytes_per_second as f64)
        .sum::<f64>()
        .max(1.0);
    let buffered = c
        .inputs
        .iter()
        .flat_map(|d| d.probes.iter())
        .filter(|p| !p.direct)
        .map(|p| p.bytes_per_second as f64)
        .fold(0.0, f64::max);
    // With most of the database in the page cache, reading through it is faster than going
    // to the disk (the pg_basebackup comparison); otherwise direct reads.
    let direct_reads = !(c.page_cache.fraction > 0.5 && buffered > direct);
    ReadLimit {
        read: if direct_reads { direct } else { buffered },
        buffered,
        direct_reads,
    }
}

/// The seeds' steps from calibration `c`; `window` in seconds.
pub fn advise(c: &Calibration, window: Option<f64>, tape: bool) -> Advice {
    let mut steps = Vec::new();
    // Step 1: the rates of disks and media.
    let limit = read_limit(c);
    rate_steps(c, limit.read, &mut steps);
    let (read, direct_reads) = (limit.read, limit.direct_reads);
    let pick = pick_channels(c, read, direct_reads);
    channel_steps(c, &pick, read, &mut steps);
    let Pick {
        rate,
        channels,
        codec,
        bottleneck,
        bottleneck_device,
        ..
    } = pick;
    let Multiplexing {
        maxopenfiles,
        input_buffers,
        best_size,
    } = multiplexing(c, &limit, &mut steps);
    let section_size = section_size(c, channels, &mut steps);
    // recman's default BLKSIZE (1M) is already above seed 000's 256K floor for tape.
    let blksize: u64 = 1 << 20;
    if tape {
        steps.push(Step {
            step: "blksize".into(),
            choice: "1M".into(),
            because: "tape buffers of at least 256K (seed 000); larger is faster".into(),
        });
    }
    // Each backup set is one piece, and its commit costs the output's per-object time besides
    // its bytes (calibrate's stream rates leave that time out); a channel commits its own.
    let files: u64 = c.inputs.iter().map(|d| d.files).sum();
    let sets_per_channel = files.div_ceil(FILESPERSET).div_ceil(channels.max(1) as u64);
    let commit = c.outputs.first().map_or(0.0, |o| o.commit_seconds);
    let pieces_seconds = sets_per_channel as f64 * commit;
    steps.push(Step {
        step: "pieces".into(),
        choice: format!("{sets_per_channel} per channel"),
        because: format!(
            "{files} files in sets of up to {FILESPERSET}; each piece's commit takes {:.1} ms on the output",
            commit * 1e3
        ),
    });
    let predicted_seconds = c.total_bytes as f64 / rate.max(1.0) + pieces_seconds;
    let window = window.map(|w| fit(c, w, read, rate, bottleneck, channels));
    Advice {
        settings: Settings {
            channels,
            compress: codec.compression.clone(),
            filesperset: FILESPERSET as u32,
            maxopenfiles,
            input_buffers,
            input_buffer_size: best_size,
            io: if c.io_uring {
                "auto".into()
            } else {
                "threads".into()
            },
            direct_reads,
            section_size,
            blksize,
        },
        steps,
        bottleneck,
        bottleneck_device,
        predicted_bytes_per_second: rate as u64,
        predicted_seconds,
        pieces_seconds,
        fixed_seconds: 0.0,
        history_factor: 1.0,
        history_runs: 0,
        total_bytes: c.total_bytes,
        calibrated_at: c.taken_at,
        window,
    }
}

/// The channels and codec advise picks, the rate they predict, and what limits it.
struct Pick<'c> {
    rate: f64,
    channels: u32,
    codec: &'c CodecRate,
    bottleneck: Bottleneck,
    /// What the bottleneck is, as [`Advice::bottleneck_device`] names it.
    bottleneck_device: String,
    /// The output devices, one channel each at least.
    outputs: u32,
    cores: u32,
}

/// What step 3 chose for reading files at once.
struct Multiplexing {
    maxopenfiles: u32,
    input_buffers: u32,
    best_size: u64,
}

/// Step 1's figures: the read and write limits, how reads and checks overlap, and how a device
/// the output shares with the cluster divides its time.
fn rate_steps(c: &Calibration, read: f64, steps: &mut Vec<Step>) {
    let out1 = output_rate(c, 1);
    steps.push(Step {
        step: "rate of disks and media".into(),
        choice: format!(
            "read limit {}, write limit {} (one stream)",
            mb(read),
            mb(out1)
        ),
        because: format!(
            "calibration of {} input device(s) and {} output device(s){}",
            c.inputs.len(),
            c.outputs.len(),
            c.outputs
                .first()
                .filter(|o| !o.objects.is_empty())
                .map(|o| format!(
                    "; {}: {:.0} ms to write an object of {} KiB, reads back at {}",
                    o.describe,
                    o.write_latency_seconds * 1e3,
                    o.objects[0].size >> 10,
                    mb(o.read_bytes_per_second as f64)
                ))
                .unwrap_or_default()
        ),
    });
    if let Some(rc) = c.inputs.iter().find_map(|d| d.read_and_check.as_ref()) {
        let overlap = overlap(c);
        steps.push(Step {
            step: "read and check".into(),
            choice: format!("overlap {overlap:.2}"),
            because: format!(
                "one thread reading and checking pages ran at {} ({}K requests, {} in flight){}: {}",
                mb(rc.bytes_per_second as f64),
                rc.request_size >> 10,
                rc.queue_depth,
                rc.parallel
                    .iter()
                    .map(|p| format!(", {} threads at once {} together", p.threads, mb(p.bytes_per_second as f64)))
                    .collect::<String>(),
                if overlap > 0.9 {
                    "the reads hide the checks, a backup runs at the slower of the two"
                } else {
                    "the reads and the CPU work do not hide each other, so the prediction adds part of the faster one's time to the slower one's"
                }
            ),
        });
    }
    if output_shares_input(c) {
        let o = shared_overlap(c);
        steps.push(Step {
            step: "shared device".into(),
            choice: format!("overlap {o:.2}"),
            because: format!(
                "the output {} is on device {}, which also holds the cluster: {}; a byte read and its compressed share written take the sum of their times where the device is shared and the longer of the two where not, so compression can pay even when the write limit alone would not ask for it",
                c.outputs[0].describe,
                c.outputs[0].device,
                match &c.outputs[0].mixed {
                    Some(m) => format!(
                        "read and written at once it read {} and wrote {}, against {} and {} alone",
                        mb(m.read_bytes_per_second as f64),
                        mb(m.write_bytes_per_second as f64),
                        mb(shared_read_alone(c)),
                        mb(output_rate(c, 1))
                    ),
                    None => "no probe of both at once in this calibration: counted as taking turns".into(),
                }
            ),
        });
    }
}

/// Step 2: the channel count and codec together, with the rate they predict.
fn pick_channels(c: &Calibration, read: f64, direct_reads: bool) -> Pick<'_> {
    // One channel per output device (seed 000, seed 001) unless the channels' CPU is what
    // limits, then more, up to the cores.
    let cores = c.cpu.cores.max(1);
    let outputs = c.outputs.len().max(1) as u32;
    // Up to the cores; with direct reads, up to as many threads as the read-and-check probe
    // ran at once, whose rate says what channels beyond the cores get (more reads in flight).
    let most_channels = if direct_reads {
        c.inputs
            .iter()
            .flat_map(|d| d.read_and_check.iter().flat_map(|r| r.parallel.iter()))
            .map(|p| p.threads)
            .fold(cores, u32::max)
    } else {
        cores
    };
    let mut best: Option<(f64, u32, &CodecRate, Bottleneck)> = None;
    for codec in &c.cpu.codecs {
        for ch in outputs..=most_channels.max(outputs) {
            let (b, r) = limits(c, read, direct_reads, codec, ch).min();
            // Another channel, or a heavier codec, must earn 5 %: the seeds' warning against
            // allocating too many channels.
            let better = match best {
                None => true,
                Some((br, bch, _, _)) => r > br * 1.05 || (r >= br * 0.999 && ch < bch),
            };
            if better {
                best = Some((r, ch, codec, b));
            }
        }
    }
    let (rate, channels, codec, bottleneck) = best.expect("at least the none codec");
    // An output reached over the network is named so, as `report io` names it.
    let out = c.outputs.first();
    let bottleneck = match (bottleneck, out) {
        (Bottleneck::Output, Some(o)) if o.kind == "s3" => Bottleneck::Network,
        (b, _) => b,
    };
    let bottleneck_device = match bottleneck {
        Bottleneck::Output | Bottleneck::Network => {
            out.map_or("output".into(), |o| o.describe.clone())
        }
        Bottleneck::Input => c
            .inputs
            .iter()
            .map(|d| d.device.clone())
            .collect::<Vec<_>>()
            .join(", "),
        Bottleneck::Cpu | Bottleneck::Rate => "cpu".into(),
    };
    Pick {
        rate,
        channels,
        codec,
        bottleneck,
        bottleneck_device,
        outputs,
        cores,
    }
}

/// Step 2's steps: why that many channels, and why that codec.
fn channel_steps(c: &Calibration, pick: &Pick, read: f64, steps: &mut Vec<Step>) {
    let &Pick {
        channels,
        codec,
        outputs,
        cores,
        ..
    } = pick;
    steps.push(Step {
        step: "channels".into(),
        choice: channels.to_string(),
        because: format!(
            "{outputs} output device(s); a channel checks and compresses at {} with {}; {} core(s), {:.1} usable when all work at once{}{}{}",
            mb(1.0
                / (1.0 / c.cpu.check_bytes_per_second.max(1) as f64
                    + 1.0 / codec.bytes_per_second as f64)),
            codec.compression,
            cores,
            c.cpu.usable_cores(),
            match c.cpu.cpu_limit {
                Some(l) => format!(" (the cgroup's CPU limit is {l:.2} cores)"),
                None => String::new(),
            },
            match write_cpu(c) {
                Some(w) => format!("; writing costs a core {} written", mb(w)),
                None => String::new(),
            },
            match c.cpu.learned.get(&codec.compression) {
                Some(r) => format!(
                    "; the recent {} backups' channels and piece writers, all their work counted, ran at {} per core",
                    codec.compression,
                    mb(*r)
                ),
                None => String::new(),
            }
        ),
    });
    steps.push(Step {
        step: "compression".into(),
        choice: codec.compression.clone(),
        because: format!(
            "ratio {:.2} at {} per core: the fastest backup given read {} and write {}",
            codec.ratio,
            if codec.bytes_per_second == u64::MAX {
                "no cost".into()
            } else {
                mb(codec.bytes_per_second as f64)
            },
            mb(read),
            mb(output_rate(c, channels))
        ),
    });
}

/// Step 3: files read at once, their buffers, and the i/o mode.
fn multiplexing(c: &Calibration, limit: &ReadLimit, steps: &mut Vec<Step>) -> Multiplexing {
    let &ReadLimit {
        read,
        buffered,
        direct_reads,
    } = limit;
    // Seed 000: a device that gains from a deep queue behaves as striped disks, read one or
    // two files at a time with many buffers; otherwise 4 to 8 files.
    let gain = c
        .inputs
        .iter()
        .map(|d| {
            let qd1 = d
                .probes
                .iter()
                .filter(|p| p.direct && p.queue_depth == 1)
                .map(|p| p.bytes_per_second)
                .max()
                .unwrap_or(1)
                .max(1);
            d.best_bytes_per_second as f64 / qd1 as f64
        })
        .fold(1.0, f64::max);
    let striped = gain >= 1.3;
    let maxopenfiles = if striped { 2 } else { 8 };
    let best_qd = c
        .inputs
        .iter()
        .map(|d| d.best_queue_depth)
        .max()
        .unwrap_or(4);
    let best_size = c
        .inputs
        .iter()
        .map(|d| d.best_request_size)
        .max()
        .unwrap_or(1 << 20)
        .max(128 << 10);
    let input_buffers = (best_qd / maxopenfiles).max(2);
    steps.push(Step {
        step: "multiplexing".into(),
        choice: format!("maxopenfiles {maxopenfiles}, filesperset {FILESPERSET}"),
        because: format!(
            "a deep queue reads {gain:.2}x faster than one request at a time: {} (seed 000: striped disks 1 or 2, plain disks 4 to 8)",
            if striped { "striped or parallel device" } else { "a plain disk" }
        ),
    });
    steps.push(Step {
        step: "input buffers".into(),
        choice: format!("{input_buffers} x {}K per file", best_size >> 10),
        because: format!(
            "best read {} at {}K requests, {best_qd} in flight",
            mb(read),
            best_size >> 10
        ),
    });
    steps.push(Step {
        step: "i/o mode".into(),
        choice: format!(
            "{}, {} reads",
            if c.io_uring {
                "io_uring"
            } else {
                "helper threads"
            },
            if direct_reads { "direct" } else { "buffered" }
        ),
        because: format!(
            "{:.0}% of the database is in the page cache; buffered reads {}",
            c.page_cache.fraction * 100.0,
            mb(buffered)
        ),
    });
    Multiplexing {
        maxopenfiles,
        input_buffers,
        best_size,
    }
}

/// SECTION SIZE: a file larger than half a channel's share is cut in quarters of that share.
fn section_size(c: &Calibration, channels: u32, steps: &mut Vec<Step>) -> Option<u64> {
    let share = c.total_bytes / channels.max(1) as u64;
    let largest = c.inputs.iter().map(|d| d.largest_file).max().unwrap_or(0);
    let section_size = (channels > 1 && largest > share / 2 && share > 0)
        .then(|| (share / 4).next_multiple_of(1 << 20).max(1 << 20));
    steps.push(Step {
        step: "section size".into(),
        choice: section_size
            .map(|s| format!("{} MiB", s >> 20))
            .unwrap_or_else(|| "none".into()),
        because: format!(
            "largest file {} MiB, a channel's share {} MiB",
            largest >> 20,
            share >> 20
        ),
    });
    section_size
}

fn fit(c: &Calibration, w: f64, read: f64, rate: f64, b: Bottleneck, ch: u32) -> WindowFit {
    let need = c.total_bytes as f64 / w.max(1.0);
    let mut s = Vec::new();
    if rate < need {
        match b {
            Bottleneck::Input => s.push(format!(
                "the disks read at most {}: take a level 1 (only changed blocks are written, every block is still read), or spread the database over more disks",
                mb(read)
            )),
            Bottleneck::Output | Bottleneck::Network => s.push(format!(
                "the output takes {}: add output devices (one channel each) or compress harder",
                mb(output_rate(c, ch))
            )),
            Bottleneck::Cpu => s.push(format!(
                "the channels' CPU limits at {}: lighter compression, or more cores",
                mb(rate)
            )),
            Bottleneck::Rate => {}
        }
        s.push(format!(
            "a level 1 backup writes only changed blocks: it fits if it has to move under {:.0}% of the database",
            100.0 * rate / need
        ));
    }
    WindowFit {
        window_seconds: w,
        fits: rate >= need,
        needed_bytes_per_second: need as u64,
        suggestions: s,
    }
}

mod history;
#[cfg(test)]
mod tests;
