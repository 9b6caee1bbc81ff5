//! The fleet page as HTML: one document with inline CSS and inline SVG, no script and no
//! reference to anything outside it, so that it works with no network and a strict
//! Content-Security-Policy (`default-src 'none'`) refuses nothing it needs. Every value that
//! comes from the catalog (names, paths, messages, tags: a database may be named
//! `<img src=x onerror=alert(1)>`) goes through [`t`], the one escape; the rest of the markup
//! is this file's own constant text and numbers it formats.

use super::{DbPage, FleetPage};
use crate::check::span;
use crate::plot::{escape, svg};
use crate::slo::SloRow;
use recman_catalog::{BackupRecord, DrillRecord, FailureRecord};
use std::fmt::Write as _;

/// Catalog text made safe for element content and quoted attributes.
fn t(s: &str) -> String {
    escape(s)
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1em}\
th,td{border:1px solid #bbb;padding:.2em .5em;text-align:left;vertical-align:top}\
th{background:#eee}\
.CRITICAL{background:#c62828;color:#fff}.HIGH{background:#ef6c00;color:#fff}\
.LOW{background:#f9e79f}.OK{background:#2e7d32;color:#fff}\
.met{color:#2e7d32}.missed{color:#c62828;font-weight:bold}\
section{border-top:2px solid #888;margin-top:1.5em}\
.muted{color:#666}";

/// The whole page.
pub fn render(page: &FleetPage) -> String {
    let mut o = String::with_capacity(64 << 10);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>recman fleet: {repo}</title>\
         <link rel=\"icon\" href=\"data:,\"><style>{STYLE}</style></head><body>\n\
         <h1>recman fleet</h1>\n<p>Repository <code>{repo}</code>, read {when}. \
         RPO target: {rpo}; RTO target: {rto}.</p>\n",
        repo = t(&page.repository),
        when = when(page.generated_at),
        rpo = target(page.targets.rpo),
        rto = target(page.targets.rto),
    );
    summary(&mut o, page);
    for db in &page.databases {
        database(&mut o, db, page.generated_at);
    }
    o.push_str("</body></html>\n");
    o
}

/// A table with a row per database: the page's overview, linking to each section.
fn summary(o: &mut String, page: &FleetPage) {
    if page.databases.is_empty() {
        o.push_str("<p>No database is registered in this repository.</p>\n");
        return;
    }
    o.push_str(
        "<table id=\"summary\"><tr><th>database</th><th>health</th><th>open failures</th>\
         <th>last backup</th><th>RPO</th><th>RTO</th></tr>\n",
    );
    for d in &page.databases {
        let last = d
            .backups
            .first()
            .map(|b| format!("{} {}", when(b.start_time), t(b.status.as_str())))
            .unwrap_or_else(|| "none".into());
        let _ = writeln!(
            o,
            "<tr><td><a href=\"#db-{id}\">{name}</a></td><td class=\"{h}\">{h}</td><td>{n}</td>\
             <td>{last}</td><td>{rpo}</td><td>{rto}</td></tr>",
            id = d.db.id,
            name = t(&d.db.name),
            h = d.health(),
            n = d.failures.len(),
            rpo = measured(d.slo.rpo_seconds, d.slo.rpo_met),
            rto = measured(d.slo.rto_seconds, d.slo.rto_met),
        );
    }
    o.push_str("</table>\n");
}

fn database(o: &mut String, d: &DbPage, now: i64) {
    let _ = writeln!(
        o,
        "<section id=\"db-{id}\"><h2>{name} <span class=\"{h}\">{h}</span></h2>\n\
         <p class=\"muted\">PostgreSQL {ver}, data directory <code>{pgdata}</code>, \
         system identifier {sysid}.</p>",
        id = d.db.id,
        name = t(&d.db.name),
        h = d.health(),
        ver = d.db.pg_version,
        pgdata = t(&d.db.pgdata),
        sysid = d.db.system_identifier,
    );
    failures(o, &d.failures);
    backups(o, &d.backups, now);
    slo(o, &d.slo);
    drills(o, &d.drills);
    plots(o, d);
    o.push_str("</section>\n");
}

fn failures(o: &mut String, list: &[FailureRecord]) {
    o.push_str("<h3>Open failures</h3>\n");
    if list.is_empty() {
        o.push_str("<p>None open at the last check.</p>\n");
        return;
    }
    o.push_str(
        "<table class=\"failures\"><tr><th>id</th><th>kind</th><th>priority</th><th>object</th>\
         <th>message</th><th>first seen</th><th>last seen</th></tr>\n",
    );
    for f in list {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            f.id,
            t(&f.kind),
            priority_class(&f.priority),
            t(&f.priority),
            t(&f.object),
            t(&f.message),
            when(f.first_seen),
            when(f.last_seen),
        );
    }
    o.push_str("</table>\n");
}

/// A class for a priority from a fixed set, never the catalog's text itself.
fn priority_class(p: &str) -> &'static str {
    match p {
        "CRITICAL" => "CRITICAL",
        "HIGH" => "HIGH",
        _ => "LOW",
    }
}

fn backups(o: &mut String, list: &[BackupRecord], now: i64) {
    o.push_str("<h3>Last backups</h3>\n");
    if list.is_empty() {
        o.push_str("<p>No backup.</p>\n");
        return;
    }
    o.push_str(
        "<table class=\"backups\"><tr><th>id</th><th>tag</th><th>type</th><th>status</th>\
         <th>started</th><th>age</th><th>took</th><th>database bytes</th><th>written</th></tr>\n",
    );
    for b in list {
        let took = b
            .stop_time
            .map(|s| span((s - b.start_time) as f64 / 1e6))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            t(&b.id),
            t(&b.tag),
            t(&b.backup_type),
            t(b.status.as_str()),
            when(b.start_time),
            span((now - b.start_time) as f64 / 1e6),
            took,
            bytes(b.db_bytes),
            bytes(b.written_bytes),
        );
    }
    o.push_str("</table>\n");
}

fn slo(o: &mut String, r: &SloRow) {
    o.push_str(
        "<h3>RPO and RTO</h3>\n<table class=\"slo\"><tr><th></th><th>measured</th>\
         <th>target</th><th>basis</th></tr>\n",
    );
    let rpo_basis = match r.rpo_bytes {
        Some(b) => format!("{}, {} of WAL not yet safe", t(r.rpo_source), bytes(b)),
        None => t(r.rpo_source),
    };
    let rto_basis = r
        .rto_drill
        .map(|d| format!("drill {d}"))
        .unwrap_or_else(|| "no passed drill".into());
    let predicted = if r.predicted_basis.is_empty() {
        String::new()
    } else {
        t(&r.predicted_basis)
    };
    for (what, m, ok, target_s, basis) in [
        (
            "RPO",
            r.rpo_seconds,
            r.rpo_met,
            r.rpo_target_seconds,
            rpo_basis,
        ),
        (
            "RTO",
            r.rto_seconds,
            r.rto_met,
            r.rto_target_seconds,
            rto_basis,
        ),
        (
            "predicted restore",
            r.predicted_seconds,
            r.predicted_met,
            r.rto_target_seconds,
            predicted,
        ),
    ] {
        let _ = writeln!(
            o,
            "<tr><th>{what}</th><td>{}</td><td>{}</td><td>{basis}</td></tr>",
            measured(m, ok),
            target_s.map(span).unwrap_or_else(|| "none".into()),
        );
    }
    o.push_str("</table>\n");
    if !r.notes.is_empty() {
        o.push_str("<ul class=\"notes\">\n");
        for n in &r.notes {
            let _ = writeln!(o, "<li>{}</li>", t(n));
        }
        o.push_str("</ul>\n");
    }
}

fn drills(o: &mut String, list: &[DrillRecord]) {
    o.push_str("<h3>Drills</h3>\n");
    if list.is_empty() {
        o.push_str("<p>No drill has run (<code>recman drill</code>).</p>\n");
        return;
    }
    o.push_str(
        "<table class=\"drills\"><tr><th>id</th><th>started</th><th>status</th><th>backup</th>\
         <th>restore</th><th>recovery</th><th>restored</th><th>error</th></tr>\n",
    );
    for d in list {
        let class = if d.status == "PASSED" {
            "met"
        } else {
            "missed"
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            d.id,
            when(d.started_at),
            t(&d.status),
            t(d.backup_id.as_deref().unwrap_or("")),
            span(d.restore_ms as f64 / 1e3),
            span(d.recovery_ms as f64 / 1e3),
            bytes(d.bytes_restored.max(0) as u64),
            t(d.error.as_deref().unwrap_or("")),
        );
    }
    o.push_str("</table>\n");
}

fn plots(o: &mut String, d: &DbPage) {
    if d.plots.is_empty() {
        return;
    }
    o.push_str("<h3>Throughput of recent backups</h3>\n");
    for (id, samples) in &d.plots {
        // svg() escapes its title itself.
        let title = format!("{}: backup {id}", d.db.name);
        o.push_str("<div class=\"plot\">");
        o.push_str(&svg(&title, samples));
        o.push_str("</div>\n");
    }
}

/// A measured value in seconds and whether it meets its target.
fn measured(seconds: Option<f64>, met: Option<bool>) -> String {
    let Some(s) = seconds else {
        return "unknown".into();
    };
    match met {
        Some(true) => format!("<span class=\"met\">{} (met)</span>", span(s)),
        Some(false) => format!("<span class=\"missed\">{} (missed)</span>", span(s)),
        None => span(s),
    }
}

fn target(micros: Option<i64>) -> String {
    micros
        .map(|m| span(m as f64 / 1e6))
        .unwrap_or_else(|| "none".into())
}

/// Unix microseconds as UTC, to the second.
fn when(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests;
