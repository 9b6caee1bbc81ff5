//! What a backup did second by second: bytes read and written per channel (the samples behind
//! `report io --plot`, seed 004's throughput graphs), and the settings it changed while it
//! ran with the reason for each (DURATION's pacing, `--tune auto`).

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::{to_i64, vals};

/// Bytes one channel moved in one second of a job.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoSample {
    pub job_id: String,
    pub channel: u32,
    /// Seconds since the job's data phase started (0-based).
    pub second: u32,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// A setting changed while a job ran, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TuningEvent {
    pub job_id: String,
    /// Order of the changes within the job.
    pub seq: u32,
    /// Milliseconds since the job's data phase started.
    pub at_ms: u64,
    /// None: the whole job (a rate shared by every channel).
    pub channel: Option<u32>,
    /// What changed: rate, input_buffer_size, queue_depth, channels, compress_level.
    pub setting: String,
    pub old_value: Option<String>,
    pub new_value: String,
    pub reason: String,
}

impl Catalog {
    /// Stores a job's samples in one transaction.
    pub fn add_io_samples(&self, rows: &[IoSample]) -> Result<(), CatalogError> {
        let ctx = "recording i/o samples";
        self.record_tx(ctx, || {
            for r in rows {
                self.exec(
                    ctx,
                    "INSERT INTO io_sample (job_id, channel, second, bytes_read, bytes_written)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    vals![
                        &r.job_id,
                        r.channel,
                        r.second,
                        to_i64("bytes_read", r.bytes_read)?,
                        to_i64("bytes_written", r.bytes_written)?,
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// A job's samples by channel, then second.
    pub fn io_samples(&self, job_id: &str) -> Result<Vec<IoSample>, CatalogError> {
        self.query(
            &format!("reading i/o samples of {job_id}"),
            "SELECT job_id, channel, second, bytes_read, bytes_written FROM io_sample
             WHERE job_id = ?1 ORDER BY channel, second",
            vals![job_id],
            |r| {
                Ok(IoSample {
                    job_id: r.get_text(0)?,
                    channel: r.get_u32(1)?,
                    second: r.get_u32(2)?,
                    bytes_read: r.get_u64(3)?,
                    bytes_written: r.get_u64(4)?,
                })
            },
        )
    }

    /// Stores a job's setting changes in one transaction.
    pub fn add_tuning_events(&self, rows: &[TuningEvent]) -> Result<(), CatalogError> {
        let ctx = "recording tuning changes";
        self.record_tx(ctx, || {
            for r in rows {
                self.exec(
                    ctx,
                    "INSERT INTO tuning_event (job_id, seq, at_ms, channel, setting, old_value,
                         new_value, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    vals![
                        &r.job_id,
                        r.seq,
                        to_i64("at_ms", r.at_ms)?,
                        r.channel,
                        &r.setting,
                        &r.old_value,
                        &r.new_value,
                        &r.reason,
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// A job's setting changes in the order they were made.
    pub fn tuning_events(&self, job_id: &str) -> Result<Vec<TuningEvent>, CatalogError> {
        self.query(
            &format!("reading tuning changes of {job_id}"),
            "SELECT job_id, seq, at_ms, channel, setting, old_value, new_value, reason
             FROM tuning_event WHERE job_id = ?1 ORDER BY seq",
            vals![job_id],
            |r| {
                Ok(TuningEvent {
                    job_id: r.get_text(0)?,
                    seq: r.get_u32(1)?,
                    at_ms: r.get_u64(2)?,
                    channel: r.get_opt_u32(3)?,
                    setting: r.get_text(4)?,
                    old_value: r.get_opt_text(5)?,
                    new_value: r.get_text(6)?,
                    reason: r.get_text(7)?,
                })
            },
        )
    }
}
