//! Issue 15, acceptance 1: `report io --json` names what really limited a backup, under real
//! bottlenecks: the kernel's block-I/O throttle on the disk holding the cluster (slow input)
//! or the repository (slow output), a high zstd level (cpu), RATE (rate), and a slow uplink
//! to S3 (network). No assertion depends on this machine's speed: each throttle makes its
//! side the slowest by a wide margin.

mod common;
mod flows;
mod tuning;

use common::*;
use flows::*;
use tuning::*;

fn job(setup_report: &str) -> serde_json::Value {
    let r: serde_json::Value = serde_json::from_str(setup_report).unwrap();
    let j = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_type"] == "BACKUP")
        .cloned()
        .expect("the backup's job");
    assert_eq!(r["bottleneck"], j["bottleneck"], "{r}");
    j
}

fn bottleneck_of(setup: &Setup, tag: &str) -> (String, serde_json::Value) {
    let j = job(&setup.ok(&["report", "io", tag, "--json"]));
    let b = j["bottleneck"].as_str().unwrap_or_default().to_string();
    eprintln!("{tag}: {b}: {}", j["figures"]);
    (b, j)
}

/// About 30 MB of table data that compresses (md5 text), checkpointed to disk.
fn fill(c: &Cluster) {
    for t in 0..2 {
        c.psql(&format!(
            "create table t{t} as select g, repeat(md5(g::text), 4) as pad \
             from generate_series(1, 100000) g"
        ));
    }
    c.psql("checkpoint");
}

fn backup_in(setup: &Setup, g: Option<&Blkio>, tag: &str, extra: &[&str]) {
    let mut a = vec!["backup", "database", "--tag", tag];
    a.extend_from_slice(extra);
    let args = setup.args(&a);
    let out = match g {
        Some(g) => g.recman(&args),
        None => recman(&args),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn real_bottlenecks_are_named_right() {
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    });
    fill(&setup.cluster);
    let disk = disk_of(&setup.cluster.pgdata);
    assert_eq!(
        disk,
        disk_of(&setup.repo),
        "the test throttles one disk for reads or writes; the cluster and the repository share it"
    );
    // Slow input: reads of the disk at 8 MB/s; writes free. The files are read from the
    // disk, not from the page cache, which a backup would read them through.
    let Some(g) = Blkio::new(&disk, Some(8 << 20), None) else {
        return;
    };
    common::fixtures::evict_from_page_cache(&setup.cluster.pgdata);
    backup_in(&setup, Some(&g), "SLOW_IN", &["--compress", "none"]);
    drop(g);
    let (b, j) = bottleneck_of(&setup, "SLOW_IN");
    assert_eq!(b, "input", "{j}");
    assert!(j["diagnosis"].to_string().contains("what to change"), "{j}");

    // Slow output: writes at 8 MB/s; reads free.
    let g = Blkio::new(&disk, None, Some(8 << 20)).unwrap();
    backup_in(&setup, Some(&g), "SLOW_OUT", &["--compress", "none"]);
    drop(g);
    let (b, j) = bottleneck_of(&setup, "SLOW_OUT");
    assert_eq!(b, "output", "{j}");
    // The piece writers waited for the throttled device, not for a CPU: their CPU takes
    // little of the channels' waits for them.
    let split = &j["figures"]["split"];
    let (waits, writers_cpu) = (
        split["output_wait_seconds"].as_f64().unwrap(),
        split["output_cpu_seconds"].as_f64().unwrap(),
    );
    assert!(writers_cpu < 0.25 * waits, "{j}");

    // RATE: 4 MB/s per channel, far below what the disk gives.
    backup_in(
        &setup,
        None,
        "RATED",
        &["--compress", "none", "--rate", "4M"],
    );
    let (b, j) = bottleneck_of(&setup, "RATED");
    assert_eq!(b, "rate", "{j}");
    assert!(
        j["figures"]["split"]["rate_seconds"].as_f64().unwrap() > 1.0,
        "{j}"
    );

    // CPU: a high zstd level, nothing throttled.
    backup_in(&setup, None, "ZSTD", &["--compress", "zstd:12"]);
    let (b, j) = bottleneck_of(&setup, "ZSTD");
    assert_eq!(b, "cpu", "{j}");
    assert!(
        j["figures"]["split"]["cpu_measured"].as_bool().unwrap(),
        "{j}"
    );
}

/// Network: a repository on S3 reached through a 3 MB/s uplink; WAL archiving goes around it.
#[test]
fn a_slow_uplink_to_s3_is_named_network() {
    use recman_media::testkit::s3_server_or_skip;
    let Some(server) = s3_server_or_skip() else {
        return;
    };
    let link = SlowLink::start(server.endpoint(), 3 << 20);
    let (_dir, path) = new_scratch_dir();
    let config = |name: &str, endpoint: &str| {
        let p = path.join(name);
        std::fs::write(
            &p,
            format!(
                "[s3]\nendpoint = \"{endpoint}\"\nregion = \"us-east-1\"\naccess-key-id = \"{}\"\nsecret-access-key = \"{}\"\npart-size = \"5M\"\n",
                server.access_key(),
                server.secret_key()
            ),
        )
        .unwrap();
        chown_to_cluster_user(&p);
        p
    };
    let fast = config("fast.toml", server.endpoint());
    let slow = config("slow.toml", &link.endpoint());
    let url = format!("s3://{}/net", server.bucket());
    let cache = path.join("cache");
    let base = |cfg: &std::path::Path| -> Vec<String> {
        vec![
            "--config".into(),
            path_str(cfg).into(),
            "--repo".into(),
            url.clone(),
            "--repo-cache".into(),
            path_str(&cache).into(),
        ]
    };
    let mut a = base(&fast);
    a.extend(["create".into(), "catalog".into()]);
    recman_ok(a);
    let archive = object_store_archive_command(&url, &fast, &cache);
    let cluster = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!("archive_command = {archive}"),
        ],
        ..Default::default()
    });
    let with = |cfg: &std::path::Path, rest: &[&str]| -> Vec<String> {
        let mut v = base(cfg);
        v.extend([
            "--pgdata".into(),
            path_str(&cluster.pgdata).into(),
            "--target".into(),
            cluster.conninfo(),
        ]);
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    recman_ok(with(&fast, &["register", "database", "--name", "main"]));
    recman_ok(with(
        &slow,
        &["backup", "database", "--tag", "NET", "--compress", "none"],
    ));
    let j = job(&recman_ok(with(&fast, &["report", "io", "NET", "--json"])));
    eprintln!("NET: {}", j["figures"]);
    assert_eq!(j["bottleneck"], "network", "{j}");
    assert_eq!(j["figures"]["device"], "s3", "{j}");
}
