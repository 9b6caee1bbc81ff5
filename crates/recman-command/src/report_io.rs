//! REPORT IO's facts: a backup's V$BACKUP_ASYNC_IO rows per file (INPUT), piece (OUTPUT) and
//! channel (AGGREGATE) for each job that touched it, each job's diagnosis (what limited it,
//! from the engine's [`recman_engine::tuning::diagnose_job`], and the file or piece with the
//! highest share of long waits), its per-second samples and the settings changed while it ran.
//! The front end lays them out (a table, JSON, an SVG plot, an HTML page).

use recman_catalog::{BackupRecord, IoSample, IoStatRow, TuningEvent};
use recman_engine::{Context, EngineError};

fn rate(r: &IoStatRow) -> String {
    r.effective_bytes_per_second()
        .map(|b| format!("{:.1} MB/s", b as f64 / 1e6))
        .unwrap_or_default()
}

/// Files read in fewer requests are not ranked by their share of long waits.
pub const MIN_SAMPLE: u64 = 4;

/// The diagnosis lines of one job: what limited it, then the seeds' last resort, the file and
/// the piece with the largest LONG_WAITS/IO_COUNT.
pub fn diagnose(rows: &[IoStatRow]) -> Vec<String> {
    let mut out = Vec::new();
    let mode = rows.first().map(|r| r.io_mode.as_str()).unwrap_or("");
    if mode == "sync" {
        out.push("i/o mode sync: every read blocks the channel; its time in read calls counts as input waits (use --io threads or uring to overlap reads with work)".into());
    }
    // The bottleneck from the channels' measured time (the engine's diagnosis), not guessed
    // from waits alone: a channel sleeping for RATE or busy compressing is measured as such.
    if let Some(d) = recman_engine::tuning::diagnose_job(rows) {
        out.extend(d.lines());
    }
    // A file read in one or two requests shows 0 or 1 whatever the device: RMAN's measure
    // only means something over several requests.
    let sampled = |kind: &'static str| {
        let enough = rows
            .iter()
            .any(|r| r.kind == kind && r.io_count >= MIN_SAMPLE && r.long_waits > 0);
        let floor = if enough { MIN_SAMPLE } else { 1 };
        rows.iter()
            .filter(move |r| r.kind == kind && r.long_waits > 0 && r.io_count >= floor)
    };
    let worst = |kind: &'static str| {
        sampled(kind)
            // RMAN's measure first; ties go to the file that made the channel wait longest.
            .max_by(|a, b| {
                (a.long_waits as f64 / a.io_count as f64)
                    .total_cmp(&(b.long_waits as f64 / b.io_count as f64))
                    .then(a.long_wait_time.cmp(&b.long_wait_time))
            })
    };
    for (kind, side, unit) in [("INPUT", "input", "i/o"), ("OUTPUT", "output", "blocks")] {
        if let Some(r) = worst(kind) {
            out.push(format!(
                "slowest {side}: {} (long waits {}/{} {unit}, {:.2}s waited, {})",
                r.filename.as_deref().unwrap_or("?"),
                r.long_waits,
                r.io_count,
                r.long_wait_time as f64 / 1e6,
                rate(r)
            ));
        }
    }
    out
}

/// One job that read or wrote for the backup.
#[derive(Debug)]
pub struct IoJob {
    pub id: String,
    /// BACKUP, VALIDATE, RESTORE, ...
    pub kind: String,
    /// The lines of [`diagnose`].
    pub diagnosis: Vec<String>,
    /// The engine's figures, when the job has channel rows.
    pub figures: Option<recman_engine::tuning::Diagnosis>,
}

/// Everything REPORT IO shows of one backup.
#[derive(Debug)]
pub struct IoReport {
    pub backup: BackupRecord,
    /// The rows of every job, job after job.
    pub rows: Vec<IoStatRow>,
    pub jobs: Vec<IoJob>,
    pub samples: Vec<IoSample>,
    pub tuning: Vec<TuningEvent>,
}

impl IoReport {
    /// The backup's own job is the one the tuning method reads.
    fn backup_job(&self) -> Option<&IoJob> {
        self.jobs.iter().find(|j| j.kind == "BACKUP")
    }

    pub fn backup_diagnosis(&self) -> Vec<String> {
        self.backup_job()
            .map(|j| j.diagnosis.clone())
            .unwrap_or_default()
    }

    pub fn backup_bottleneck(&self) -> Option<&'static str> {
        self.backup_job()
            .and_then(|j| j.figures.as_ref())
            .map(|d| d.bottleneck.as_str())
    }
}

/// The I/O statistics of backup `which` (id or tag; None: the newest available).
pub fn gather(ctx: &Context, which: Option<&str>) -> Result<IoReport, EngineError> {
    let cat = ctx.repo.catalog();
    let b = recman_engine::find_backup(ctx, which)?;
    let mut rows = Vec::new();
    let mut jobs = Vec::new();
    for (id, kind) in cat.io_jobs_of_backup(&b.id)? {
        let r = cat.io_stats(&id)?;
        jobs.push(IoJob {
            id,
            kind,
            diagnosis: diagnose(&r),
            figures: recman_engine::tuning::diagnose_job(&r),
        });
        rows.extend(r);
    }
    let samples = cat.io_samples(&b.id)?;
    let tuning = cat.tuning_events(&b.id)?;
    Ok(IoReport {
        backup: b,
        rows,
        jobs,
        samples,
        tuning,
    })
}
