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
    // The stream's rate leaves out the per-object cost (`commit_seconds`), which `advise`
    // adds back once per piece; on a throttled disk that cost is mostly the throttle's own
    // waits, so the device's rate is the stream's bytes over its time with the cost put back.
    let stream = &cal["outputs"][0]["probes"][0];
    let bytes = stream["bytes"].as_f64().unwrap();
    let write = stream["bytes_per_second"].as_f64().unwrap();
    let commit = cal["outputs"][0]["commit_seconds"].as_f64().unwrap();
    let took = bytes / write + commit.min(bytes / write);
    let device_write = bytes / took;
    for (what, v) in [("read", read), ("write", device_write)] {
        assert!(
            v <= limit as f64 * 1.25 && v >= limit as f64 * 0.5,
            "{what} {v} against a throttle of {limit}: {cal}"
        );
    }
    // What the writes cost the CPU: measured, and far above the throttled rate (the writer
    // waits for the device, it does not compute).
    let write_cpu = cal["outputs"][0]["probes"][0]["cpu_bytes_per_second"]
        .as_f64()
        .unwrap();
    assert!(write_cpu > 4.0 * write, "{cal}");
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
    // Both the cluster and the repository live on this machine's one disk: calibrate says so,
    // and advise counts reads and writes as turns of the same device.
    let dev = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        let d = std::fs::metadata(p).unwrap().dev();
        format!("{}:{}", libc::major(d), libc::minor(d))
    };
    let shared = dev(&setup.repo) == dev(&c.pgdata);
    let mixed = &cal["outputs"][0]["mixed"];
    if shared {
        assert_eq!(cal["outputs"][0]["device"], input["device"], "{cal}");
        // Read and written at once: the throttle limits reads and writes each on its own, so
        // neither takes the other's share, and each side keeps most of its rate alone.
        for (what, v) in [
            ("read", &mixed["read_bytes_per_second"]),
            ("write", &mixed["write_bytes_per_second"]),
        ] {
            let v = v.as_f64().unwrap();
            assert!(
                v <= limit as f64 * 1.25 && v >= limit as f64 * 0.6,
                "{what} beside the other {v} against a throttle of {limit}: {cal}"
            );
        }
        assert!(mixed["seconds"].as_f64().unwrap() > 0.2, "{cal}");
    } else {
        assert!(mixed.is_null(), "{cal}");
    }
    let par = cal["cpu"]["parallel_cores"].as_f64().unwrap();
    let cores = cal["cpu"]["cores"].as_f64().unwrap();
    assert!(par > 0.0 && par <= cores, "{cal}");
    // What reading and checking cost the process's CPU, the reads' kernel work included.
    let rc = &input["read_and_check"];
    assert!(rc["cpu_bytes_per_second"].as_f64().unwrap() > 0.0, "{cal}");
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
    let steps = a["steps"].as_array().unwrap();
    assert_eq!(
        steps.iter().any(|s| s["step"] == "shared device"),
        shared,
        "{a}"
    );
    if shared {
        // The two directions overlap: (mixed read / read) + (mixed write / write) - 1.
        let o = (mixed["read_bytes_per_second"].as_f64().unwrap() / read
            + mixed["write_bytes_per_second"].as_f64().unwrap() / write
            - 1.0)
            .clamp(0.0, 1.0);
        assert!(o >= 0.3, "overlap {o}: {cal}");
        assert_eq!(
            step(&a, "shared device")["choice"],
            format!("overlap {o:.2}").as_str(),
            "{a}"
        );
    }
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
    // The data phase, plus each channel's piece commits at the output's per-object cost.
    let pieces = a["pieces_seconds"].as_f64().unwrap();
    let commit = cal["outputs"][0]["commit_seconds"].as_f64().unwrap();
    assert!(pieces >= commit * 0.999, "{a}");
    assert!(
        (p - total / predicted - pieces).abs() < 0.01 * p + 0.01,
        "{a}"
    );
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
    // Once the database has a backup with the codec, what its channels ran at per second of
    // their CPU time is what advise counts for it (the throttled disk still sets the choice).
    setup.ok(&["backup", "database"]);
    let again = json(&setup.ok(&["advise", "--json"]));
    assert_eq!(again["settings"]["compress"], compress, "{again}");
    let channels = step(&again, "channels");
    assert!(
        channels["because"]
            .as_str()
            .unwrap()
            .contains(&format!("recent {compress} backups' channels")),
        "{again}"
    );
    // And the prediction is held to what the model gave for that backup's data phase.
    assert_eq!(again["history_runs"], 1, "{again}");
    let k = again["history_factor"].as_f64().unwrap();
    assert!((0.5..=2.0).contains(&k), "{again}");
    assert_eq!(
        step(&again, "history")["choice"],
        format!("x{k:.2}").as_str(),
        "{again}"
    );
}

/// advise's step named `name`.
fn step<'a>(advice: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    advice["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {advice}"))
}

/// Every output a backup may go to is calibrated through the same media driver the backup
/// writes with: the repository's disk, an S3 device behind a 2 MiB/s uplink and a virtual tape
/// library whose one drive writes 4 MiB/s. Each gets write and read figures, the probe objects are
/// gone afterwards, and `advise` names the medium a backup would wait for.
#[test]
fn calibrate_probes_s3_and_tape_and_advise_names_the_slow_medium() {
    use recman_media::Media;
    use recman_media::testkit::s3_server_or_skip;
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let link = SlowLink::start(server.endpoint(), 2 << 20);
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    });
    // Random bytes (no codec shrinks them much), so that compression cannot hide the media.
    setup.cluster.psql(&format!(
        "create table r as select g, decode({}, 'hex') as b from generate_series(1, 60000) g",
        vec!["md5(random()::text)"; 16].join(" || ")
    ));
    setup.cluster.psql("checkpoint");
    let (_dir, scratch) = new_scratch_dir();
    let cfg = scratch.join("s3.toml");
    std::fs::write(
        &cfg,
        format!(
            "[s3]\nendpoint = \"{}\"\nregion = \"us-east-1\"\naccess-key-id = \"{}\"\nsecret-access-key = \"{}\"\n",
            link.endpoint(),
            server.access_key(),
            server.secret_key()
        ),
    )
    .unwrap();
    chown_to_cluster_user(&cfg);
    let lib = scratch.join("lib");
    let run = |args: &[&str]| -> String {
        let mut v: Vec<String> = vec!["--config".into(), path_str(&cfg).into()];
        v.extend(setup.args(args));
        recman_ok(v)
    };
    run(&[
        "configure",
        "device-type",
        "s3",
        "parms",
        &format!("s3://{}/cal", server.bucket()),
    ]);
    run(&[
        "configure",
        "device-type",
        "sbt",
        "parms",
        &format!("vtape:{},drives=1,rate=4M", path_str(&lib)),
    ]);
    let cal = json(&run(&["calibrate", "--json"]));
    let outputs = cal["outputs"].as_array().unwrap();
    let by_type = |t: &str| -> &serde_json::Value {
        outputs
            .iter()
            .find(|o| o["device_type"] == t)
            .unwrap_or_else(|| panic!("no {t} output: {cal}"))
    };
    let pos = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
    for t in ["disk", "s3", "sbt"] {
        let o = by_type(t);
        eprintln!("{t}: {o}");
        assert!(
            o["probes"].as_array().unwrap().len() == 2
                && o["probes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|p| pos(&p["bytes_per_second"])),
            "{o}"
        );
        let objects = o["objects"].as_array().unwrap();
        assert_eq!(objects.len(), 3, "{o}");
        for p in objects {
            for k in ["write_bytes_per_second", "read_bytes_per_second"] {
                assert!(pos(&p[k]), "{k}: {o}");
            }
        }
        for k in [
            "write_latency_seconds",
            "read_latency_seconds",
            "read_bytes_per_second",
        ] {
            assert!(pos(&o[k]), "{k}: {o}");
        }
    }
    assert_eq!(by_type("s3")["kind"], "s3");
    assert_eq!(by_type("sbt")["kind"], "vtape");
    // The slow media measured slow: one stream cannot beat its link or its drive by much.
    for (t, limit) in [("s3", 2u64 << 20), ("sbt", 4 << 20)] {
        let one = by_type(t)["probes"][0]["bytes_per_second"]
            .as_f64()
            .unwrap();
        assert!(one < 1.5 * limit as f64, "{t}: {one}");
    }
    // No probe object is left on any of them.
    let bucket = files_under(&server.data_dir());
    assert!(
        !bucket
            .iter()
            .any(|p| p.to_string_lossy().contains("calibrate")),
        "{bucket:?}"
    );
    let repo = files_under(&setup.repo);
    assert!(
        !repo
            .iter()
            .any(|p| p.to_string_lossy().contains("calibrate")),
        "{repo:?}"
    );
    let tape = recman_media::vtape::VtapeMedia::open(&lib).unwrap();
    assert_eq!(tape.list("").unwrap(), vec![], "objects left on the tape");

    // advise plans for the device a backup writes to, and names the medium it would wait for.
    run(&["configure", "default-device-type", "s3"]);
    let a = json(&run(&["advise", "--json"]));
    eprintln!("advice for s3: {a}");
    assert_eq!(a["bottleneck"], "network", "{a}");
    assert!(
        a["bottleneck_device"]
            .as_str()
            .unwrap()
            .starts_with("s3://"),
        "{a}"
    );
    run(&["configure", "default-device-type", "sbt"]);
    let a = json(&run(&["advise", "--json"]));
    eprintln!("advice for tape: {a}");
    assert_eq!(a["bottleneck"], "output", "{a}");
    assert!(
        a["bottleneck_device"]
            .as_str()
            .unwrap()
            .starts_with("vtape"),
        "{a}"
    );
    assert!(
        a["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["step"] == "blksize"),
        "{a}"
    );
    // Predicted no faster than the slowest calibrated tape stream allows for this data.
    let tape_rate = by_type("sbt")["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bytes_per_second"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        a["predicted_bytes_per_second"].as_f64().unwrap() < 2.0 * tape_rate,
        "{a}"
    );
}
