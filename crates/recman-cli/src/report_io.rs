//! REPORT IO: the V$BACKUP_ASYNC_IO method of the seeds. Rows per file (INPUT), piece (OUTPUT)
//! and channel (AGGREGATE), then the diagnosis: what limited each job (the engine's
//! [`recman_engine::tuning::diagnose_job`]), and the file or piece with the highest share of
//! long waits.

use anyhow::Result;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use recman_catalog::IoStatRow;
use recman_engine::Context;

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

pub fn report_io(
    ctx: &Context,
    which: Option<&str>,
    json: bool,
    all_inputs: bool,
    files: crate::report_plot::Files,
) -> Result<()> {
    let cat = ctx.repo.catalog();
    let b = recman_engine::find_backup(ctx, which)?;
    let mut rows = Vec::new();
    let mut jobs = Vec::new();
    for (job, kind) in cat.io_jobs_of_backup(&b.id)? {
        let r = cat.io_stats(&job)?;
        let d = recman_engine::tuning::diagnose_job(&r);
        jobs.push((job, kind, diagnose(&r), d));
        rows.extend(r);
    }
    // The backup's own job is the one the tuning method reads.
    let backup_diag = jobs
        .iter()
        .find(|j| j.1 == "BACKUP")
        .map(|j| j.2.clone())
        .unwrap_or_default();
    let backup_bottleneck = jobs
        .iter()
        .find(|j| j.1 == "BACKUP")
        .and_then(|j| j.3.as_ref())
        .map(|d| d.bottleneck.as_str());
    crate::report_plot::write_files(cat, &b, &rows, &backup_diag, &files)?;
    if json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let mut j = serde_json::to_value(r).expect("plain data");
                j["effective_bytes_per_second"] = r.effective_bytes_per_second().into();
                j["discrete_bytes_per_second"] = (r.io_time > 0)
                    .then(|| r.bytes * 1_000_000 / r.io_time)
                    .into();
                j
            })
            .collect();
        let (samples, tuning) = crate::report_plot::json_extras(cat, &b.id)?;
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "backup_id": b.id,
                "rows": v,
                "diagnosis": backup_diag,
                "samples": samples,
                "tuning": tuning,
                "bottleneck": backup_bottleneck,
                "jobs": jobs.iter().map(|(id, kind, d, dj)| serde_json::json!({
                    "job_id": id,
                    "job_type": kind,
                    "bottleneck": dj.as_ref().map(|x| x.bottleneck.as_str()),
                    "figures": dj,
                    "diagnosis": d,
                })).collect::<Vec<_>>(),
            }))?
        );
        return Ok(());
    }
    if rows.is_empty() {
        println!("no i/o statistics recorded for backup {}", b.id);
        return Ok(());
    }
    println!(
        "i/o statistics of backup {} (tag {}); times in seconds",
        b.id, b.tag
    );
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "Job",
        "Type",
        "Mode",
        "Ch",
        "File / piece",
        "IO count",
        "Ready",
        "Short",
        "Long",
        "Long wait",
        "Bytes",
        "Buffer",
        "Elapsed",
        "Effective",
    ]);
    let inputs = rows.iter().filter(|r| r.kind == "INPUT").count();
    // A cluster has thousands of files: show each job's 20 inputs that waited longest unless
    // asked for all. Chosen once, by position, not per row.
    let mut shown = vec![true; rows.len()];
    if !all_inputs && inputs > 20 {
        for (job, _, _, _) in &jobs {
            let mut idx: Vec<usize> = (0..rows.len())
                .filter(|&i| rows[i].kind == "INPUT" && &rows[i].job_id == job)
                .collect();
            idx.sort_by_key(|&i| std::cmp::Reverse((rows[i].long_wait_time, rows[i].bytes)));
            for &i in idx.iter().skip(20) {
                shown[i] = false;
            }
        }
    }
    for (r, _) in rows.iter().zip(&shown).filter(|(_, s)| **s) {
        t.add_row([
            r.job_type.clone(),
            r.kind.clone(),
            r.io_mode.clone(),
            r.channel.to_string(),
            r.filename.clone().unwrap_or_default(),
            r.io_count.to_string(),
            r.ready.to_string(),
            r.short_waits.to_string(),
            r.long_waits.to_string(),
            format!("{:.2}", r.long_wait_time as f64 / 1e6),
            crate::list::size(r.bytes),
            format!("{}K x {}", r.buffer_size >> 10, r.buffer_count),
            format!("{:.2}", (r.close_time - r.open_time) as f64 / 1e6),
            rate(r),
        ]);
    }
    println!("{t}");
    if inputs > 20 && !all_inputs {
        println!(
            "({inputs} input rows; the 20 with the longest waits shown per job, --all shows every one)"
        );
    }
    for (id, kind, diag, _) in &jobs {
        println!("{} {id}:", kind.to_lowercase());
        for line in diag {
            println!("  {line}");
        }
    }
    crate::report_plot::print_tuning(cat, &b.id)?;
    Ok(())
}
