//! The throughput plot of a backup (`report io --plot`, and each database's recent backups
//! on the fleet page): an SVG drawn from the per-second I/O samples, with nothing outside it
//! (no script, no font or stylesheet to fetch), so that it can be inlined into a page.

use recman_catalog::IoSample;
use std::fmt::Write as _;

/// Escapes text for HTML and SVG, element content and quoted attribute values alike: the one
/// escape every catalog value goes through before it reaches a page.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
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
    let _ = writeln!(o, r#"<title>{}</title>"#, escape(title));
    let _ = writeln!(
        o,
        r#"<text x="{left}" y="20" font-size="14">{}</text>"#,
        escape(title)
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
