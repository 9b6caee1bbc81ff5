//! The seeds' tuning method in the engine: what limited a job (the diagnosis of `report io`),
//! what the devices and the CPU can do (`calibrate`) and which settings follow (`advise`).

pub mod advise;
pub mod calibrate;
pub mod diagnose;
pub mod media_probe;
pub mod overhead;
mod probes;
pub mod read_check;
mod read_probe;
pub mod shared_probe;

pub use crate::cpu::{allowed_cores, process_cpu_time, thread_cpu_time, thread_cpu_wait};
pub use diagnose::{Bottleneck, Diagnosis, diagnose_job, writer_cpu_share};

/// The kind of an output device from its description ("disk /srv/repo", "s3://bucket/p"):
/// kept with the statistics so that a slow output can be named a network.
pub fn device_kind(describe: &str) -> String {
    let d = describe.trim();
    if d.starts_with("s3://")
        || d.starts_with("s3 ")
        || d.starts_with("azure://")
        || d.starts_with("gs://")
    {
        "s3".into()
    } else if d.starts_with("disk") {
        "disk".into()
    } else {
        d.split([' ', ':']).next().unwrap_or("sbt").to_string()
    }
}
