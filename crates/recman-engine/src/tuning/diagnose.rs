//! What limited a job, from its statistics rows: the channels' time is split between sleeping
//! for RATE, waiting for reads, waiting for the output, and using the CPU (page checks,
//! checksums, compression); the largest part names the bottleneck. Unlike a guess from waits
//! alone, a channel that slept for RATE or spent its time computing is measured as such.

use recman_catalog::IoStatRow;
use serde::Serialize;

/// What limited a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bottleneck {
    /// The channels slept to hold RATE (or a DURATION schedule).
    Rate,
    /// The channels waited for reads of the database's files.
    Input,
    /// The channels waited for the output device (disk, tape, plugin).
    Output,
    /// The channels waited for an output reached over the network (S3).
    Network,
    /// The channels were busy: page checks, checksums, compression.
    Cpu,
}

impl Bottleneck {
    pub fn as_str(self) -> &'static str {
        match self {
            Bottleneck::Rate => "rate",
            Bottleneck::Input => "input",
            Bottleneck::Output => "output",
            Bottleneck::Network => "network",
            Bottleneck::Cpu => "cpu",
        }
    }
}

/// Seconds of channel time by what the channels did (summed over channels).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TimeSplit {
    pub channel_seconds: f64,
    pub rate_seconds: f64,
    pub input_wait_seconds: f64,
    pub output_wait_seconds: f64,
    /// The part of the output waits the piece writers spent using a CPU or waiting for one
    /// (copying blocks, a cgroup's CPU quota spent) rather than waiting for the device: CPU
    /// time, which the device's speed would not change. 0 for jobs recorded before the
    /// writers' CPU was kept.
    pub output_cpu_seconds: f64,
    pub cpu_seconds: f64,
    /// Time the channels were ready to compute but waited for a CPU (a loaded machine): part
    /// of a CPU limit.
    pub cpu_wait_seconds: f64,
    /// False for jobs recorded before CPU time was kept: the CPU share is then what is left
    /// of the channels' time after the waits.
    pub cpu_measured: bool,
}

/// The diagnosis of one job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnosis {
    pub bottleneck: Bottleneck,
    /// The bottleneck's share of the channels' time, 0..1.
    pub share: f64,
    pub split: TimeSplit,
    pub channels: u32,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Bytes read per second of the job's elapsed time.
    pub read_bytes_per_second: u64,
    pub write_bytes_per_second: u64,
    pub io_mode: String,
    /// The output device's kind (disk, s3, ...), when the job wrote.
    pub device: Option<String>,
    /// What to change, in the seeds' terms.
    pub advice: String,
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// Diagnoses one job from all its rows (INPUT, OUTPUT, AGGREGATE); None when the job has no
/// AGGREGATE row (nothing ran through a channel).
pub fn diagnose_job(rows: &[IoStatRow]) -> Option<Diagnosis> {
    let aggs: Vec<&IoStatRow> = rows.iter().filter(|r| r.kind == "AGGREGATE").collect();
    if aggs.is_empty() {
        return None;
    }
    let sync = aggs.iter().all(|r| r.io_mode == "sync");
    let mut s = TimeSplit {
        cpu_measured: aggs.iter().any(|r| r.cpu_time > 0),
        ..Default::default()
    };
    for a in &aggs {
        s.channel_seconds += secs((a.close_time - a.open_time).max(0) as u64);
        s.rate_seconds += secs(a.throttle_time);
        // Synchronous reads block the channel inside the call: that time is the wait.
        s.input_wait_seconds += secs(if sync {
            a.io_time
        } else {
            a.long_wait_time + a.short_wait_time
        });
        s.cpu_seconds += secs(a.cpu_time);
        s.cpu_wait_seconds += secs(a.cpu_wait_time);
    }
    let outputs = rows.iter().filter(|r| r.kind == "OUTPUT");
    let mut bytes_written = 0;
    for o in outputs {
        let wait = secs(o.long_wait_time + o.short_wait_time);
        s.output_wait_seconds += wait;
        s.output_cpu_seconds += wait * writer_cpu_share(o.cpu_time, o.cpu_wait_time, o.io_time);
        bytes_written += o.bytes;
    }
    if !s.cpu_measured {
        s.cpu_seconds = (s.channel_seconds
            - s.rate_seconds
            - s.input_wait_seconds
            - s.output_wait_seconds
            - s.cpu_wait_seconds)
            .max(0.0);
    } else {
        // A wait (a RATE sleep, a read, a buffer for the output) is timed until the channel
        // runs again, so the scheduler's delay after each wake-up is already in it; the
        // scheduler counts that delay as CPU waiting too. Only what no wait holds is CPU
        // waiting of its own: counted twice, a loaded machine named the CPU where RATE or
        // a throttled disk held the channel.
        let outside_waits = s.channel_seconds
            - s.rate_seconds
            - s.input_wait_seconds
            - s.output_wait_seconds
            - s.cpu_seconds;
        s.cpu_wait_seconds = s.cpu_wait_seconds.min(outside_waits.max(0.0));
    }
    let device = rows
        .iter()
        .find_map(|r| r.device.clone())
        .filter(|_| bytes_written > 0 || rows.iter().any(|r| r.kind == "OUTPUT"));
    let candidates = [
        (Bottleneck::Rate, s.rate_seconds),
        (Bottleneck::Input, s.input_wait_seconds),
        (
            Bottleneck::Output,
            s.output_wait_seconds - s.output_cpu_seconds,
        ),
        (
            Bottleneck::Cpu,
            s.cpu_seconds + s.cpu_wait_seconds + s.output_cpu_seconds,
        ),
    ];
    let (mut bottleneck, part) =
        candidates
            .iter()
            .copied()
            .fold(
                (Bottleneck::Cpu, -1.0),
                |best, c| if c.1 > best.1 { c } else { best },
            );
    if bottleneck == Bottleneck::Output && device.as_deref() == Some("s3") {
        bottleneck = Bottleneck::Network;
    }
    let elapsed_us = aggs.iter().map(|a| a.close_time).max().unwrap_or(0)
        - aggs.iter().map(|a| a.open_time).min().unwrap_or(0);
    let bytes_read: u64 = aggs.iter().map(|a| a.bytes).sum();
    let per_s = |b: u64| {
        if elapsed_us > 0 {
            (b as u128 * 1_000_000 / elapsed_us as u128) as u64
        } else {
            0
        }
    };
    let mut d = Diagnosis {
        bottleneck,
        share: if s.channel_seconds > 0.0 {
            (part / s.channel_seconds).min(1.0)
        } else {
            0.0
        },
        channels: aggs.len() as u32,
        bytes_read,
        bytes_written,
        read_bytes_per_second: per_s(bytes_read),
        write_bytes_per_second: per_s(bytes_written),
        io_mode: aggs[0].io_mode.clone(),
        device,
        advice: String::new(),
        split: s,
    };
    d.advice = advice(&d);
    Some(d)
}

/// How much of a piece writer's time in its writes went to the CPU, 0..1, from its CPU time,
/// its time waiting for a CPU and its time in the writes (any one unit). A channel waits for
/// the output only while the writer holds every buffer, busy in its writes or waiting to run,
/// so this is also the share of the channel's output waits that the CPU, not the device,
/// caused. The writer's CPU waits outside its writes (wake-ups) are few next to a channel's
/// output waits; the share is held to 1.
pub fn writer_cpu_share(cpu: u64, cpu_wait: u64, io: u64) -> f64 {
    if io == 0 {
        return 0.0;
    }
    ((cpu + cpu_wait) as f64 / io as f64).min(1.0)
}

fn advice(d: &Diagnosis) -> String {
    match d.bottleneck {
        Bottleneck::Rate => "the backup was held by RATE (or a DURATION schedule): raise or remove --rate (CONFIGURE CHANNEL ... RATE) if the load on the database allows it".into(),
        Bottleneck::Input => "the disks holding the database limit the backup: more channels or input buffers help only if `recman calibrate` shows the disks have more to give (larger requests, deeper queues); otherwise the backup runs at the disks' speed".into(),
        Bottleneck::Output => "the output device limits the backup: one channel per output device (seed 000), compression to write fewer bytes (the CPU has time to spare), or faster media".into(),
        Bottleneck::Network => "the network to the object store limits the backup: more upload streams (channels), compression to send fewer bytes, or a closer endpoint".into(),
        Bottleneck::Cpu => "page checks and compression limit the backup: lighter or no compression (lz4 instead of zstd), or more channels up to the number of cores".into(),
    }
}

impl Diagnosis {
    /// The diagnosis as lines for `report io`.
    pub fn lines(&self) -> Vec<String> {
        let s = &self.split;
        let pct = |x: f64| {
            if s.channel_seconds > 0.0 {
                100.0 * x / s.channel_seconds
            } else {
                0.0
            }
        };
        vec![
            format!(
                "bottleneck: {} ({:.0}% of the channels' time)",
                self.bottleneck.as_str(),
                self.share * 100.0
            ),
            format!(
                "channel time {:.2}s over {} channel(s): rate sleep {:.2}s ({:.0}%), input waits {:.2}s ({:.0}%), output waits {:.2}s ({:.0}%{}), cpu {:.2}s ({:.0}%{}), waiting for a cpu {:.2}s ({:.0}%)",
                s.channel_seconds,
                self.channels,
                s.rate_seconds,
                pct(s.rate_seconds),
                s.input_wait_seconds,
                pct(s.input_wait_seconds),
                s.output_wait_seconds,
                pct(s.output_wait_seconds),
                if s.output_cpu_seconds >= 0.005 {
                    format!(
                        ", {:.2}s of it the piece writers on or waiting for a cpu",
                        s.output_cpu_seconds
                    )
                } else {
                    String::new()
                },
                s.cpu_seconds,
                pct(s.cpu_seconds),
                if s.cpu_measured { "" } else { ", estimated" },
                s.cpu_wait_seconds,
                pct(s.cpu_wait_seconds),
            ),
            format!(
                "read {:.1} MB at {:.1} MB/s, wrote {:.1} MB at {:.1} MB/s{}",
                self.bytes_read as f64 / 1e6,
                self.read_bytes_per_second as f64 / 1e6,
                self.bytes_written as f64 / 1e6,
                self.write_bytes_per_second as f64 / 1e6,
                self.device
                    .as_deref()
                    .map(|d| format!(" to {d}"))
                    .unwrap_or_default()
            ),
            format!("what to change: {}", self.advice),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agg(us: i64, throttle: u64, wait: u64, cpu: u64) -> IoStatRow {
        IoStatRow {
            kind: "AGGREGATE".into(),
            io_mode: "threads".into(),
            open_time: 0,
            close_time: us,
            throttle_time: throttle,
            long_wait_time: wait,
            cpu_time: cpu,
            bytes: 1 << 20,
            ..Default::default()
        }
    }

    fn out(wait: u64, device: &str) -> IoStatRow {
        IoStatRow {
            kind: "OUTPUT".into(),
            long_wait_time: wait,
            bytes: 1 << 20,
            device: Some(device.into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_largest_part_of_the_channels_time_names_the_bottleneck() {
        let b = |rows: &[IoStatRow]| diagnose_job(rows).unwrap().bottleneck;
        // A throttled channel computes little and waits little: it is not "cpu".
        assert_eq!(
            b(&[agg(10_000_000, 8_000_000, 500_000, 900_000)]),
            Bottleneck::Rate
        );
        assert_eq!(
            b(&[agg(10_000_000, 0, 7_000_000, 2_000_000)]),
            Bottleneck::Input
        );
        assert_eq!(b(&[agg(10_000_000, 0, 0, 9_500_000)]), Bottleneck::Cpu);
        let mut rows = vec![
            agg(10_000_000, 0, 100_000, 1_000_000),
            out(8_000_000, "disk"),
        ];
        assert_eq!(b(&rows), Bottleneck::Output);
        rows[1].device = Some("s3".into());
        assert_eq!(b(&rows), Bottleneck::Network);
        assert!(diagnose_job(&[out(1, "disk")]).is_none());
    }

    #[test]
    fn the_wait_for_a_cpu_inside_a_wait_is_counted_once() {
        // A --rate 4M backup beside a load of 13 on 2 cores (seen in a suite run): the
        // scheduler's 7.81 s of CPU waiting are mostly wake-ups from RATE sleeps, which the
        // throttle timed already; the channel ran at 0.88 of its RATE.
        let mut a = agg(15_323_066, 7_158_333, 753_771, 642_643);
        a.cpu_wait_time = 7_808_997;
        let d = diagnose_job(&[a, out(1_064_564, "disk")]).unwrap();
        assert_eq!(d.bottleneck, Bottleneck::Rate, "{:?}", d.split);
        let s = &d.split;
        let sum = s.rate_seconds
            + s.input_wait_seconds
            + s.output_wait_seconds
            + s.cpu_seconds
            + s.cpu_wait_seconds;
        assert!((sum - s.channel_seconds).abs() < 1e-6, "{s:?}");
        // A channel starved of CPU between its waits stays "cpu".
        let mut a = agg(10_000_000, 0, 1_000_000, 2_000_000);
        a.cpu_wait_time = 6_500_000;
        let d = diagnose_job(&[a]).unwrap();
        assert_eq!(d.bottleneck, Bottleneck::Cpu);
        assert!((d.split.cpu_wait_seconds - 6.5).abs() < 1e-9);
    }

    #[test]
    fn output_waits_while_the_writers_computed_are_the_cpus() {
        // A channel waited 8 s for its piece writer. A writer that spent its writes copying
        // or held by a CPU quota makes that wait the CPU's; one that waited for the device,
        // the output's.
        let writer = |cpu: u64, cpu_wait: u64| {
            let mut o = out(8_000_000, "disk");
            o.io_time = 8_500_000;
            o.cpu_time = cpu;
            o.cpu_wait_time = cpu_wait;
            o
        };
        let a = agg(10_000_000, 0, 100_000, 1_000_000);
        let d = diagnose_job(&[a.clone(), writer(3_000_000, 5_500_000)]).unwrap();
        assert_eq!(d.bottleneck, Bottleneck::Cpu, "{:?}", d.split);
        assert!(
            (d.split.output_cpu_seconds - 8.0).abs() < 1e-9,
            "{:?}",
            d.split
        );
        // The channel's own second of CPU and the writer's eight.
        assert!((d.share - 0.9).abs() < 1e-9, "{d:?}");
        assert!(d.lines()[1].contains("8.00s of it the piece writers"));
        let d = diagnose_job(&[a.clone(), writer(400_000, 450_000)]).unwrap();
        assert_eq!(d.bottleneck, Bottleneck::Output, "{:?}", d.split);
        assert!(
            (d.split.output_cpu_seconds - 0.8).abs() < 1e-9,
            "{:?}",
            d.split
        );
        // Rows recorded before the writers' CPU was kept: the waits are the output's.
        let d = diagnose_job(&[a, out(8_000_000, "disk")]).unwrap();
        assert_eq!(d.bottleneck, Bottleneck::Output);
        assert_eq!(d.split.output_cpu_seconds, 0.0);
        assert_eq!(writer_cpu_share(5, 0, 0), 0.0);
    }

    #[test]
    fn jobs_without_cpu_time_take_the_rest_as_cpu() {
        let d = diagnose_job(&[agg(10_000_000, 0, 1_000_000, 0)]).unwrap();
        assert!(!d.split.cpu_measured);
        assert_eq!(d.bottleneck, Bottleneck::Cpu);
        assert!((d.split.cpu_seconds - 9.0).abs() < 1e-9);
    }
}
