//! I/O statistics rows (RMAN's V$BACKUP_ASYNC_IO / V$BACKUP_SYNC_IO), one set per job.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::{DbRow, to_i64, vals};

/// One row: a file read (INPUT), a piece written (OUTPUT) or a channel's total (AGGREGATE).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoStatRow {
    pub job_id: String,
    /// BACKUP, RESTORE or VALIDATE.
    pub job_type: String,
    pub backup_id: Option<String>,
    /// INPUT, OUTPUT or AGGREGATE.
    pub kind: String,
    /// uring, threads or sync.
    pub io_mode: String,
    pub channel: u32,
    pub set_no: Option<u32>,
    pub piece_no: Option<u32>,
    pub filename: Option<String>,
    /// Unix microseconds.
    pub open_time: i64,
    pub close_time: i64,
    pub io_count: u64,
    pub ready: u64,
    pub short_waits: u64,
    pub short_wait_time: u64,
    pub long_waits: u64,
    pub long_wait_time: u64,
    pub bytes: u64,
    pub buffer_size: u64,
    pub buffer_count: u64,
    /// Microseconds spent inside read/write calls (what sync mode's discrete rate divides by).
    pub io_time: u64,
    /// io_uring submissions made for this row: proof that the ring path ran.
    pub ring_submissions: u64,
    /// Microseconds the channel slept to hold RATE (AGGREGATE rows).
    pub throttle_time: u64,
    /// Microseconds of CPU (user + system) used by the channel's thread (AGGREGATE rows), or
    /// by the piece's writer thread (a backup's OUTPUT rows).
    pub cpu_time: u64,
    /// Microseconds that thread was ready to run but waited for a CPU: a machine with more
    /// work than cores, or a cgroup's CPU quota spent.
    pub cpu_wait_time: u64,
    /// Kind of the output device (disk, s3, sbt, ...) on OUTPUT and AGGREGATE rows; None when
    /// nothing was written (validate) or for rows recorded before it was kept. On an INPUT
    /// row, the URL of the agent the file was read through (issue 19); None when read here.
    pub device: Option<String>,
    /// On an INPUT row, how the file was read: `direct` or `buffered` (through the page
    /// cache); None on other rows and rows recorded before it was kept.
    pub read_mode: Option<String>,
}

impl IoStatRow {
    /// Adds another channel's row of the same job to this one: counts and times added, the
    /// span from the first open to the last close (several channels' AGGREGATE rows as one).
    pub fn absorb(&mut self, o: &IoStatRow) {
        self.open_time = self.open_time.min(o.open_time);
        self.close_time = self.close_time.max(o.close_time);
        self.io_count += o.io_count;
        self.ready += o.ready;
        self.short_waits += o.short_waits;
        self.short_wait_time += o.short_wait_time;
        self.long_waits += o.long_waits;
        self.long_wait_time += o.long_wait_time;
        self.bytes += o.bytes;
        self.io_time += o.io_time;
        self.ring_submissions += o.ring_submissions;
        self.throttle_time += o.throttle_time;
        self.cpu_time += o.cpu_time;
        self.cpu_wait_time += o.cpu_wait_time;
    }

    pub fn effective_bytes_per_second(&self) -> Option<u64> {
        let us = self.close_time - self.open_time;
        (us > 0).then(|| (self.bytes as u128 * 1_000_000 / us as u128) as u64)
    }
}

const COLS: &str = "job_id, job_type, backup_id, type, io_mode, channel, set_no, piece_no, filename, \
    open_time, close_time, io_count, ready, short_waits, short_wait_time, long_waits, long_wait_time, \
    bytes, buffer_size, buffer_count, io_time, ring_submissions, throttle_time, cpu_time, device, cpu_wait_time, read_mode";

fn row(r: &DbRow<'_>) -> Result<IoStatRow, CatalogError> {
    Ok(IoStatRow {
        job_id: r.get_text(0)?,
        job_type: r.get_text(1)?,
        backup_id: r.get_opt_text(2)?,
        kind: r.get_text(3)?,
        io_mode: r.get_text(4)?,
        channel: r.get_u32(5)?,
        set_no: r.get_opt_u32(6)?,
        piece_no: r.get_opt_u32(7)?,
        filename: r.get_opt_text(8)?,
        open_time: r.get_i64(9)?,
        close_time: r.get_i64(10)?,
        io_count: r.get_u64(11)?,
        ready: r.get_u64(12)?,
        short_waits: r.get_u64(13)?,
        short_wait_time: r.get_u64(14)?,
        long_waits: r.get_u64(15)?,
        long_wait_time: r.get_u64(16)?,
        bytes: r.get_u64(17)?,
        buffer_size: r.get_u64(18)?,
        buffer_count: r.get_u64(19)?,
        io_time: r.get_u64(20)?,
        ring_submissions: r.get_u64(21)?,
        throttle_time: r.get_u64(22)?,
        cpu_time: r.get_u64(23)?,
        device: r.get_opt_text(24)?,
        cpu_wait_time: r.get_u64(25)?,
        read_mode: r.get_opt_text(26)?,
    })
}

impl Catalog {
    /// Stores a job's statistics in one transaction.
    pub fn add_io_stats(&self, rows: &[IoStatRow]) -> Result<(), CatalogError> {
        let ctx = "recording i/o statistics";
        let sql = format!(
            "INSERT INTO io_stat ({COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                 ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)"
        );
        self.record_tx(ctx, || {
            for r in rows {
                let n = |what, v| to_i64(what, v);
                self.exec(
                    ctx,
                    &sql,
                    vals![
                        &r.job_id,
                        &r.job_type,
                        &r.backup_id,
                        &r.kind,
                        &r.io_mode,
                        r.channel,
                        r.set_no,
                        r.piece_no,
                        &r.filename,
                        r.open_time,
                        r.close_time,
                        n("io_count", r.io_count)?,
                        n("ready", r.ready)?,
                        n("short_waits", r.short_waits)?,
                        n("short_wait_time", r.short_wait_time)?,
                        n("long_waits", r.long_waits)?,
                        n("long_wait_time", r.long_wait_time)?,
                        n("bytes", r.bytes)?,
                        n("buffer_size", r.buffer_size)?,
                        n("buffer_count", r.buffer_count)?,
                        n("io_time", r.io_time)?,
                        n("ring_submissions", r.ring_submissions)?,
                        n("throttle_time", r.throttle_time)?,
                        n("cpu_time", r.cpu_time)?,
                        &r.device,
                        n("cpu_wait_time", r.cpu_wait_time)?,
                        &r.read_mode,
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// Rows of one job (a backup's id for its backup job, or a restore/validate job id).
    pub fn io_stats(&self, job_id: &str) -> Result<Vec<IoStatRow>, CatalogError> {
        self.query(
            &format!("reading i/o statistics of {job_id}"),
            &format!("SELECT {COLS} FROM io_stat WHERE job_id = ?1 ORDER BY id"),
            vals![job_id],
            row,
        )
    }

    /// A job's rows without its INPUT rows (one a file read, thousands a backup): its
    /// channels' totals and the pieces it wrote, what a look across many backups needs.
    pub fn io_stat_totals(&self, job_id: &str) -> Result<Vec<IoStatRow>, CatalogError> {
        self.query(
            &format!("reading i/o totals of {job_id}"),
            &format!(
                "SELECT {COLS} FROM io_stat WHERE job_id = ?1 AND type <> 'INPUT' ORDER BY id"
            ),
            vals![job_id],
            row,
        )
    }

    /// Ids of the jobs that read or wrote a backup, oldest first.
    pub fn io_jobs_of_backup(
        &self,
        backup_id: &str,
    ) -> Result<Vec<(String, String)>, CatalogError> {
        self.query(
            &format!("reading i/o jobs of backup {backup_id}"),
            "SELECT job_id, job_type FROM io_stat WHERE backup_id = ?1
             GROUP BY job_id, job_type ORDER BY MIN(id)",
            vals![backup_id],
            |r| Ok((r.get_text(0)?, r.get_text(1)?)),
        )
    }
}
