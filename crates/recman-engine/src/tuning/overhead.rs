//! What a backup costs besides moving data: the checkpoint that starts it, the WAL switch and
//! the wait for its last segment to be archived that end it. These do not shrink with more
//! channels or other buffers, so `advise` adds them to its prediction as a fixed term,
//! learned from the database's own recent backups (a small database's backup can spend as
//! long here as on its data).

use recman_catalog::{BackupStatus, Catalog, CatalogError};

/// Backups looked at, newest first.
const RECENT: usize = 5;

/// The median of the recent successful backups' time outside their data phase, in seconds;
/// None before the first backup with I/O statistics.
pub fn fixed_seconds(cat: &Catalog, db_id: i64) -> Result<Option<f64>, CatalogError> {
    let mut backups = cat.backups(db_id)?;
    backups.retain(|b| b.status == BackupStatus::Available && b.stop_time.is_some());
    backups.sort_by_key(|b| std::cmp::Reverse(b.start_time));
    let mut costs = Vec::new();
    for b in backups {
        if costs.len() == RECENT {
            break;
        }
        let rows = cat.io_stats(&b.id)?;
        let inputs = rows.iter().filter(|r| r.kind == "AGGREGATE");
        let (first, last) = inputs.fold((i64::MAX, i64::MIN), |(lo, hi), r| {
            (lo.min(r.open_time), hi.max(r.close_time))
        });
        if first > last {
            continue;
        }
        let whole = b.stop_time.unwrap_or(b.start_time) - b.start_time;
        costs.push(((whole - (last - first)).max(0)) as f64 / 1e6);
    }
    if costs.is_empty() {
        return Ok(None);
    }
    costs.sort_by(f64::total_cmp);
    Ok(Some(costs[costs.len() / 2]))
}

/// Bytes read per second of the channels' CPU time in the database's recent successful full
/// backups, by compression as they record it (`lz4`, `zstd:1`): what the checks, the codec,
/// the CRCs, the piece format and the reads' submission cost a core in its own backups, the
/// median of up to five a codec. calibrate's CPU probes run for milliseconds on a sample of
/// pages and, on this project's VM, came out 1.4 to 2 times faster; these ran for the whole
/// backup. Empty before the first backup with CPU times.
pub fn channel_cpu_rates(
    cat: &Catalog,
    db_id: i64,
) -> Result<std::collections::BTreeMap<String, f64>, CatalogError> {
    let mut backups = cat.backups(db_id)?;
    backups.retain(|b| {
        b.status == BackupStatus::Available
            && b.stop_time.is_some()
            && (b.backup_type == "FULL" || b.backup_type == "LEVEL0")
    });
    backups.sort_by_key(|b| std::cmp::Reverse(b.start_time));
    let mut rates = std::collections::BTreeMap::<String, Vec<f64>>::new();
    for b in backups.iter().take(RECENT * 4) {
        let seen = rates.entry(b.compression.clone()).or_default();
        if seen.len() == RECENT {
            continue;
        }
        let (bytes, cpu) = cat
            .io_stats(&b.id)?
            .iter()
            .filter(|r| r.kind == "AGGREGATE")
            .fold((0u64, 0u64), |(b, c), r| (b + r.bytes, c + r.cpu_time));
        if bytes > 0 && cpu > 0 {
            seen.push(bytes as f64 / (cpu as f64 / 1e6));
        }
    }
    Ok(rates
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(codec, mut v)| {
            v.sort_by(f64::total_cmp);
            (codec, v[v.len() / 2])
        })
        .collect())
}
