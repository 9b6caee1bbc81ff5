//! REPORT IO's picture of a backup over time: the per-second samples of each channel (bytes
//! read and written) as an SVG plot, one line per channel and direction (seed 004's Enterprise
//! Manager graphs), the settings changed while it ran, and an HTML page holding both with the
//! statistics tables.

use anyhow::{Context as _, Result};
use recman_command::model::{BackupRecord, IoSample, IoStatRow, TuningEvent};
use recman_command::plot::{escape as esc, svg};
use std::fmt::Write as _;
use std::path::Path;

/// Where `report io` also writes its plot and page.
#[derive(Clone, Copy, Default)]
pub struct Files<'a> {
    pub plot: Option<&'a Path>,
    pub html: Option<&'a Path>,
}

/// Writes the plot and the page asked for, from the backup's samples and statistics.
pub fn write_files(
    b: &BackupRecord,
    rows: &[IoStatRow],
    samples: &[IoSample],
    events: &[TuningEvent],
    diagnosis: &[String],
    files: &Files,
) -> Result<()> {
    if files.plot.is_none() && files.html.is_none() {
        return Ok(());
    }
    if samples.is_empty() {
        anyhow::bail!(
            "backup {} has no per-second samples to plot; hint: backups taken by recman before the samples were kept have none, take a new backup",
            b.id
        );
    }
    let title = format!("backup {} (tag {}): throughput per channel", b.id, b.tag);
    if let Some(p) = files.plot {
        write_svg(p, &title, samples)?;
    }
    if let Some(p) = files.html {
        write_html(p, &title, samples, events, rows, diagnosis)?;
    }
    Ok(())
}

/// The text report's list of settings changed while the backup ran.
pub fn print_tuning(events: &[TuningEvent]) {
    let lines = tuning_lines(events);
    if !lines.is_empty() {
        println!("settings changed while it ran:");
        for l in lines {
            println!("  {l}");
        }
    }
}

/// Lines for the text report: what the backup changed while it ran.
pub fn tuning_lines(events: &[TuningEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{:>7.1}s {}{}: {}{} ({})",
                e.at_ms as f64 / 1e3,
                e.channel
                    .map(|c| format!("channel {c} "))
                    .unwrap_or_default(),
                e.setting,
                e.old_value
                    .as_deref()
                    .map(|o| format!("{o} -> "))
                    .unwrap_or_default(),
                e.new_value,
                e.reason
            )
        })
        .collect()
}

/// Writes the plot of a backup's samples to `path`.
pub fn write_svg(path: &Path, title: &str, samples: &[IoSample]) -> Result<()> {
    std::fs::write(path, svg(title, samples)).with_context(|| {
        format!(
            "cannot write the plot to {}; hint: check the directory exists and is writable",
            path.display()
        )
    })
}

/// An HTML page: the plot, the setting changes, the diagnosis and the statistics table.
pub fn write_html(
    path: &Path,
    title: &str,
    samples: &[IoSample],
    events: &[TuningEvent],
    rows: &[IoStatRow],
    diagnosis: &[String],
) -> Result<()> {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title></head><body>\n<h1>{t}</h1>",
        t = esc(title)
    );
    o.push_str("<h2>Throughput</h2>\n");
    o.push_str(&svg(title, samples));
    o.push_str("<h2>Settings changed while it ran</h2>\n<table border=\"1\"><tr><th>s</th><th>channel</th><th>setting</th><th>from</th><th>to</th><th>reason</th></tr>\n");
    for e in events {
        let _ = writeln!(
            o,
            "<tr><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            e.at_ms as f64 / 1e3,
            e.channel.map(|c| c.to_string()).unwrap_or_default(),
            esc(&e.setting),
            esc(e.old_value.as_deref().unwrap_or("")),
            esc(&e.new_value),
            esc(&e.reason)
        );
    }
    o.push_str("</table>\n<h2>Diagnosis</h2>\n<ul>\n");
    for d in diagnosis {
        let _ = writeln!(o, "<li>{}</li>", esc(d));
    }
    o.push_str("</ul>\n<h2>Statistics</h2>\n<table border=\"1\"><tr><th>job</th><th>type</th><th>ch</th><th>file / piece</th><th>io count</th><th>ready</th><th>short</th><th>long</th><th>long wait s</th><th>bytes</th><th>elapsed s</th><th>MB/s</th></tr>\n");
    for r in rows {
        let el = (r.close_time - r.open_time) as f64 / 1e6;
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{:.2}</td><td>{}</td></tr>",
            esc(&r.job_type),
            esc(&r.kind),
            r.channel,
            esc(r.filename.as_deref().unwrap_or("")),
            r.io_count,
            r.ready,
            r.short_waits,
            r.long_waits,
            r.long_wait_time as f64 / 1e6,
            r.bytes,
            el,
            r.effective_bytes_per_second()
                .map(|b| format!("{:.1}", b as f64 / 1e6))
                .unwrap_or_default()
        );
    }
    o.push_str("</table>\n</body></html>\n");
    std::fs::write(path, o).with_context(|| {
        format!(
            "cannot write the page to {}; hint: check the directory exists and is writable",
            path.display()
        )
    })
}
