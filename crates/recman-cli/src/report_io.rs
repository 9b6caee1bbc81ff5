//! REPORT IO: the V$BACKUP_ASYNC_IO method of the seeds. Rows per file (INPUT), piece (OUTPUT)
//! and channel (AGGREGATE), then the diagnosis: which side waited, and the file or piece with
//! the highest share of long waits.

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

/// Which side limits, from the share of long waits: the seeds' rule of thumb.
pub fn diagnose(rows: &[IoStatRow]) -> Vec<String> {
    let mut out = Vec::new();
    let share = |rs: &mut dyn Iterator<Item = &IoStatRow>| {
        let (mut lw, mut n, mut wt) = (0u64, 0u64, 0u64);
        for r in rs {
            lw += r.long_waits;
            n += r.io_count;
            wt += r.long_wait_time;
        }
        (if n > 0 { lw as f64 / n as f64 } else { 0.0 }, wt)
    };
    let (in_share, in_wait) = share(&mut rows.iter().filter(|r| r.kind == "INPUT"));
    let (out_share, out_wait) = share(&mut rows.iter().filter(|r| r.kind == "OUTPUT"));
    let elapsed: i64 = rows
        .iter()
        .filter(|r| r.kind == "AGGREGATE")
        .map(|r| r.close_time - r.open_time)
        .max()
        .unwrap_or(0);
    let mode = rows.first().map(|r| r.io_mode.as_str()).unwrap_or("");
    if mode == "sync" {
        out.push("i/o mode sync: every read blocks the channel; the statistics cannot separate waiting from working (use --io threads or uring to see waits)".into());
    }
    let el = elapsed.max(1) as f64;
    if in_wait as f64 > 0.2 * el && in_wait >= out_wait {
        out.push(format!(
            "bottleneck: input — channels waited {:.1}s for reads ({:.0}% of buffers were long waits); the disks holding the data limit the backup: add channels or input buffers only if the disks have more to give (compare with `recman validate database`)",
            in_wait as f64 / 1e6,
            in_share * 100.0
        ));
    } else if out_wait as f64 > 0.2 * el {
        out.push(format!(
            "bottleneck: output — channels waited {:.1}s for the media ({:.0}% of blocks were long waits); the repository's write speed limits the backup: more output buffers, compression or faster media help",
            out_wait as f64 / 1e6,
            out_share * 100.0
        ));
    } else if mode != "sync" {
        out.push("bottleneck: cpu — channels rarely waited for reads or writes: page checks and compression limit the backup; more channels (up to the cores) or lighter compression help".into());
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
        jobs.push((job, kind, diagnose(&r)));
        rows.extend(r);
    }
    // The backup's own job is the one the tuning method reads.
    let backup_diag = jobs
        .iter()
        .find(|j| j.1 == "BACKUP")
        .map(|j| j.2.clone())
        .unwrap_or_default();
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
                "jobs": jobs.iter().map(|(id, kind, d)| serde_json::json!({ "job_id": id, "job_type": kind, "diagnosis": d })).collect::<Vec<_>>(),
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
        for (job, _, _) in &jobs {
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
    for (id, kind, diag) in &jobs {
        println!("{} {id}:", kind.to_lowercase());
        for line in diag {
            println!("  {line}");
        }
    }
    crate::report_plot::print_tuning(cat, &b.id)?;
    Ok(())
}
