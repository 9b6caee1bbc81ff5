use super::*;
use crate::fleet_page::{DbPage, FleetPage};
use crate::slo::{SloRow, Targets};
use recman_catalog::{DbRecord, IoSample};

const HOSTILE: &str = "<img src=x onerror=alert(1)>";

fn slo_row(name: &str) -> SloRow {
    SloRow {
        database: name.into(),
        rpo_source: "archive",
        rpo_seconds: Some(90.0),
        rpo_bytes: None,
        last_archived_at: None,
        rpo_target_seconds: Some(60.0),
        rpo_met: Some(false),
        rto_seconds: None,
        rto_drill: None,
        predicted_seconds: None,
        predicted_basis: String::new(),
        rto_target_seconds: None,
        rto_met: None,
        predicted_met: None,
        notes: vec![format!("no drill of database {name} has passed")],
    }
}

fn failure(id: i64, priority: &str, object: &str) -> FailureRecord {
    FailureRecord {
        id,
        db_id: 1,
        kind: "no-backup".into(),
        object: object.into(),
        priority: priority.into(),
        status: "OPEN".into(),
        message: format!("database {HOSTILE} has no backup"),
        first_seen: 1_700_000_000_000_000,
        last_seen: 1_700_000_060_000_000,
        closed_at: None,
    }
}

fn page() -> FleetPage {
    let db = DbRecord {
        id: 1,
        name: HOSTILE.into(),
        system_identifier: 7,
        pg_version: 150004,
        pgdata: "/srv/'quoted\"".into(),
        registered_at: 0,
    };
    let samples = vec![IoSample {
        job_id: "B1".into(),
        channel: 1,
        second: 0,
        bytes_read: 1_000_000,
        bytes_written: 500_000,
    }];
    FleetPage {
        repository: "/repo/<r>".into(),
        generated_at: 1_700_000_100_000_000,
        targets: Targets {
            rpo: Some(60_000_000),
            rto: None,
        },
        databases: vec![DbPage {
            db,
            failures: vec![failure(3, "CRITICAL", HOSTILE)],
            backups: Vec::new(),
            slo: slo_row(HOSTILE),
            drills: Vec::new(),
            plots: vec![("B1".into(), samples)],
        }],
    }
}

#[test]
fn catalog_text_is_escaped_everywhere() {
    let html = render(&page());
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("<r>"), "{html}");
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );
    assert!(html.contains("/srv/&#39;quoted&quot;"), "{html}");
}

#[test]
fn the_page_names_nothing_outside_itself() {
    let html = render(&page());
    assert!(!html.contains("<script"), "{html}");
    // The SVG namespace is a name, not a fetch; nothing else may carry a URL.
    let rest = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for needle in ["http:", "https:", "src=\"", "url(", "@import"] {
        assert!(!rest.contains(needle), "{needle} in {rest}");
    }
    assert!(
        html.contains("<svg"),
        "the throughput plot is inline: {html}"
    );
}

#[test]
fn health_is_the_worst_open_priority() {
    let mut p = page();
    assert_eq!(p.databases[0].health(), "CRITICAL");
    p.databases[0].failures = vec![failure(1, "LOW", "x"), failure(2, "HIGH", "y")];
    assert_eq!(p.databases[0].health(), "HIGH");
    p.databases[0].failures.clear();
    assert_eq!(p.databases[0].health(), "OK");
    assert!(render(&p).contains("<td class=\"OK\">OK</td>"));
}

#[test]
fn a_missed_target_is_marked() {
    let html = render(&page());
    assert!(html.contains("1 min 30 s (missed)"), "{html}");
    assert!(html.contains("RPO target: 1 min 00 s"), "{html}");
}

#[test]
fn durations_and_sizes_read_as_people_write_them() {
    assert_eq!(span(4.24), "4.2 s");
    assert_eq!(span(185.0), "3 min 05 s");
    assert_eq!(span(7260.0), "2 h 01 min");
    assert_eq!(span(3.0 * 86400.0 + 4.0 * 3600.0), "3 d 4 h");
    assert_eq!(bytes(512), "512 B");
    assert_eq!(bytes(3 << 20), "3.0 MiB");
}
