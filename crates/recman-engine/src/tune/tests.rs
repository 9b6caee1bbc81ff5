use super::*;
use crate::window::Live;
use std::time::{Duration, Instant};

/// One set of 1 s on device 7 read with `used`: waits for input and output, CPU, and the rate
/// it read at.
fn learn(t: &Tuner, live: &Live, used: &SetTune, waits: (u64, u64), cpu_ms: u64, mb_s: f64) {
    learn_in(t, live, used, waits, (cpu_ms, 0), mb_s)
}

/// As [`learn`], with the whole process's CPU over the set beside the channel's (`cpu_ms`:
/// channel, process; a process CPU of 0 is not measured).
fn learn_in(
    t: &Tuner,
    live: &Live,
    used: &SetTune,
    waits: (u64, u64),
    cpu_ms: (u64, u64),
    mb_s: f64,
) {
    let input = IoCounters {
        io_count: 100,
        long_waits: 10,
        long_wait_time: Duration::from_millis(waits.0),
        bytes: (mb_s * 1e6) as u64,
        ..Default::default()
    };
    let output = IoCounters {
        io_count: 10,
        long_waits: 1,
        long_wait_time: Duration::from_millis(waits.1),
        ..Default::default()
    };
    t.learn(
        live,
        used,
        &SetMeasure {
            channel: 1,
            device: 7,
            input: &input,
            output: Some(&output),
            elapsed_us: 1_000_000,
            cpu_us: cpu_ms.0 * 1000,
            process_cpu_us: cpu_ms.1 * 1000,
        },
    );
}

fn settings(live: &Live) -> Vec<String> {
    let (_, ev) = live.take("B");
    ev.iter()
        .map(|e| format!("{} {}", e.setting, e.new_value))
        .collect()
}

#[test]
fn each_bound_moves_its_setting_the_right_way_and_keeps_what_helped() {
    let live = Live::new(1, None, Instant::now(), 0);
    let io = IoSettings::default();
    let t = Tuner::new(Compression::Zstd { level: 3 });
    let first = t.for_set(7, 1, &io);
    // CPU bound: lighter compression, buffers left alone.
    learn(&t, &live, &first, (10, 10), 950, 50.0);
    let s = t.for_set(7, 1, &io);
    assert_eq!(
        (s.plan, s.compression),
        (first.plan, Compression::Zstd { level: 1 })
    );
    // It was faster, so it stays; the set was input bound: deeper and larger reads.
    learn(&t, &live, &s, (600, 0), 300, 80.0);
    let s = t.for_set(7, 1, &io);
    assert_eq!(s.compression, Compression::Zstd { level: 1 });
    assert!(
        s.plan.per_file > first.plan.per_file && s.plan.size > first.plan.size,
        "{s:?}"
    );
    // Another device keeps its own settings.
    assert_eq!(t.for_set(8, 1, &io).plan, first.plan);
    // Faster again: kept; now output bound: heavier compression.
    learn(&t, &live, &s, (0, 500), 300, 100.0);
    let s = t.for_set(7, 1, &io);
    assert_eq!(s.compression, Compression::Zstd { level: 3 });
    // Each faster set keeps the last change and takes the next step: requests at their deepest
    // and largest, then more files at once.
    let mut s = s;
    let mut rate = 120.0;
    for _ in 0..3 {
        learn(&t, &live, &s, (900, 0), 900, rate);
        s = t.for_set(7, 1, &io);
        rate *= 1.5;
    }
    assert_eq!((s.plan.per_file, s.plan.size), (MAX_DEPTH, MAX_REQUEST));
    assert_eq!(s.files, 5);
    assert_eq!(
        settings(&live),
        [
            "compress_level zstd:1",
            "decision kept",
            "queue_depth 32",
            "input_buffer_size 2097152",
            "decision kept",
            "compress_level zstd:3",
            "decision kept",
            "input_buffer_size 4194304",
            "decision kept",
            "files_in_flight 3",
            "decision kept",
            "files_in_flight 5",
        ]
    );
}

#[test]
fn compression_climbs_from_none_when_output_bound_and_falls_back_when_cpu_bound() {
    let live = Live::new(1, None, Instant::now(), 0);
    let io = IoSettings::default();
    let t = Tuner::new(Compression::None);
    let mut seen = Vec::new();
    let mut rate = 10.0;
    for _ in 0..3 {
        learn(&t, &live, &t.for_set(7, 1, &io), (0, 600), 200, rate);
        seen.push(t.for_set(7, 1, &io).compression);
        rate *= 2.0;
    }
    assert_eq!(
        seen,
        [
            Compression::Lz4,
            Compression::Zstd { level: 1 },
            Compression::Zstd { level: 3 }
        ]
    );
    seen.clear();
    for _ in 0..3 {
        learn(&t, &live, &t.for_set(7, 1, &io), (10, 10), 950, rate);
        seen.push(t.for_set(7, 1, &io).compression);
        rate *= 2.0;
    }
    assert_eq!(
        seen,
        [
            Compression::Zstd { level: 1 },
            Compression::Lz4,
            Compression::None
        ]
    );
}

/// A blkio rate cap: deeper reads leave the rate where it was (or lower it). The change is
/// reverted, recorded with the rates, and not tried again until its rest is over.
#[test]
fn a_change_that_did_not_raise_the_rate_is_reverted_and_rests() {
    let live = Live::new(1, None, Instant::now(), 0);
    let io = IoSettings::default();
    let t = Tuner::new(Compression::Zstd { level: 3 });
    let first = t.for_set(7, 1, &io);
    // Input bound, no CPU to spare: deeper reads are the only step.
    learn(&t, &live, &first, (800, 0), 700, 8.0);
    let deeper = t.for_set(7, 1, &io);
    assert!(deeper.plan.per_file > first.plan.per_file);
    // Slower with it: back to the plan before.
    learn(&t, &live, &deeper, (800, 0), 700, 7.0);
    let back = t.for_set(7, 1, &io);
    assert_eq!(
        back.plan, first.plan,
        "a change that lowered the rate stays"
    );
    let (_, ev) = live.take("B");
    let decision = ev.iter().find(|e| e.setting == "decision").unwrap();
    assert_eq!(decision.new_value, "reverted");
    assert!(
        decision
            .reason
            .contains("7.0 MB/s with it against 8.0 MB/s before"),
        "{}",
        decision.reason
    );
    let reverts: Vec<_> = ev
        .iter()
        .filter(|e| e.reason.starts_with("reverted"))
        .map(|e| (e.setting.as_str(), e.new_value.as_str()))
        .collect();
    assert_eq!(
        reverts,
        [("queue_depth", "16"), ("input_buffer_size", "1048576")]
    );
    // A set read with the reverted settings (it started before the revert) says nothing.
    learn(&t, &live, &deeper, (800, 0), 700, 8.0);
    assert_eq!(t.for_set(7, 1, &io).plan, first.plan);
    // Resting: four sets are read with the settings before; the last of them tries again.
    for _ in 1..REST_SETS {
        learn(&t, &live, &t.for_set(7, 1, &io), (800, 0), 700, 8.0);
        assert_eq!(t.for_set(7, 1, &io).plan, first.plan);
    }
    learn(&t, &live, &t.for_set(7, 1, &io), (800, 0), 700, 8.0);
    let again = t.for_set(7, 1, &io);
    assert!(again.plan.per_file > first.plan.per_file);
    // Within the noise (+2 %) is not faster either: reverted, and the rest is twice as long.
    learn(&t, &live, &again, (800, 0), 700, 8.16);
    assert_eq!(t.for_set(7, 1, &io).plan, first.plan);
    let (_, ev) = live.take("B");
    let d: Vec<_> = ev.iter().filter(|e| e.setting == "decision").collect();
    assert_eq!(d.len(), 1);
    assert!(
        d[0].new_value == "reverted" && d[0].reason.contains("not tried for 8 sets"),
        "{:?}",
        d[0]
    );
}

/// Heavier compression while the input limits is meant to cost nothing: kept when the rate
/// held, reverted when it fell.
#[test]
fn free_compression_is_kept_when_the_rate_holds() {
    let live = Live::new(1, None, Instant::now(), 0);
    let io = IoSettings {
        input_buffers: Some(MAX_DEPTH),
        input_buffer_size: Some(MAX_REQUEST),
        ..Default::default()
    };
    let t = Tuner::new(Compression::None);
    // Requests at their top and the files resting: the only step is compression.
    let first = t.for_set(7, 16, &io);
    learn(&t, &live, &first, (800, 0), 200, 8.0);
    let s = t.for_set(7, 16, &io);
    assert_eq!(s.compression, Compression::Lz4);
    learn(&t, &live, &s, (800, 0), 200, 7.9);
    let s = t.for_set(7, 16, &io);
    assert_eq!(
        s.compression,
        Compression::Zstd { level: 1 },
        "lz4 was kept"
    );
    learn(&t, &live, &s, (800, 0), 200, 5.0);
    assert_eq!(t.for_set(7, 16, &io).compression, Compression::Lz4);
}

#[test]
fn a_backup_too_short_to_learn_from_keeps_its_plan() {
    const MB: u64 = 1_000_000;
    // 320 MB at 600 MB/s: 0.53 s of data, sets of 67 ms whatever the channels.
    let note = super::short_sets(320 * MB, Some(600e6)).expect("too short to learn from");
    assert_eq!(note.setting, "layout");
    assert!(note.reason.contains("0.5 s"), "{}", note.reason);
    // 1.6 GB at 60 MB/s: 27 s, sets of 3.3 s: the learning layout pays.
    assert!(super::short_sets(1600 * MB, Some(60e6)).is_none());
    // The boundary: 8 sets of exactly 0.5 s learn; sets of 0.2-0.5 s give rates too noisy
    // to judge a change by.
    assert!(super::short_sets(400 * MB, Some(100e6)).is_none());
    assert!(super::short_sets(399 * MB, Some(100e6)).is_some());
    assert!(super::short_sets(200 * MB, Some(100e6)).is_some());
    // No prediction (no calibration), or a nonsense one: the layout is planned for learning.
    assert!(super::short_sets(320 * MB, None).is_none());
    assert!(super::short_sets(320 * MB, Some(0.0)).is_none());
}

#[test]
fn output_waits_of_a_process_that_used_all_its_cpu_are_no_reason_to_compress() {
    // Half a core's quota: the channel waited 58 % of the set for its writer while the whole
    // process used 480 ms of the 500 it may: heavier compression would only add CPU.
    let live = Live::new(1, None, Instant::now(), 0);
    let io = IoSettings::default();
    let mut t = Tuner::new(Compression::None);
    t.cores = 0.5;
    let first = t.for_set(7, 1, &io);
    learn_in(&t, &live, &first, (0, 580), (290, 480), 800.0);
    assert_eq!(t.for_set(7, 1, &io).compression, Compression::None);
    assert!(settings(&live).is_empty());
    // From lz4, the lighter codec is tried.
    let mut t = Tuner::new(Compression::Lz4);
    t.cores = 0.5;
    let first = t.for_set(7, 1, &io);
    learn_in(&t, &live, &first, (0, 580), (290, 480), 800.0);
    assert_eq!(t.for_set(7, 1, &io).compression, Compression::None);
    // With CPU to spare (200 ms of 500), the same waits ask for compression.
    let mut t = Tuner::new(Compression::None);
    t.cores = 0.5;
    let first = t.for_set(7, 1, &io);
    learn_in(&t, &live, &first, (0, 580), (290, 200), 800.0);
    assert_eq!(t.for_set(7, 1, &io).compression, Compression::Lz4);
}
