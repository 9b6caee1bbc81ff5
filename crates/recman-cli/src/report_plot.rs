//! REPORT IO's picture of a backup over time: the per-second samples of each channel (bytes
//! read and written) as an SVG plot, one line per channel and direction (seed 004's Enterprise
//! Manager graphs), the settings changed while it ran, and an HTML page holding both with the
//! statistics tables.

use anyhow::{Context as _, Result};
use recman_catalog::{BackupRecord, IoSample, IoStatRow, TuningEvent};
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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Colours of the channels' lines; reads solid, writes dashed in the same colour.
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// The plot: MB/s against seconds, a polyline per channel for reads and one for writes.
pub fn svg(title: &str, samples: &[IoSample]) -> String {
    let (w, h, left, right, top, bottom) = (800.0, 400.0, 70.0, 160.0, 40.0, 50.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let last = samples.iter().map(|s| s.second).max().unwrap_or(0).max(1) as f64;
    let peak = samples
        .iter()
        .map(|s| s.bytes_read.max(s.bytes_written))
        .max()
        .unwrap_or(0)
        .max(1) as f64
        / 1e6;
    // A round top for the axis: 1, 2 or 5 times a power of ten.
    let ymax = {
        let p = 10f64.powf(peak.log10().floor());
        [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * p)
            .find(|v| *v >= peak)
            .unwrap_or(10.0 * p)
    };
    let x = |sec: f64| left + pw * sec / last;
    let y = |mb: f64| top + ph - ph * mb / ymax;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<title>{}</title>"#, esc(title));
    let _ = writeln!(
        o,
        r#"<text x="{left}" y="20" font-size="14">{}</text>"#,
        esc(title)
    );
    let _ = writeln!(
        o,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
    );
    for i in 0..=4 {
        let v = ymax * i as f64 / 4.0;
        let _ = writeln!(
            o,
            r##"<line x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
            left + pw,
            y(v),
            y(v),
            left - 6.0,
            y(v) + 4.0
        );
    }
    for i in 0..=5 {
        let s = last * i as f64 / 5.0;
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{s:.0}</text>"#,
            x(s),
            top + ph + 16.0
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle">seconds</text><text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">MB/s</text>"#,
        left + pw / 2.0,
        h - 12.0,
        top + ph / 2.0,
        top + ph / 2.0
    );
    let mut channels: Vec<u32> = samples.iter().map(|s| s.channel).collect();
    channels.sort_unstable();
    channels.dedup();
    let mut legend_y = top + 10.0;
    for (k, ch) in channels.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        for (dir, dash, pick) in [
            (
                "read",
                "",
                (|s: &IoSample| s.bytes_read) as fn(&IoSample) -> u64,
            ),
            ("written", r#" stroke-dasharray="6 3""#, |s: &IoSample| {
                s.bytes_written
            }),
        ] {
            let pts: Vec<String> = samples
                .iter()
                .filter(|s| s.channel == *ch)
                .map(|s| format!("{:.1},{:.1}", x(s.second as f64), y(pick(s) as f64 / 1e6)))
                .collect();
            let _ = writeln!(
                o,
                r#"<polyline data-channel="{ch}" data-direction="{dir}" fill="none" stroke="{colour}" stroke-width="1.5"{dash} points="{}"/>"#,
                pts.join(" ")
            );
            let lx = left + pw + 12.0;
            let _ = writeln!(
                o,
                r#"<line x1="{lx}" x2="{}" y1="{legend_y}" y2="{legend_y}" stroke="{colour}" stroke-width="1.5"{dash}/><text x="{}" y="{}">channel {ch} {dir}</text>"#,
                lx + 24.0,
                lx + 30.0,
                legend_y + 4.0
            );
            legend_y += 18.0;
        }
    }
    o.push_str("</svg>\n");
    o
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(channel: u32, second: u32, r: u64, w: u64) -> IoSample {
        IoSample {
            job_id: "B".into(),
            channel,
            second,
            bytes_read: r,
            bytes_written: w,
        }
    }

    #[test]
    fn a_polyline_per_channel_and_direction() {
        let s = vec![
            sample(1, 0, 10_000_000, 5_000_000),
            sample(1, 1, 20_000_000, 9_000_000),
            sample(2, 0, 3_000_000, 1_000_000),
        ];
        let out = svg("backup <B1>", &s);
        assert_eq!(out.matches("<polyline").count(), 4);
        assert!(out.contains("backup &lt;B1&gt;"));
        assert!(out.contains(r#"data-channel="2" data-direction="written""#));
        // The peak (20 MB/s) sits on the top of the axis.
        assert!(out.contains(">20</text>"), "{out}");
    }
}
