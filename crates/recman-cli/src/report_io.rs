//! REPORT IO: the V$BACKUP_ASYNC_IO method of the seeds. Rows per file (INPUT), piece (OUTPUT)
//! and channel (AGGREGATE), then the diagnosis of each job; the facts and the diagnosis are
//! the command model's (`recman_command::report_io`), laid out here.

use anyhow::Result;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use recman_command::model::{Context, IoStatRow};
use recman_command::report_io::{IoJob, IoReport};

fn rate(r: &IoStatRow) -> String {
    r.effective_bytes_per_second()
        .map(|b| format!("{:.1} MB/s", b as f64 / 1e6))
        .unwrap_or_default()
}

/// REPORT IO of what the command model gathered: the plot and page asked for are written first
/// (a failure prints nothing), then the table or the JSON.
pub fn report_io(
    ctx: &Context,
    which: Option<&str>,
    json: bool,
    all_inputs: bool,
    files: crate::report_plot::Files,
) -> Result<()> {
    let report = recman_command::report_io::gather(ctx, which)?;
    let backup_diag = report.backup_diagnosis();
    let IoReport {
        backup: b,
        rows,
        samples,
        tuning,
        ..
    } = &report;
    crate::report_plot::write_files(b, rows, samples, tuning, &backup_diag, &files)?;
    if json {
        return print_json(&report, &backup_diag);
    }
    print_table(&report, all_inputs);
    Ok(())
}

/// `report io --json`: the rows with their rates, the diagnosis, samples, tuning and jobs.
fn print_json(report: &IoReport, backup_diag: &[String]) -> Result<()> {
    let backup_bottleneck = report.backup_bottleneck();
    let IoReport {
        backup: b,
        rows,
        jobs,
        samples,
        tuning,
    } = report;
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
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "backup_id": b.id,
            "rows": v,
            "diagnosis": backup_diag,
            "samples": samples,
            "tuning": tuning,
            "bottleneck": backup_bottleneck,
            "jobs": jobs.iter().map(|j| serde_json::json!({
                "job_id": j.id,
                "job_type": j.kind,
                "bottleneck": j.figures.as_ref().map(|x| x.bottleneck.as_str()),
                "figures": j.figures,
                "diagnosis": j.diagnosis,
            })).collect::<Vec<_>>(),
        }))?
    );
    Ok(())
}

/// The table of rows, then each job's read modes and diagnosis, then the tuning events.
fn print_table(report: &IoReport, all_inputs: bool) {
    let IoReport {
        backup: b,
        rows,
        jobs,
        tuning,
        ..
    } = report;
    if rows.is_empty() {
        println!("no i/o statistics recorded for backup {}", b.id);
        return;
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
    let shown = shown_inputs(rows, jobs, inputs, all_inputs);
    for (r, _) in rows.iter().zip(&shown).filter(|(_, s)| **s) {
        t.add_row([
            r.job_type.clone(),
            r.kind.clone(),
            match &r.read_mode {
                Some(m) => format!("{} {m}", r.io_mode),
                None => r.io_mode.clone(),
            },
            r.channel.to_string(),
            r.filename.clone().unwrap_or_default(),
            r.io_count.to_string(),
            r.ready.to_string(),
            r.short_waits.to_string(),
            r.long_waits.to_string(),
            format!("{:.2}", r.long_wait_time as f64 / 1e6),
            crate::display::size(r.bytes),
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
    for j in jobs {
        println!("{} {}:", j.kind.to_lowercase(), j.id);
        if let Some(line) = read_modes(rows, &j.id) {
            println!("  {line}");
        }
        for line in &j.diagnosis {
            println!("  {line}");
        }
    }
    crate::report_plot::print_tuning(tuning);
}

/// Which rows the table shows, by position; `inputs` of the rows are INPUT rows.
fn shown_inputs(rows: &[IoStatRow], jobs: &[IoJob], inputs: usize, all_inputs: bool) -> Vec<bool> {
    // A cluster has thousands of files: show each job's 20 inputs that waited longest unless
    // asked for all. Chosen once, by position, not per row.
    let mut shown = vec![true; rows.len()];
    if !all_inputs && inputs > 20 {
        for job in jobs {
            let mut idx: Vec<usize> = (0..rows.len())
                .filter(|&i| rows[i].kind == "INPUT" && rows[i].job_id == job.id)
                .collect();
            idx.sort_by_key(|&i| std::cmp::Reverse((rows[i].long_wait_time, rows[i].bytes)));
            for &i in idx.iter().skip(20) {
                shown[i] = false;
            }
        }
    }
    shown
}

/// How a job's files were read: how many, and how many bytes, directly and through the page
/// cache (the default reads each file the cheaper way; see docs/io-engine.md).
fn read_modes(rows: &[IoStatRow], job: &str) -> Option<String> {
    let mut by = [(0u64, 0u64); 2];
    for r in rows.iter().filter(|r| r.kind == "INPUT" && r.job_id == job) {
        let k = match r.read_mode.as_deref() {
            Some("direct") => 0,
            Some("buffered") => 1,
            _ => continue,
        };
        by[k].0 += 1;
        by[k].1 += r.bytes;
    }
    let [(dn, db), (bn, bb)] = by;
    (dn + bn > 0).then(|| {
        format!(
            "reads: {dn} files ({}) direct, {bn} files ({}) through the page cache",
            crate::display::size(db),
            crate::display::size(bb)
        )
    })
}
