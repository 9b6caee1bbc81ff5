//! What calibrate measures, device by device: the records of its probes and the options that
//! bound them. Below calibrate and the probes that fill them in (`media_probe.rs`,
//! `shared_probe.rs`), so those need not import calibrate.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One read measurement: `request_size` bytes per read, `queue_depth` in flight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadProbe {
    pub request_size: u64,
    pub queue_depth: u32,
    pub direct: bool,
    pub bytes: u64,
    pub bytes_per_second: u64,
}

/// A device holding part of the cluster (the data directory, a tablespace).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputDevice {
    /// "MAJ:MIN" of the file system's device.
    pub device: String,
    /// Bytes of the cluster on it.
    pub bytes: u64,
    pub files: u64,
    pub largest_file: u64,
    pub probes: Vec<ReadProbe>,
    /// The best direct read rate and the shape that reached it.
    pub best_bytes_per_second: u64,
    pub best_request_size: u64,
    pub best_queue_depth: u32,
    /// Reads at the best shape with every page checked on the reading thread, as a channel
    /// does; absent from calibrations taken before it was measured.
    #[serde(default)]
    pub read_and_check: Option<super::read_check::ReadAndCheck>,
}

/// One output device's write rate with `streams` writers at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteProbe {
    pub streams: u32,
    pub bytes: u64,
    /// All streams together, streaming: the per-object cost ([`OutputDevice::commit_seconds`])
    /// is taken out of the time, once, as the streams commit at once. Calibrations taken
    /// before 2026-11-26 counted it in.
    pub bytes_per_second: u64,
    /// Bytes written per second of the process's CPU time while the streams wrote: what the
    /// writes cost a core (the copies into aligned blocks and their submission, an upload's
    /// requests). Where cores are scarce (a container's CPU limit) this adds to what reading,
    /// checking and compressing cost. 0 in calibrations taken before it was measured.
    #[serde(default)]
    pub cpu_bytes_per_second: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputDevice {
    /// disk, s3, vtape, plugin, ... (from the driver's description).
    pub kind: String,
    pub describe: String,
    /// The device type a backup names it by (disk, s3, sbt); empty in calibrations taken
    /// before device types were probed.
    #[serde(default)]
    pub device_type: String,
    /// Pieces written as a backup writes them, by 1 and by N streams at once.
    pub probes: Vec<WriteProbe>,
    /// Objects of a few sizes written, read back and removed (see [`super::media_probe`]).
    #[serde(default)]
    pub objects: Vec<ObjectProbe>,
    /// Seconds to write and commit the smallest probe object, the first written: a request's
    /// latency, with what only a first object pays (a tape's load); [`Self::commit_seconds`]
    /// is what every piece pays.
    #[serde(default)]
    pub write_latency_seconds: f64,
    /// What each piece costs besides its bytes, from the 1 MiB and 4 MiB objects' times (see
    /// `media_probe::commit_seconds`); 0 in calibrations taken before it was measured.
    #[serde(default)]
    pub commit_seconds: f64,
    /// Seconds to open and read the smallest probe object.
    #[serde(default)]
    pub read_latency_seconds: f64,
    /// The best read rate of the probe objects: what a restore meets.
    #[serde(default)]
    pub read_bytes_per_second: u64,
    /// "MAJ:MIN" of a disk output's file system; empty for other media. An output on a device
    /// that also holds the cluster shares that device's time with the reads.
    #[serde(default)]
    pub device: String,
    /// On such a device, a read and a write at once: how far the two share its time; absent
    /// for other outputs and from calibrations taken before 2026-11-26 (read as fully shared).
    #[serde(default)]
    pub mixed: Option<MixedProbe>,
}

impl OutputDevice {
    /// The probe of one stream writing alone: the write limit, and what the writes cost the
    /// CPU.
    pub fn one_stream(&self) -> Option<&WriteProbe> {
        self.probes.iter().find(|p| p.streams == 1)
    }
}

/// How long calibrate may take: each read probe stops after `probe_bytes` or `probe_time`.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    pub probe_bytes: u64,
    pub probe_time: Duration,
    /// Bytes of pages sampled for the CPU rates.
    pub sample_bytes: usize,
    /// Bytes each stream writes to an output device.
    pub write_bytes: u64,
    /// Streams of the multi-stream write probe.
    pub streams: u32,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        CalibrateOptions {
            probe_bytes: 256 << 20,
            probe_time: Duration::from_millis(1500),
            sample_bytes: 16 << 20,
            write_bytes: 32 << 20,
            streams: 4,
        }
    }
}

/// One object of `size` bytes written and committed, then read back whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObjectProbe {
    pub size: u64,
    /// Create, write and commit.
    pub write_seconds: f64,
    /// Open and read to the end.
    pub read_seconds: f64,
    pub write_bytes_per_second: u64,
    pub read_bytes_per_second: u64,
}

/// A reader and a writer on one device at the same time, each rate over the time both ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MixedProbe {
    /// Direct reads of the cluster's largest files at the device's best request size and
    /// queue depth.
    pub read_bytes_per_second: u64,
    /// One stream written and committed as a backup piece is.
    pub write_bytes_per_second: u64,
    /// How long the two ran together.
    pub seconds: f64,
}

impl MixedProbe {
    /// How far reads and writes overlap on the device, from the rates each reached alone:
    /// 0 when each direction lost what the other took (the shares of the rates alone sum to
    /// one: the device's time is shared), 1 when both ran as fast as alone.
    pub fn overlap(&self, read_alone: f64, write_alone: f64) -> f64 {
        if read_alone <= 0.0 || write_alone <= 0.0 {
            return 0.0;
        }
        (self.read_bytes_per_second as f64 / read_alone
            + self.write_bytes_per_second as f64 / write_alone
            - 1.0)
            .clamp(0.0, 1.0)
    }
}
