//! Issue 15: `calibrate` measures the devices a backup meets, `list calibration` shows the
//! stored measurements, and `advise` walks the seeds' steps from them. The devices are made
//! slow by the kernel's block-I/O throttle, so the figures have a known ceiling to meet.

mod common;
mod flows;
mod tuning;

use common::*;
use flows::*;
use tuning::*;

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn in_group(g: &Blkio, args: Vec<String>) -> String {
    let out = g.recman(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn calibrate_meets_the_throttle_and_advise_compresses_for_a_slow_output() {
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    });
    let c = &setup.cluster;
    c.psql(
        "create table t as select g, repeat(md5(g::text), 4) as pad \
         from generate_series(1, 150000) g",
    );
    c.psql("checkpoint");
    let disk = disk_of(&c.pgdata);
    // Reads and writes of the disk at 12 MB/s: direct reads and writes cannot beat it by more
    // than the throttle's first time slice lets through (a probe lasts about a second), and do
    // not fall far below it.
    let limit = 12u64 << 20;
    let Some(g) = Blkio::new(&disk, Some(limit), Some(limit)) else {
        return;
    };
    let cal = json(&in_group(&g, setup.args(&["calibrate", "--json"])));
    drop(g);
    eprintln!("calibration: {cal}");
    let input = &cal["inputs"][0];
    let read = input["best_bytes_per_second"].as_f64().unwrap();
    let write = cal["outputs"][0]["probes"][0]["bytes_per_second"]
        .as_f64()
        .unwrap();
    for (what, v) in [("read", read), ("write", write)] {
        assert!(
            v <= limit as f64 * 1.25 && v >= limit as f64 * 0.5,
            "{what} {v} against a throttle of {limit}: {cal}"
        );
    }
    assert!(cal["cpu"]["sample_bytes"].as_u64().unwrap() > 0, "{cal}");
    let lz4 = cal["cpu"]["codecs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["compression"] == "lz4")
        .unwrap();
    assert!(
        lz4["ratio"].as_f64().unwrap() < 0.9,
        "md5 text compresses: {lz4}"
    );
    let f = cal["page_cache"]["fraction"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&f), "{cal}");
    // Stored with its date.
    let list = json(&setup.ok(&["list", "calibration", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["calibration"], cal);
    assert!(setup.ok(&["list", "calibration"]).contains("read"));

    // Writes as slow as reads, lz4 cheap and halving the bytes: compress, and the output is
    // what limits.
    let a = json(&setup.ok(&["advise", "--json", "--window", "0:00:01"]));
    eprintln!("advice: {a}");
    assert_ne!(a["settings"]["compress"], "none", "{a}");
    assert!(a["settings"]["channels"].as_u64().unwrap() >= 1, "{a}");
    // The prediction is bounded by what was measured: the disk's reads, or the page cache's
    // when advise reads through it.
    let buffered = input["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["direct"] == false)
        .map(|p| p["bytes_per_second"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let ceiling = if a["settings"]["direct_reads"] == true {
        read
    } else {
        buffered
    };
    let predicted = a["predicted_bytes_per_second"].as_f64().unwrap();
    assert!(predicted > 0.0 && predicted <= ceiling * 1.01, "{a}");
    let p = a["predicted_seconds"].as_f64().unwrap();
    let total = cal["total_bytes"].as_f64().unwrap();
    // No backup yet: no start and stop costs learned, the data phase alone.
    assert_eq!(a["fixed_seconds"].as_f64(), Some(0.0), "{a}");
    assert!((p - total / predicted).abs() < 0.01 * p + 0.01, "{a}");
    // The window's verdict follows the prediction, and a miss says what would fit.
    let fits = p <= 1.0;
    assert_eq!(a["window"]["fits"], fits, "{a}");
    assert_eq!(
        a["window"]["suggestions"].as_array().unwrap().is_empty(),
        fits,
        "{a}"
    );
    // --apply stores what CONFIGURE stores.
    setup.ok(&["advise", "--apply"]);
    let shown = setup.ok(&["show", "all"]);
    let compress = a["settings"]["compress"].as_str().unwrap();
    assert!(
        shown
            .lines()
            .any(|l| l.contains("compression") && l.contains(compress)),
        "{shown}"
    );
}
