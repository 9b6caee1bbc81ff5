//! Statistics rows: how a job's INPUT, OUTPUT and AGGREGATE rows are made and stored
//! (RMAN's V$BACKUP_ASYNC_IO / V$BACKUP_SYNC_IO).

use crate::io::IoCounters;
use recman_catalog::{IoStatRow, Repository};

/// Tags the statistics rows of a restore or validate job (`kind`: RESTORE, VALIDATE) with one
/// job id, the job's type and backup, and sync I/O (pieces are read sequentially), and stores
/// them. A record of the job, not part of it: failing to store them fails nothing, so a
/// read-only repository still validates.
pub(crate) fn record_piece_job(
    repo: &Repository,
    kind: &str,
    backup_id: &str,
    rows: &mut [IoStatRow],
) {
    let job = format!(
        "{}{}",
        &kind[..1],
        chrono::Utc::now().format("%Y%m%dT%H%M%S%3f")
    );
    record_job(repo, &job, kind, backup_id, rows);
}

/// As [`record_piece_job`] with the job id given: a backup written by one set writer (BACKUP
/// ARCHIVELOG, a synthetic full) is its own job, as a database backup is.
pub(crate) fn record_job(
    repo: &Repository,
    job: &str,
    kind: &str,
    backup_id: &str,
    rows: &mut [IoStatRow],
) {
    for r in rows.iter_mut() {
        r.job_id = job.to_string();
        r.job_type = kind.into();
        r.backup_id = Some(backup_id.to_string());
        r.io_mode = "sync".into();
    }
    let _ = repo.catalog().add_io_stats(rows);
}

pub(crate) fn stat_row(
    kind: &str,
    channel: u32,
    name: Option<String>,
    c: &IoCounters,
    open: i64,
    close: i64,
    buf: (u64, u64),
) -> IoStatRow {
    IoStatRow {
        kind: kind.into(),
        channel,
        filename: name,
        open_time: open,
        close_time: close,
        io_count: c.io_count,
        ready: c.ready,
        short_waits: c.short_waits,
        short_wait_time: c.short_wait_time.as_micros() as u64,
        long_waits: c.long_waits,
        long_wait_time: c.long_wait_time.as_micros() as u64,
        bytes: c.bytes,
        buffer_size: buf.0,
        buffer_count: buf.1,
        io_time: c.io_time.as_micros() as u64,
        cpu_time: c.cpu_time.as_micros() as u64,
        cpu_wait_time: c.cpu_wait.as_micros() as u64,
        ..Default::default()
    }
}
