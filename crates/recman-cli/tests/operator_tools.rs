//! Issue 19, the operator's tools: `recman metrics` (Prometheus text, parsed as Prometheus
//! does), `--progress json` events, shell completions and the man page.

mod common;
mod flows;

use common::*;
use flows::*;
use std::collections::HashMap;

/// The JSON events of a command's stderr, checked to be nothing but JSON, with the bytes of
/// the progress events never going down and the last event a `done` that reached the total.
fn events(stderr: &[u8], op: &str) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(stderr);
    let evs: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not json ({e}): {l}\n{text}")))
        .collect();
    let runs: Vec<&serde_json::Value> = evs.iter().filter(|e| e["operation"] == op).collect();
    assert!(
        runs.first().is_some_and(|e| e["event"] == "start"),
        "{op}: no start event first:\n{text}"
    );
    let done = runs.last().unwrap();
    assert_eq!(done["event"], "done", "{op}:\n{text}");
    let mut last = 0;
    for e in &runs {
        let b = e["bytes"].as_u64().unwrap();
        assert!(
            b >= last,
            "{op}: bytes went down from {last} to {b}:\n{text}"
        );
        last = b;
        let per_channel: u64 = e["channels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(per_channel, b, "{op}: channels do not add up: {e}");
    }
    let total = done["total_bytes"].as_u64().unwrap();
    assert!(
        total > 0 && done["bytes"].as_u64().unwrap() >= total,
        "{op}: the done event did not reach the total: {done}"
    );
    assert_eq!(done["eta_secs"], 0.0, "{done}");
    evs
}

#[test]
fn metrics_and_json_progress_after_real_backups() {
    let s = Setup::new();
    let c = &s.cluster;
    c.pgbench_init(1);

    // A two-channel backup with --progress json: stderr holds only events, per channel.
    let out = recman(s.args(&[
        "--progress",
        "json",
        "backup",
        "database",
        "--channels",
        "2",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evs = events(&out.stderr, "backup");
    let done = evs.iter().rev().find(|e| e["event"] == "done").unwrap();
    let channels: Vec<u64> = done["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["channel"].as_u64().unwrap())
        .collect();
    assert!(channels.contains(&1) && channels.contains(&2), "{done}");

    let segment = c.switch_wal_and_wait_archived();
    s.ok(&["backup", "archivelog", "all"]);
    let out = recman(s.args(&["--progress", "json", "validate", "database"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    events(&out.stderr, "validate");
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let out = recman(s.args(&[
        "--progress",
        "json",
        "restore",
        "database",
        "--to",
        path_str(&to),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    events(&out.stderr, "restore");

    let text = s.ok(&["metrics"]);
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("prometheus text");
    let mut got: HashMap<String, f64> = HashMap::new();
    for sample in &scrape.samples {
        let prometheus_parse::Value::Gauge(v) = sample.value else {
            panic!("{} is not a gauge", sample.metric);
        };
        let mut labels: Vec<String> = sample
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        labels.sort();
        got.insert(format!("{}{{{}}}", sample.metric, labels.join(",")), v);
    }
    let get = |k: &str| *got.get(k).unwrap_or_else(|| panic!("no {k} in:\n{text}"));
    for t in ["full", "archivelog"] {
        let l = format!("database=main,type={t}");
        let age = get(&format!("recman_backup_last_success_age_seconds{{{l}}}"));
        assert!((0.0..600.0).contains(&age), "{t} age {age}");
        assert!(
            get(&format!("recman_backup_last_size_bytes{{{l}}}")) > 0.0,
            "{t}"
        );
        assert!(get(&format!("recman_backup_last_duration_seconds{{{l}}}")) >= 0.0);
        assert!(get(&format!("recman_backup_last_speed_bytes_per_second{{{l}}}")) >= 0.0);
        assert_eq!(
            get(&format!("recman_backup_last_corrupt_blocks{{{l}}}")),
            0.0
        );
        let when = get(&format!(
            "recman_backup_last_success_timestamp_seconds{{{l}}}"
        ));
        assert!(when > 1.7e9, "{t} finished at {when}");
    }
    // A pgbench database of scale 1 is over 20 MB; the backup read all of it.
    assert!(get("recman_backup_last_input_bytes{database=main,type=full}") > 20e6);
    assert_eq!(get("recman_backups{database=main,status=AVAILABLE}"), 2.0);
    assert_eq!(get("recman_corrupt_blocks{database=main}"), 0.0);
    assert!(get("recman_repository_backup_bytes{database=main}") > 1e6);
    assert!(get("recman_repository_wal_bytes{database=main}") > 0.0);
    let lag = get("recman_wal_archive_lag_seconds{database=main}");
    assert!((0.0..600.0).contains(&lag), "lag {lag}");
    // The segment switched above, or a later one (backup archivelog switches WAL too).
    let newest: Vec<&String> = got
        .keys()
        .filter(|k| k.starts_with("recman_wal_last_archived_segment_info{database=main,segment="))
        .collect();
    assert_eq!(newest.len(), 1, "{text}");
    let named = newest[0].rsplit('=').next().unwrap().trim_end_matches('}');
    assert!(
        named.len() == 24 && named >= segment.as_str(),
        "{named} < {segment}"
    );
    // The last job with I/O statistics is the restore, which read and wrote.
    assert!(
        got.keys()
            .any(|k| k.starts_with("recman_last_job_info{") && k.contains("type=restore")),
        "{text}"
    );
    assert!(get("recman_last_job_bytes{direction=output,type=restore}") > 20e6);
    assert!(get("recman_last_job_rate_bytes_per_second{direction=output,type=restore}") > 0.0);
}

#[test]
fn completion_scripts_and_the_man_page() {
    let bash = recman_ok(["completions", "bash"]);
    for sub in ["backup", "restore", "validate", "metrics"] {
        assert!(
            bash.split_whitespace()
                .any(|w| w == sub || w.contains(&format!("__{sub}"))),
            "bash completion lacks {sub}"
        );
    }
    assert!(bash.contains("complete -F"), "{bash}");
    for shell in ["zsh", "fish"] {
        let s = recman_ok(["completions", shell]);
        assert!(
            s.contains("backup") && s.contains("restore"),
            "{shell}: {s}"
        );
    }
    let man = recman_ok(["man"]);
    assert!(man.contains(".TH recman"), "{man}");
    // Rendered by man itself when the host has it.
    if std::path::Path::new("/usr/bin/man").exists() {
        let (_t, dir) = new_scratch_dir();
        let page = dir.join("recman.1");
        std::fs::write(&page, &man).unwrap();
        let out = std::process::Command::new("man")
            .args(["-l", "-P", "cat"])
            .arg(&page)
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && shown.contains("backup") && shown.contains("SYNOPSIS"),
            "{shown}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
