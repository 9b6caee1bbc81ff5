//! Issue 15: RMAN's DURATION. MINIMIZE LOAD spreads a short backup over its window (shown by
//! the per-second samples and the pacer's waits, not only by the clock); MINIMIZE TIME fails
//! cleanly at the window's end; PARTIAL keeps the finished files as a backup that restore
//! never starts from, and `--not-backed-up-since` completes it into a chain that restores
//! equal to the source.

mod common;
mod flows;

use common::*;
use flows::*;

fn report(setup: &Setup, id: &str) -> serde_json::Value {
    serde_json::from_str(&setup.ok(&["report", "io", id, "--json"])).unwrap()
}

#[test]
fn minimize_load_spreads_the_backup_over_the_window() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(10);
    // Two channels share the one schedule.
    let id = setup.backup(&[
        "--duration",
        "0:00:20",
        "--minimize-load",
        "--channels",
        "2",
        "--tag",
        "LOAD",
    ]);

    let r = report(&setup, &id);
    let samples = r["samples"].as_array().unwrap();
    let read: Vec<u64> = samples
        .iter()
        .map(|s| s["bytes_read"].as_u64().unwrap())
        .collect();
    let total: u64 = read.iter().sum();
    let busy = read.iter().filter(|b| **b > 0).count();
    // The job's own clock, not the test's: the pacer spreads the reads to the window's end, so
    // reads still arrive in its last seconds (an unpaced backup of this size reads in 1-2 s).
    let last = samples
        .iter()
        .filter(|s| s["bytes_read"].as_u64().unwrap() > 0)
        .map(|s| s["second"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(
        last >= 16,
        "the last read came at second {last} of a 20 s window"
    );
    let peak = *read.iter().max().unwrap();
    eprintln!(
        "{} samples, {busy} seconds with reads, peak {peak} of {total} bytes",
        samples.len()
    );
    assert!(
        total > 100 << 20,
        "the samples hold the bytes read: {total}"
    );
    assert!(busy >= 15, "reads spread over only {busy} seconds");
    assert!(
        peak * 5 < total,
        "one second read {peak} of {total} bytes: not spread"
    );
    let tuning = r["tuning"].as_array().unwrap();
    assert!(
        tuning.iter().any(|e| e["setting"] == "rate"),
        "no rate recorded: {tuning:?}"
    );
    let waits: u64 = tuning
        .iter()
        .find(|e| e["setting"] == "throttle")
        .and_then(|e| e["new_value"].as_str())
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("the pacer's waits are recorded");
    assert!(waits > 10, "the channels were held back only {waits} times");

    // The plot: valid SVG, a read and a write line for each channel.
    let (_k, dir) = new_scratch_dir();
    let (svg, html) = (dir.join("io.svg"), dir.join("io.html"));
    setup.ok(&[
        "report",
        "io",
        "LOAD",
        "--plot",
        path_str(&svg),
        "--html",
        path_str(&html),
    ]);
    let lines = polylines(&std::fs::read_to_string(&svg).unwrap());
    for ch in ["1", "2"] {
        for dir in ["read", "written"] {
            let n = lines
                .iter()
                .find(|(c, d, _)| c == ch && d == dir)
                .map(|l| l.2)
                .unwrap_or_else(|| panic!("no {dir} line for channel {ch}: {lines:?}"));
            assert!(n >= 10, "channel {ch} {dir}: {n} points");
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("DURATION 0:00:20 MINIMIZE LOAD"));
    let text = setup.ok(&["report", "io", "LOAD"]);
    assert!(text.contains("settings changed while it ran"), "{text}");
}

/// The SVG's polylines as (channel, direction, points), parsed by an XML parser: a document
/// that is not well-formed fails here.
fn polylines(svg: &str) -> Vec<(String, String, usize)> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(svg);
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut root = None;
    loop {
        match r
            .read_event()
            .unwrap_or_else(|e| panic!("invalid svg: {e}\n{svg}"))
        {
            Event::Eof => break,
            Event::Start(e) => {
                depth += 1;
                root.get_or_insert_with(|| String::from_utf8_lossy(e.name().as_ref()).to_string());
            }
            Event::End(_) => depth -= 1,
            Event::Empty(e) if e.name().as_ref() == b"polyline" => {
                let attr = |k: &str| {
                    e.try_get_attribute(k)
                        .unwrap()
                        .map(|a| String::from_utf8_lossy(&a.value).to_string())
                        .unwrap_or_default()
                };
                let points = attr("points").split_whitespace().count();
                out.push((attr("data-channel"), attr("data-direction"), points));
            }
            _ => {}
        }
    }
    assert_eq!(depth, 0, "unbalanced svg");
    assert_eq!(root.as_deref(), Some("svg"));
    out
}

#[test]
fn partial_backup_is_completed_by_a_later_run_and_restores_equal() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(2);
    // MINIMIZE TIME without PARTIAL: the window's end fails the backup and leaves nothing.
    let e = setup.err(&[
        "backup",
        "database",
        "--duration",
        "0:00:02",
        "--rate",
        "8M",
    ]);
    assert!(e.contains("did not finish within DURATION 0:00:02"), "{e}");
    assert!(
        e.contains("recman advise --window 0:00:02"),
        "the hint names the advisor: {e}"
    );
    let list = setup.backups();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["status"], "FAILED");
    let dir = setup.repo.clone();
    let left: Vec<_> = walk(&dir)
        .into_iter()
        .filter(|p| {
            p.to_string_lossy()
                .contains(list[0]["id"].as_str().unwrap())
        })
        .collect();
    assert!(left.is_empty(), "a failed backup left {left:?}");

    let since = c.psql("select clock_timestamp()::text");
    let partial = setup.backup(&[
        "--duration",
        "0:00:05",
        "--partial",
        "--rate",
        "8M",
        "--filesperset",
        "1",
        "--tag",
        "PART",
    ]);
    let list = setup.backups();
    let p = list.iter().find(|b| b["id"] == partial).unwrap();
    assert_eq!(p["type"], "PARTIAL", "{p}");
    assert_eq!(p["status"], "AVAILABLE");
    let files = p["files"].as_u64().unwrap();
    eprintln!("partial backup holds {files} files");
    assert!(files > 0, "nothing finished in the window");
    // Never a base by itself.
    let (_k, scratch) = new_scratch_dir();
    let e = setup.err(&["restore", "database", "--to", path_str(&scratch.join("r"))]);
    assert!(e.contains("no available backup"), "{e}");

    let mut b = c.pgbench_background(2, 2);
    assert!(b.wait().unwrap().success());
    let done = setup.backup(&["--not-backed-up-since", &since, "--tag", "REST"]);
    let list = setup.backups();
    let d = list.iter().find(|b| b["id"] == done).unwrap();
    assert_eq!(d["type"], "LEVEL1", "{d}");
    assert_eq!(d["parent"], partial.as_str());
    assert!(
        d["files"].as_u64().unwrap() > files,
        "the completing backup names every file"
    );
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_k2, to) = setup.restore(&[]);
    drop(start_and_compare(&to, &expected));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
    }
    out
}
