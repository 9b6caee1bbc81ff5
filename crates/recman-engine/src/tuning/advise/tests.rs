use super::super::calibrate::*;
use super::*;
use crate::tuning::read_check::{ReadAndCheck, ThreadsRate, combined};
use crate::tuning::shared_probe::MixedProbe;

fn cal(read: u64, write: u64, lz4: u64) -> Calibration {
    Calibration {
        taken_at: 0,
        pgdata: "/x".into(),
        total_bytes: 10_000_000_000,
        inputs: vec![InputDevice {
            device: "8:0".into(),
            bytes: 10_000_000_000,
            files: 10,
            largest_file: 1 << 30,
            probes: vec![ReadProbe {
                request_size: 1 << 20,
                queue_depth: 1,
                direct: true,
                bytes: 1,
                bytes_per_second: read,
            }],
            best_bytes_per_second: read,
            best_request_size: 1 << 20,
            best_queue_depth: 1,
            read_and_check: None,
        }],
        outputs: vec![OutputDevice {
            kind: "disk".into(),
            describe: "disk /r".into(),
            probes: vec![WriteProbe {
                streams: 1,
                bytes: 1,
                bytes_per_second: write,
                cpu_bytes_per_second: 0,
            }],
            ..Default::default()
        }],
        cpu: CpuRates {
            cores: 4,
            sample_bytes: 1,
            check_bytes_per_second: 2_000_000_000,
            codecs: vec![
                CodecRate {
                    compression: "none".into(),
                    bytes_per_second: u64::MAX,
                    ratio: 1.0,
                },
                CodecRate {
                    compression: "lz4".into(),
                    bytes_per_second: lz4,
                    ratio: 0.4,
                },
            ],
            parallel_cores: 0.0,
            cpu_limit: None,
            learned: Default::default(),
        },
        page_cache: PageCache {
            bytes: 1,
            resident_bytes: 0,
            fraction: 0.0,
        },
        io_uring: true,
    }
}

#[test]
fn a_slow_output_gets_compression_and_a_fast_one_none() {
    // Output at a third of the read rate, lz4 cheap: compress, output no longer limits.
    let a = advise(&cal(300_000_000, 100_000_000, 1_000_000_000), None, false);
    assert_eq!(a.settings.compress, "lz4");
    assert_eq!(a.bottleneck, Bottleneck::Output);
    // Output faster than the disks: nothing to gain from compression, one channel.
    let a = advise(&cal(300_000_000, 900_000_000, 1_000_000_000), None, false);
    assert_eq!(a.settings.compress, "none");
    assert_eq!(a.settings.channels, 1);
    assert_eq!(a.bottleneck, Bottleneck::Input);
    assert!((a.predicted_seconds - 10e9 / 3e8).abs() < 1.0);
}

#[test]
fn a_window_too_short_says_what_would_fit() {
    let a = advise(
        &cal(100_000_000, 900_000_000, 1_000_000_000),
        Some(60.0),
        false,
    );
    let w = a.window.unwrap();
    assert!(!w.fits);
    assert!(w.suggestions.iter().any(|s| s.contains("level 1")));
    let a = advise(
        &cal(100_000_000, 900_000_000, 1_000_000_000),
        Some(1e6),
        false,
    );
    assert!(a.window.unwrap().fits);
}

#[test]
fn the_bottleneck_names_the_medium_and_an_object_store_is_the_network() {
    // A slow output: the medium that limits is named.
    let mut c = cal(300_000_000, 10_000_000, 1_000_000_000);
    let a = advise(&c, None, false);
    assert_eq!(
        (a.bottleneck, a.bottleneck_device.as_str()),
        (Bottleneck::Output, "disk /r")
    );
    // The same figure from an S3 store: the network, as `report io` names it.
    c.outputs[0].kind = "s3".into();
    c.outputs[0].describe = "s3://b/p".into();
    let a = advise(&c, None, false);
    assert_eq!(
        (a.bottleneck, a.bottleneck_device.as_str()),
        (Bottleneck::Network, "s3://b/p")
    );
    // A fast medium: the input device is named instead.
    let a = advise(&cal(300_000_000, 900_000_000, 1_000_000_000), None, false);
    assert_eq!(
        (a.bottleneck, a.bottleneck_device.as_str()),
        (Bottleneck::Input, "8:0")
    );
}

#[test]
fn an_output_on_the_clusters_own_disk_shares_its_time_and_compression_pays() {
    // Output alone twice the read rate: compression would not be asked for...
    let mut c = cal(400_000_000, 800_000_000, 1_000_000_000);
    let apart = advise(&c, None, false);
    assert_eq!(apart.settings.compress, "none");
    // ... but on the same device the reads and the writes take turns: 1/(1/400 + 1/800) MB/s
    // uncompressed, 1/(1/400 + 0.4/800) with lz4 at ratio 0.4, which the CPU allows.
    c.outputs[0].device = "8:0".into();
    let shared = advise(&c, None, false);
    assert_eq!(shared.settings.compress, "lz4");
    assert_eq!(shared.bottleneck, Bottleneck::Input);
    let want = 1.0 / (1.0 / 400e6 + 0.4 / 800e6);
    assert!((shared.predicted_bytes_per_second as f64 - want).abs() / want < 0.01);
    assert!(shared.steps.iter().any(|s| s.step == "shared device"));
    // Measured read and written at once, each as fast as alone (a device with room for
    // both): the times no longer add, and no compression is asked for again.
    c.outputs[0].mixed = Some(MixedProbe {
        read_bytes_per_second: 400_000_000,
        write_bytes_per_second: 800_000_000,
        seconds: 1.0,
    });
    let apart_again = advise(&c, None, false);
    assert_eq!(apart_again.settings.compress, "none");
    assert_eq!(
        apart_again.predicted_bytes_per_second,
        apart.predicted_bytes_per_second
    );
    assert_eq!(step(&apart_again, "shared device").choice, "overlap 1.00");
    // Half the reads' rate beside three quarters of the writes': overlap 0.25, the
    // uncompressed time a quarter of the way from the sum of the two to the larger.
    c.outputs[0].mixed = Some(MixedProbe {
        read_bytes_per_second: 200_000_000,
        write_bytes_per_second: 600_000_000,
        seconds: 1.0,
    });
    let none = CodecRate {
        compression: "none".into(),
        bytes_per_second: u64::MAX,
        ratio: 1.0,
    };
    let part = limits(&c, 400e6, true, &none, 1).shared.unwrap().0;
    let want = 1.0 / (0.75 * (1.0 / 400e6 + 1.0 / 800e6) + 0.25 / 400e6);
    assert!((part - want).abs() / want < 1e-9, "{part} against {want}");
}

fn step<'a>(a: &'a Advice, name: &str) -> &'a Step {
    a.steps
        .iter()
        .find(|s| s.step == name)
        .unwrap_or_else(|| panic!("no step {name}: {:?}", a.steps))
}

#[test]
fn a_busy_machine_gives_fewer_channels_their_cores() {
    // CPU bound with lz4 at 100 MB/s a core: 4 cores would make 4 channels worth it; a
    // machine that gave 4 threads only 1.02 cores' worth leaves one channel.
    let mut c = cal(2_000_000_000, 60_000_000, 100_000_000);
    let free = advise(&c, None, false);
    assert!(free.settings.channels > 1, "{:?}", free.settings);
    c.cpu.parallel_cores = 1.02;
    let busy = advise(&c, None, false);
    assert_eq!(busy.settings.channels, 1, "{:?}", busy.steps);
}

#[test]
fn the_prediction_uses_what_reading_and_checking_together_measured() {
    // Reads 1000 MB/s alone, checks 2000 MB/s a core, output and lz4 ample: input bound.
    let mut c = cal(1_000_000_000, 10_000_000_000, 10_000_000_000);
    let hidden = advise(&c, None, false);
    assert_eq!(hidden.bottleneck, Bottleneck::Input);
    assert!(hidden.predicted_bytes_per_second.abs_diff(1_000_000_000) <= 1);
    // Calibrate found one thread reading and checking at 667 MB/s (no overlap: the sum of
    // both times) and four at once at 800 MB/s together.
    let rc = ReadAndCheck {
        request_size: 1 << 20,
        queue_depth: 1,
        bytes: 1,
        bytes_per_second: 666_666_667,
        overlap: 0.0,
        parallel: vec![ThreadsRate {
            threads: 4,
            bytes_per_second: 800_000_000,
        }],
        cpu_bytes_per_second: 0,
    };
    c.inputs[0].read_and_check = Some(rc.clone());
    let measured = advise(&c, None, false);
    assert_eq!(measured.bottleneck, Bottleneck::Input);
    assert!(measured.steps.iter().any(|s| s.step == "read and check"));
    // The prediction is what the channels advise chose read and check at, with the codec's
    // CPU added as far as it does not overlap.
    let ch = measured.settings.channels;
    let per_core = match measured.settings.compress.as_str() {
        "none" => f64::INFINITY,
        _ => 1e10,
    };
    let want = combined(rc.rate(ch), per_core * (ch as f64).min(4.0), 0.0, ch);
    let got = measured.predicted_bytes_per_second as f64;
    assert!((got - want).abs() / want < 0.01, "{got} against {want}");
    assert!(got < 0.81e9, "{got}: at most the four threads' rate");
    // Buffered reads (a cached cluster) are not what the probe measured: the rates alone.
    c.page_cache.fraction = 1.0;
    c.inputs[0].probes.push(ReadProbe {
        request_size: 1 << 20,
        queue_depth: 4,
        direct: false,
        bytes: 1,
        bytes_per_second: 3_000_000_000,
    });
    let cached = advise(&c, None, false);
    assert!(!cached.settings.direct_reads);
    assert!(cached.predicted_bytes_per_second > 1_000_000_000);
}

#[test]
fn channels_go_past_the_cores_where_more_threads_read_faster() {
    let mut c = cal(1_000_000_000, 10_000_000_000, 10_000_000_000);
    c.cpu.cores = 2;
    let point = |threads, bytes_per_second| ThreadsRate {
        threads,
        bytes_per_second,
    };
    c.inputs[0].read_and_check = Some(ReadAndCheck {
        request_size: 1 << 20,
        queue_depth: 4,
        bytes: 1,
        bytes_per_second: 600_000_000,
        overlap: 0.0,
        parallel: vec![point(2, 650_000_000), point(4, 900_000_000)],
        cpu_bytes_per_second: 0,
    });
    let wide = advise(&c, None, false);
    assert_eq!(wide.settings.channels, 4, "{:?}", wide.steps);
    assert!(wide.predicted_bytes_per_second > 850_000_000);
    // Measured only up to the cores: no more channels than cores.
    c.inputs[0]
        .read_and_check
        .as_mut()
        .unwrap()
        .parallel
        .truncate(1);
    let narrow = advise(&c, None, false);
    assert_eq!(narrow.settings.channels, 2, "{:?}", narrow.steps);
}

#[test]
fn each_piece_adds_the_outputs_commit_time_to_the_prediction() {
    // 1,000 files in sets of 64: 16 sets, 8 on each of two channels.
    let mut c = cal(1_000_000_000, 10_000_000_000, 10_000_000_000);
    c.inputs[0].files = 1_000;
    c.outputs[0].commit_seconds = 0.01;
    let a = advise(&c, None, false);
    let ch = a.settings.channels as u64;
    let per_channel = 1_000u64.div_ceil(64).div_ceil(ch);
    assert!(
        (a.pieces_seconds - per_channel as f64 * 0.01).abs() < 1e-9,
        "{a:?}"
    );
    let data = c.total_bytes as f64 / a.predicted_bytes_per_second as f64;
    assert!(
        (a.predicted_seconds - data - a.pieces_seconds).abs() < 1e-3,
        "{a:?}"
    );
    assert!(a.steps.iter().any(|s| s.step == "pieces"));
    // A medium with no per-object cost adds nothing.
    c.outputs[0].commit_seconds = 0.0;
    assert_eq!(advise(&c, None, false).pieces_seconds, 0.0);
}

#[test]
fn a_cpu_limit_below_one_core_sets_the_cpu_bound_prediction() {
    // Output 300 MB/s (750 MB/s of input with lz4), lz4 1000 MB/s a core (667 MB/s with the
    // checks): with four cores lz4 and two channels; a container allowed half a core gets
    // one channel at half a core's rate, which calibrate's millisecond probes never show.
    let mut c = cal(2_000_000_000, 300_000_000, 1_000_000_000);
    let free = advise(&c, None, false);
    assert!(free.settings.channels > 1, "{:?}", free.settings);
    c.cpu.cpu_limit = Some(0.5);
    let limited = advise(&c, None, false);
    assert_eq!(limited.settings.channels, 1, "{:?}", limited.steps);
    assert_eq!(limited.settings.compress, "lz4");
    assert_eq!(limited.bottleneck, Bottleneck::Cpu);
    let per_core = 1.0 / (1.0 / 2e9 + 1.0 / 1e9);
    let want = 0.5 * per_core;
    let got = limited.predicted_bytes_per_second as f64;
    assert!(
        (got - want).abs() / want < 0.01,
        "predicted {got}, want {want}"
    );
}

/// One thread reading and checking at 1000 MB/s, 4 reads of 1 MiB in flight, with the given
/// overlap and CPU cost (bytes per second of the process's CPU time).
fn gigabyte_read(overlap: f64, cpu_bytes_per_second: u64) -> ReadAndCheck {
    ReadAndCheck {
        request_size: 1 << 20,
        queue_depth: 4,
        bytes: 1,
        bytes_per_second: 1_000_000_000,
        overlap,
        parallel: Vec::new(),
        cpu_bytes_per_second,
    }
}

#[test]
fn where_cores_are_scarce_the_reads_cpu_adds_to_the_codecs() {
    // One thread reads and checks at 1000 MB/s and spends a core's second of CPU on every
    // 2000 MB of it (the kernel's work for the reads included); lz4 1000 MB/s a core; the
    // cgroup allows half a core: 0.5 / (1/2000 + 1/1000) = 333 MB/s, not lz4's 500 alone
    // (reads and CPU overlap fully here).
    let mut c = cal(1_000_000_000, 300_000_000, 1_000_000_000);
    c.cpu.cpu_limit = Some(0.5);
    c.inputs[0].read_and_check = Some(gigabyte_read(1.0, 2_000_000_000));
    let a = advise(&c, None, false);
    assert_eq!(
        (a.bottleneck, a.settings.compress.as_str()),
        (Bottleneck::Cpu, "lz4")
    );
    let want = 0.5 / (1.0 / 2e9 + 1.0 / 1e9);
    let got = a.predicted_bytes_per_second as f64;
    assert!(
        (got - want).abs() / want < 0.01,
        "predicted {got}, want {want}"
    );
    // The writes cost a core a second per 5000 MB written, and lz4 writes 0.4 of a byte per
    // byte read: 0.5 / (1/2000 + 1/1000 + 0.4/5000) = 316 MB/s.
    c.outputs[0].probes[0].cpu_bytes_per_second = 5_000_000_000;
    let a = advise(&c, None, false);
    assert_eq!(a.settings.compress, "lz4");
    let want = 0.5 / (1.0 / 2e9 + 1.0 / 1e9 + 0.4 / 5e9);
    let got = a.predicted_bytes_per_second as f64;
    assert!(
        (got - want).abs() / want < 0.01,
        "predicted {got}, want {want}"
    );
    assert!(
        a.steps.iter().any(|s| s
            .because
            .contains("writing costs a core 5000.0 MB/s written")),
        "{:?}",
        a.steps
    );
    // At 1000 MB written a core-second lz4 would give 263 MB/s; uncompressed, the reads' CPU
    // and a whole byte's write give 333, and the output's 300 is the limit: no compression.
    c.outputs[0].probes[0].cpu_bytes_per_second = 1_000_000_000;
    let a = advise(&c, None, false);
    assert_eq!(a.settings.compress, "none", "{:?}", a.steps);
    assert!((a.predicted_bytes_per_second as f64 - 3e8).abs() / 3e8 < 0.01);
    c.outputs[0].probes[0].cpu_bytes_per_second = 0;
    // A calibration from before the read side's CPU was measured: the codec alone.
    let rc = c.inputs[0].read_and_check.as_mut().unwrap();
    rc.cpu_bytes_per_second = 0;
    let old = advise(&c, None, false).predicted_bytes_per_second as f64;
    assert!((old - 5e8).abs() / 5e8 < 0.01, "predicted {old}");
}

#[test]
fn the_databases_own_backups_set_what_a_channel_costs_the_cpu() {
    // No compression, an ample output, reads and checks at 1000 MB/s costing a core's second
    // per 1000 MB, half a core allowed: the probes promise 500 MB/s. The database's recent
    // uncompressed backups ran at 250 MB/s per second of their channels' CPU time: that rate
    // is the CPU's side, a bound of its own, with the reads hidden behind it.
    let mut c = cal(1_000_000_000, 10_000_000_000, 1_000_000_000);
    c.cpu.codecs.truncate(1);
    c.cpu.cpu_limit = Some(0.5);
    c.inputs[0].read_and_check = Some(gigabyte_read(0.0, 1_000_000_000));
    let probed = advise(&c, None, false).predicted_bytes_per_second as f64;
    assert!((probed - 5e8).abs() / 5e8 < 0.01, "predicted {probed}");
    c.cpu.learned.insert("none".into(), 250e6);
    let learned = advise(&c, None, false);
    assert_eq!(learned.bottleneck, Bottleneck::Cpu);
    let got = learned.predicted_bytes_per_second as f64;
    assert!((got - 125e6).abs() / 125e6 < 0.01, "predicted {got}");
    assert!(
        learned
            .steps
            .iter()
            .any(|s| s.because.contains("recent none backups")),
        "{:?}",
        learned.steps
    );
}

fn run(
    codec: &str,
    channel_bytes: Vec<u64>,
    data_seconds: f64,
) -> crate::tuning::overhead::PastRun {
    crate::tuning::overhead::PastRun {
        compression: codec.into(),
        started: 1,
        device: Some("disk".into()),
        channel_bytes,
        pieces: 0,
        data_seconds,
    }
}

#[test]
fn the_prediction_is_held_to_what_the_model_gave_for_recent_backups() {
    // Read 1 GB/s, the output and the CPU far faster: 10 GB on one channel, 10 s by the model.
    let c = cal(1_000_000_000, 100_000_000_000, 100_000_000_000);
    let one = super::history::modelled_seconds(
        &c,
        &read_limit(&c),
        &run("none", vec![10_000_000_000], 0.0),
    );
    assert!((one.unwrap() - 10.0).abs() < 0.1, "{one:?}");
    let a = advise(&c, None, false).with_fixed_cost(Some(3.0));
    assert_eq!(a.history_factor, 1.0);
    let (codec, ch) = (a.settings.compress.clone(), a.settings.channels as usize);
    let other = if codec == "none" { "lz4" } else { "none" };
    // A backup with `codec` on `ch` channels that took `factor` times the model's time.
    let took = |codec: &str, ch: usize, factor: f64| {
        let mut r = run(codec, vec![10_000_000_000 / ch as u64; ch], 0.0);
        r.data_seconds =
            factor * super::history::modelled_seconds(&c, &read_limit(&c), &r).unwrap();
        r
    };
    // Three backups as advised took 1.2 to 1.3 times the model's time; the newest, with other
    // settings, one with a codec never calibrated, one to another medium and one from before
    // the calibration say nothing.
    let mut elsewhere = took(&codec, ch, 1.9);
    elsewhere.device = Some("s3".into());
    let mut before = took(&codec, ch, 1.7);
    before.started = -1;
    let runs = [
        took(other, ch + 1, 1.6),
        took(&codec, ch, 1.25),
        took(&codec, ch, 1.3),
        took(&codec, ch, 1.2),
        run("zstd:19", vec![10_000_000_000], 100.0),
        elsewhere,
        before,
    ];
    let h = a.clone().with_history(&c, &runs);
    assert_eq!(h.history_runs, 3, "{:?}", h.steps);
    assert!((h.history_factor - 1.25).abs() < 1e-6, "{h:?}");
    // The data phase scales, the start and stop costs stay.
    let data = a.predicted_seconds - 3.0;
    assert!(
        (h.predicted_seconds - (data * 1.25 + 3.0)).abs() < 1e-6,
        "{h:?}"
    );
    assert!(h.predicted_bytes_per_second < a.predicted_bytes_per_second);
    assert_eq!(h.settings, a.settings);
    let hs = step(&h, "history");
    assert!(hs.because.contains("(as advised)"), "{hs:?}");
    // With none as advised, the newest with any settings count.
    let h = a.clone().with_history(&c, &runs[..1]);
    assert!((h.history_factor - 1.6).abs() < 1e-6, "{h:?}");
    let hs = step(&h, "history");
    assert!(hs.because.contains("none ran as advised"), "{hs:?}");
    // Without backups the model's prediction stands, and the step says so.
    let none = a.clone().with_history(&c, &[]);
    assert_eq!(none.predicted_seconds, a.predicted_seconds);
    assert!(
        none.steps
            .iter()
            .any(|s| s.step == "history" && s.choice == "none")
    );
    // Backups ten times slower than the model: a stale calibration, the factor held to 2.
    let stale = a.clone().with_history(&c, &[took(&codec, ch, 10.0)]);
    assert_eq!(stale.history_factor, 2.0);
    let hs = step(&stale, "history");
    assert!(hs.because.contains("recman calibrate"), "{hs:?}");
}

#[test]
fn a_channel_left_alone_with_a_dominant_file_sets_the_models_time() {
    // One thread reads 1 GB/s, two 1.8 GB/s. Of two channels, one with 9 GB of the 10 reads
    // alone once the other is done, at one thread's rate.
    let mut c = cal(1_000_000_000, 100_000_000_000, 100_000_000_000);
    let mut rc = gigabyte_read(1.0, 0);
    rc.parallel = vec![ThreadsRate {
        threads: 2,
        bytes_per_second: 1_800_000_000,
    }];
    c.inputs[0].read_and_check = Some(rc);
    let balanced = super::history::modelled_seconds(
        &c,
        &read_limit(&c),
        &run("none", vec![5_000_000_000, 5_000_000_000], 0.0),
    )
    .unwrap();
    let skewed = super::history::modelled_seconds(
        &c,
        &read_limit(&c),
        &run("none", vec![9_000_000_000, 1_000_000_000], 0.0),
    )
    .unwrap();
    assert!(skewed > balanced * 1.2, "{skewed} vs {balanced}");
}
