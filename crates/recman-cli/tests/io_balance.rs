//! Issue 3 acceptance: the statistics point at a slow input file; RATE holds the throughput;
//! SECTION SIZE keeps every channel busy until the end and restores correctly.

mod common;
mod flows;

use common::*;
use flows::*;

fn report(setup: &Setup, which: &str) -> serde_json::Value {
    serde_json::from_str(&setup.ok(&["report", "io", which, "--json"])).unwrap()
}

#[test]
fn statistics_and_diagnosis_name_the_slow_input_file() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table fast_a as select g, md5(g::text) from generate_series(1, 60000) g");
    c.psql("create table slow_one as select g, md5(g::text) from generate_series(1, 60000) g");
    c.psql("create table fast_b as select g, md5(g::text) from generate_series(1, 60000) g");
    c.psql("checkpoint");
    let slow = c.psql("select pg_relation_filepath('slow_one')");
    for mode in ["threads", "uring"] {
        let tag = format!("SLOW_{mode}");
        let out = recman_env(
            setup.args(&[
                "backup",
                "database",
                "--io",
                mode,
                "--maxopenfiles",
                "4",
                "--input-buffer-size",
                "64K",
                "--tag",
                &tag,
            ]),
            &[("RECMAN_FAULT_SLOW_READ", &format!("{slow}:40"))],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = report(&setup, &tag);
        let rows = r["rows"].as_array().unwrap();
        let share = |row: &serde_json::Value| {
            row["long_waits"].as_f64().unwrap() / row["io_count"].as_f64().unwrap().max(1.0)
        };
        let inputs: Vec<&serde_json::Value> =
            rows.iter().filter(|x| x["kind"] == "INPUT").collect();
        // Ranked among files read in at least 4 requests, as `report io` does.
        let sampled: Vec<&&serde_json::Value> = inputs
            .iter()
            .filter(|x| x["io_count"].as_u64().unwrap() >= 4)
            .collect();
        let this = inputs
            .iter()
            .find(|x| x["filename"] == slow.as_str())
            .expect("a row for the slow file");
        // Its LONG_WAITS/IO_COUNT is the largest, and it made the channel wait longest by far.
        assert!(
            sampled.iter().all(|x| share(x) <= share(this)),
            "{mode}: {this}"
        );
        assert!(
            share(this) > 0.9 && this["io_count"].as_u64().unwrap() > 4,
            "{mode}: {this}"
        );
        let waited = |x: &serde_json::Value| x["long_wait_time"].as_u64().unwrap();
        let others = inputs
            .iter()
            .filter(|x| x["filename"] != slow.as_str())
            .map(|x| waited(x))
            .max()
            .unwrap();
        assert!(
            waited(this) > 10 * others,
            "{mode}: {this}, others waited at most {others}us"
        );
        let diag: Vec<String> = r["diagnosis"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_string())
            .collect();
        assert!(
            diag.iter().any(|d| d.starts_with("bottleneck: input")),
            "{diag:?}"
        );
        assert!(
            diag.iter()
                .any(|d| d.starts_with("slowest input") && d.contains(&slow)),
            "{diag:?}"
        );
        // The table view shows the same.
        let text = setup.ok(&["report", "io", &tag]);
        assert!(
            text.contains("slowest input") && text.contains(&slow),
            "{text}"
        );
    }
}

#[test]
fn rate_holds_and_sections_keep_every_channel_busy() {
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    });
    let c = &setup.cluster;
    // About 200 MiB in one table: the warehouse of the seeds in miniature.
    c.psql("create table big as select g, repeat(md5(g::text), 6) as pad from generate_series(1, 900000) g");
    c.psql("checkpoint");
    let big_bytes: u64 = c.psql("select pg_relation_size('big')").parse().unwrap();
    assert!(big_bytes > 150 << 20, "{big_bytes}");

    // RATE: one channel at 7 MiB/s for at least 30 s.
    setup.backup(&["--rate", "7M", "--tag", "RATED"]);
    let r = report(&setup, "RATED");
    let agg = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "AGGREGATE")
        .unwrap()
        .clone();
    let secs =
        (agg["close_time"].as_i64().unwrap() - agg["open_time"].as_i64().unwrap()) as f64 / 1e6;
    let rate = agg["bytes"].as_f64().unwrap() / secs;
    let limit = 7.0 * 1024.0 * 1024.0;
    assert!(secs >= 30.0, "the rated backup took only {secs:.1}s");
    assert!(
        (rate - limit).abs() <= 0.10 * limit,
        "rate {:.2} MiB/s against a limit of 7 MiB/s",
        rate / 1048576.0
    );

    // SECTION SIZE: three channels over one big table end together.
    setup.backup(&[
        "--channels",
        "3",
        "--section-size",
        "16M",
        "--rate",
        "20M",
        "--tag",
        "SECTIONS",
    ]);
    let r = report(&setup, "SECTIONS");
    let rows = r["rows"].as_array().unwrap();
    let aggs: Vec<&serde_json::Value> = rows.iter().filter(|x| x["kind"] == "AGGREGATE").collect();
    assert_eq!(aggs.len(), 3);
    let open = aggs
        .iter()
        .map(|a| a["open_time"].as_i64().unwrap())
        .min()
        .unwrap();
    let closes: Vec<i64> = aggs
        .iter()
        .map(|a| a["close_time"].as_i64().unwrap())
        .collect();
    let (first, last) = (*closes.iter().min().unwrap(), *closes.iter().max().unwrap());
    let elapsed = (last - open) as f64;

    assert!(
        ((last - first) as f64) <= 0.05 * elapsed,
        "channels ended {:.2}s apart in {:.2}s",
        (last - first) as f64 / 1e6,
        elapsed / 1e6
    );
    // Every channel wrote sections of the big table.
    let rel = c.psql("select pg_relation_filepath('big')");
    for ch in 1..=3 {
        assert!(
            rows.iter().any(|x| x["kind"] == "INPUT"
                && x["channel"] == ch
                && x["filename"] == rel.as_str()),
            "channel {ch} took no section"
        );
    }
    setup.ok(&["validate", "backup", "SECTIONS"]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_k, to) = setup.restore(&["--from-tag", "SECTIONS", "--channels", "3"]);
    drop(start_and_compare(&to, &expected));
}
