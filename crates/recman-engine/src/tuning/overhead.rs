//! What advise learns from the database's own recent backups, beside calibrate's probes: the
//! start and stop costs (the checkpoint that starts a backup, the WAL switch and the wait for
//! its last segment to be archived that end it), which do not shrink with more channels or
//! other buffers and go into the prediction as a fixed term (a small database's backup can
//! spend as long there as on its data); what a channel's whole CPU work ran at per codec; and
//! how long the data phase of each recent full backup took with its own channels and codec,
//! which advise holds its model to ([`super::advise::Advice::with_history`]).

use recman_catalog::{BackupStatus, Catalog, CatalogError};
use std::collections::BTreeMap;

/// Backups looked at, newest first, for each figure (and for each codec's CPU rate).
const RECENT: usize = 5;

/// The figures learned from the recent backups.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Learned {
    /// The median of the recent successful backups' time outside their data phase, in
    /// seconds; None before the first backup with I/O statistics.
    pub fixed_seconds: Option<f64>,
    /// Bytes read per second of the channels' and their piece writers' CPU time in the recent
    /// successful full backups, by compression as they record it (`lz4`, `zstd:1`): what the
    /// checks, the codec, the CRCs, the piece format, the reads' submission and the writes
    /// cost a core in the database's own backups, the median of up to five a codec among its
    /// twenty newest. calibrate's CPU probes run for milliseconds on a sample of pages and, on
    /// this project's VM, came out 1.4 to 2 times faster; these ran for the whole backup.
    /// Empty before the first backup with CPU times.
    pub channel_cpu: BTreeMap<String, f64>,
    /// The recent successful full backups' data phases, newest first, up to [`RUNS`]; those
    /// held back by RATE or DURATION are left out (their pace was chosen, not met).
    pub runs: Vec<PastRun>,
}

/// Data phases kept for advise's history factor: far enough back to find a few runs with the
/// settings advise chooses among others tried since.
pub const RUNS: usize = 30;

/// One backup's data phase as its statistics recorded it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PastRun {
    /// As the backup records it (`none`, `lz4`, `zstd:1`).
    pub compression: String,
    /// When it started, Unix microseconds.
    pub started: i64,
    /// The kind of medium its pieces went to (`disk`, `s3`, ...), as its channels recorded it.
    pub device: Option<String>,
    /// Bytes each channel read (its AGGREGATE row).
    pub channel_bytes: Vec<u64>,
    /// Pieces written (OUTPUT rows).
    pub pieces: u64,
    /// From the first channel's start to the last one's end.
    pub data_seconds: f64,
}

/// Reads each recent backup's statistics once for both figures.
pub fn learn(cat: &Catalog, db_id: i64) -> Result<Learned, CatalogError> {
    let mut backups = cat.backups(db_id)?;
    backups.retain(|b| b.status == BackupStatus::Available && b.stop_time.is_some());
    backups.sort_by_key(|b| std::cmp::Reverse(b.start_time));
    let mut costs = Vec::new();
    let mut rates = BTreeMap::<String, Vec<f64>>::new();
    let mut runs = Vec::new();
    for (i, b) in backups.iter().enumerate() {
        let full = b.backup_type == "FULL" || b.backup_type == "LEVEL0";
        let want_rate =
            i < RECENT * 4 && full && rates.get(&b.compression).is_none_or(|v| v.len() < RECENT);
        let want_run = full && runs.len() < RUNS;
        if costs.len() == RECENT && !want_rate && !want_run {
            if i >= RECENT * 4 && runs.len() == RUNS {
                break;
            }
            continue;
        }
        let rows = cat.io_stat_totals(&b.id)?;
        let aggs: Vec<_> = rows.iter().filter(|r| r.kind == "AGGREGATE").collect();
        let (first, last) = aggs.iter().fold((i64::MAX, i64::MIN), |(lo, hi), r| {
            (lo.min(r.open_time), hi.max(r.close_time))
        });
        if costs.len() < RECENT && first <= last {
            let whole = b.stop_time.unwrap_or(b.start_time) - b.start_time;
            costs.push(((whole - (last - first)).max(0)) as f64 / 1e6);
        }
        // The channels' CPU and their piece writers' (OUTPUT rows; 0 in backups recorded
        // before it was kept): under a CPU quota the writers' copies take from the same cores.
        let bytes: u64 = aggs.iter().map(|r| r.bytes).sum();
        let cpu: u64 = rows
            .iter()
            .filter(|r| r.kind == "AGGREGATE" || r.kind == "OUTPUT")
            .map(|r| r.cpu_time)
            .sum();
        if want_rate && bytes > 0 && cpu > 0 {
            let seen = rates.entry(b.compression.clone()).or_default();
            seen.push(bytes as f64 / (cpu as f64 / 1e6));
        }
        if want_run && first < last && aggs.iter().all(|r| r.throttle_time == 0) {
            let mut channel_bytes: Vec<(u32, u64)> =
                aggs.iter().map(|r| (r.channel, r.bytes)).collect();
            channel_bytes.sort_unstable();
            runs.push(PastRun {
                compression: b.compression.clone(),
                started: b.start_time,
                device: aggs.first().and_then(|r| r.device.clone()),
                channel_bytes: channel_bytes.into_iter().map(|(_, b)| b).collect(),
                pieces: rows.iter().filter(|r| r.kind == "OUTPUT").count() as u64,
                data_seconds: (last - first) as f64 / 1e6,
            });
        }
    }
    Ok(Learned {
        fixed_seconds: median(costs),
        channel_cpu: rates
            .into_iter()
            .filter_map(|(codec, v)| Some((codec, median(v)?)))
            .collect(),
        runs,
    })
}

pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use recman_catalog::{BackupRecord, Catalog, IoStatRow};

    fn backup(id: &str, db_id: i64, compression: &str) -> BackupRecord {
        BackupRecord {
            db_id,
            start_time: 1_000_000,
            stop_time: Some(4_000_000),
            compression: compression.into(),
            ..recman_catalog::testkit::backup(id, "FULL")
        }
    }

    fn row(id: &str, kind: &str, bytes: u64, cpu_time: u64) -> IoStatRow {
        IoStatRow {
            job_id: id.into(),
            job_type: "BACKUP".into(),
            backup_id: Some(id.into()),
            kind: kind.into(),
            io_mode: "uring".into(),
            channel: 1,
            open_time: 1_500_000,
            close_time: 3_500_000,
            bytes,
            cpu_time,
            ..Default::default()
        }
    }

    #[test]
    fn the_cpu_a_codec_costs_counts_the_piece_writers_too() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::create(&dir.path().join("catalog.db")).unwrap();
        let db = cat.register_database("d", 1, 150000, "/pgdata").unwrap();
        cat.insert_backup(&backup("B1", db.id, "none")).unwrap();
        // 2 GB read on a second of the channel's CPU, and another second its piece writer
        // spent copying the blocks out: a gigabyte per CPU-second, not two.
        cat.add_io_stats(&[
            row("B1", "AGGREGATE", 2_000_000_000, 1_000_000),
            row("B1", "OUTPUT", 2_000_000_000, 1_000_000),
        ])
        .unwrap();
        let l = super::learn(&cat, db.id).unwrap();
        assert_eq!(l.channel_cpu.get("none").copied(), Some(1e9));
        // Outside the data phase: 3 s in all, 2 s of data.
        assert_eq!(l.fixed_seconds, Some(1.0));
    }
}
