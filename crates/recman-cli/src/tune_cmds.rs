//! How `calibrate`, `advise` and `list calibration` are printed: the seeds' tuning method as
//! commands. The measurements and the method are the engine's (its tuning module), run
//! and kept in the catalog by the command model (recman_command::tuning).

use recman_command::model::{Advice, Calibration, CalibrationRecord};
use recman_command::tuning::TuningOutcome;

fn mb(b: u64) -> String {
    format!("{:.1} MB/s", b as f64 / 1e6)
}

/// How CALIBRATE, ADVISE, LIST CALIBRATION and LIST DRILL are printed: their answers, shown
/// even with --quiet.
pub fn print(o: TuningOutcome) {
    match o {
        TuningOutcome::Calibrated { calibration, json } => {
            if json {
                print_json(&calibration);
            } else {
                print_calibration(&calibration);
            }
        }
        TuningOutcome::Advised { advice, json } => {
            if json {
                print_json(&advice);
            } else {
                print_advice(&advice);
            }
        }
        TuningOutcome::Calibrations { records, json } => list_calibration(&records, json),
        TuningOutcome::Drills { records, json } => crate::drill_cmd::list_drill(&records, json),
    }
}

fn print_json<T: serde::Serialize + ?Sized>(v: &T) {
    match serde_json::to_string_pretty(v) {
        Ok(t) => println!("{t}"),
        Err(e) => eprintln!("recman: cannot print JSON: {e}"),
    }
}

fn print_calibration(c: &Calibration) {
    println!(
        "calibration of {} ({:.1} MB)",
        c.pgdata,
        c.total_bytes as f64 / 1e6
    );
    for d in &c.inputs {
        println!(
            "input device {}: {:.1} MB in {} files, largest {:.1} MB",
            d.device,
            d.bytes as f64 / 1e6,
            d.files,
            d.largest_file as f64 / 1e6
        );
        for p in &d.probes {
            println!(
                "  read {:>5}K x {:>2} {:<8} {}",
                p.request_size >> 10,
                p.queue_depth,
                if p.direct { "direct" } else { "buffered" },
                mb(p.bytes_per_second)
            );
        }
    }
    for o in &c.outputs {
        println!(
            "output {} ({}, device type {}):",
            o.describe, o.kind, o.device_type
        );
        for p in &o.probes {
            println!("  write {} stream(s) {}", p.streams, mb(p.bytes_per_second));
        }
        for p in &o.objects {
            println!(
                "  object {:>5}K: write {:.3} s ({}), read {:.3} s ({})",
                p.size >> 10,
                p.write_seconds,
                mb(p.write_bytes_per_second),
                p.read_seconds,
                mb(p.read_bytes_per_second)
            );
        }
        if let Some(m) = &o.mixed {
            println!(
                "  beside reads of the cluster's device {}: read {}, write {} at once",
                o.device,
                mb(m.read_bytes_per_second),
                mb(m.write_bytes_per_second)
            );
        }
    }
    println!(
        "cpu: {} core(s); page checks {} per core on {:.1} MB of the cluster's pages",
        c.cpu.cores,
        mb(c.cpu.check_bytes_per_second),
        c.cpu.sample_bytes as f64 / 1e6
    );
    for k in c.cpu.codecs.iter().filter(|k| k.compression != "none") {
        println!(
            "  {:<8} {} per core, ratio {:.2}",
            k.compression,
            mb(k.bytes_per_second),
            k.ratio
        );
    }
    println!(
        "page cache: {:.0}% of {:.1} MB resident",
        c.page_cache.fraction * 100.0,
        c.page_cache.bytes as f64 / 1e6
    );
}

fn print_advice(a: &Advice) {
    for s in &a.steps {
        println!("{:<24} {:<28} ({})", s.step, s.choice, s.because);
    }
    println!(
        "expected bottleneck: {} ({}); predicted {:.1} MB/s, {:.0} s for {:.1} MB",
        a.bottleneck.as_str(),
        a.bottleneck_device,
        a.predicted_bytes_per_second as f64 / 1e6,
        a.predicted_seconds,
        a.total_bytes as f64 / 1e6
    );
    let s = &a.settings;
    println!(
        "backup database --channels {} --compress {} --filesperset {} --maxopenfiles {} --input-buffers {} --input-buffer-size {}K{}{}",
        s.channels,
        s.compress,
        s.filesperset,
        s.maxopenfiles,
        s.input_buffers,
        s.input_buffer_size >> 10,
        s.section_size
            .map(|z| format!(" --section-size {}M", z >> 20))
            .unwrap_or_default(),
        if s.direct_reads {
            ""
        } else {
            " --buffered-reads"
        }
    );
    if let Some(w) = &a.window {
        println!(
            "window {:.0} s: {} (needs {})",
            w.window_seconds,
            if w.fits { "fits" } else { "does not fit" },
            mb(w.needed_bytes_per_second)
        );
        for s in &w.suggestions {
            println!("  {s}");
        }
    }
}

fn list_calibration(recs: &[CalibrationRecord], json: bool) {
    if json {
        let v: Vec<serde_json::Value> = recs
            .iter()
            .map(|r| {
                let body: serde_json::Value =
                    serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null);
                serde_json::json!({"id": r.id, "taken_at": r.taken_at, "pgdata": r.pgdata, "calibration": body})
            })
            .collect();
        print_json(&v);
        return;
    }
    if recs.is_empty() {
        println!("no calibrations; run `recman calibrate`");
    }
    for r in recs {
        let when = chrono::DateTime::from_timestamp_micros(r.taken_at)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_default();
        match serde_json::from_str::<Calibration>(&r.body) {
            Ok(c) => println!(
                "{:>4} {when} {} read {} write {} lz4 {} cache {:.0}%",
                r.id,
                r.pgdata,
                mb(c.inputs.iter().map(|d| d.best_bytes_per_second).sum()),
                mb(c.outputs
                    .first()
                    .and_then(|o| o.probes.first())
                    .map(|p| p.bytes_per_second)
                    .unwrap_or(0)),
                mb(c.cpu
                    .codecs
                    .iter()
                    .find(|k| k.compression == "lz4")
                    .map(|k| k.bytes_per_second)
                    .unwrap_or(0)),
                c.page_cache.fraction * 100.0
            ),
            Err(_) => println!("{:>4} {when} {} (unreadable)", r.id, r.pgdata),
        }
    }
}
