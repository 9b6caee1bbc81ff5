//! `calibrate`, `advise` and `list calibration`: the seeds' tuning method as commands. The
//! measurements and the method are the engine's (recman_engine::tuning); this prints them and
//! keeps them in the catalog.

use crate::cli::Global;
use anyhow::{Context as _, Result, anyhow, bail};
use recman_command::ConfigureWhat;
use recman_engine::tuning::advise::{Advice, advise as walk};
use recman_engine::tuning::calibrate::{CalibrateOptions, Calibration, calibrate as measure};

fn mb(b: u64) -> String {
    format!("{:.1} MB/s", b as f64 / 1e6)
}

pub fn calibrate(g: &Global, json: bool) -> Result<()> {
    let ctx = crate::commands::context(g)?;
    let pgdata = ctx
        .pgdata
        .clone()
        .or_else(|| (!ctx.db.pgdata.is_empty()).then(|| ctx.db.pgdata.clone().into()))
        .ok_or_else(|| anyhow!("calibrate needs the data directory; hint: pass --pgdata DIR"))?;
    let c = measure(
        &pgdata,
        &output_devices(&ctx.repo)?,
        &CalibrateOptions::default(),
    )?;
    let body = serde_json::to_string(&c)?;
    ctx.repo
        .catalog()
        .add_calibration(c.taken_at, &c.pgdata, &body)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print_calibration(&c);
    }
    Ok(())
}

/// The repository's own medium and every device type configured with PARMS: each output a
/// backup may be sent to.
fn output_devices(
    repo: &recman_catalog::Repository,
) -> Result<Vec<(String, std::sync::Arc<dyn recman_catalog::Media>)>> {
    use recman_engine::devices::{DEVICE_TYPES, media_for, parms_key, repository_device};
    let own = repository_device(repo);
    let mut out = vec![(own.to_string(), std::sync::Arc::clone(repo.media()))];
    for dt in DEVICE_TYPES.into_iter().filter(|d| *d != own) {
        if repo.catalog().config(&parms_key(dt))?.is_some() {
            out.push((dt.to_string(), media_for(repo, dt)?));
        }
    }
    Ok(out)
}

/// The device type a plain `backup database` writes to: the configured default, else the
/// repository's own.
fn backup_device_type(repo: &recman_catalog::Repository) -> Result<String> {
    Ok(match repo.catalog().config("default-device-type")? {
        Some(d) => d.to_lowercase(),
        None => recman_engine::devices::repository_device(repo).to_string(),
    })
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

/// The newest calibration of the catalog.
fn newest(repo: &recman_catalog::Repository) -> Result<Calibration> {
    let rec = repo.catalog().calibrations()?.pop().ok_or_else(|| {
        anyhow!(
            "no calibration in the catalog of {}; hint: run `recman calibrate` first",
            repo.location()
        )
    })?;
    serde_json::from_str(&rec.body).with_context(|| {
        format!(
            "calibration {} in the catalog is not readable; hint: run `recman calibrate` again",
            rec.id
        )
    })
}

/// H:MM or H:MM:SS as seconds.
fn window_seconds(w: &str) -> Result<f64> {
    let parts: Vec<&str> = w.split(':').collect();
    let n = |s: &str| s.parse::<u64>().ok();
    let secs = match parts.as_slice() {
        [h, m] => n(h)
            .zip(n(m))
            .filter(|(_, m)| *m < 60)
            .map(|(h, m)| h * 3600 + m * 60),
        [h, m, s] => match (n(h), n(m), n(s)) {
            (Some(h), Some(m), Some(s)) if m < 60 && s < 60 => Some(h * 3600 + m * 60 + s),
            _ => None,
        },
        _ => None,
    };
    match secs {
        Some(s) if s > 0 => Ok(s as f64),
        _ => bail!("backup window {w:?} is not H:MM or H:MM:SS; hint: e.g. `--window 2:00`"),
    }
}

pub fn advise(g: &Global, window: Option<&str>, json: bool, apply: bool) -> Result<()> {
    let window = window.map(window_seconds).transpose()?;
    let repo = crate::commands::open_repo(g)?;
    let mut c = newest(&repo)?;
    // Advise for the device a backup writes to; a calibration from before device types were
    // probed has one output, the repository's.
    let device_type = backup_device_type(&repo)?;
    if c.outputs.iter().any(|o| o.device_type == device_type) {
        c.outputs.retain(|o| o.device_type == device_type);
    }
    let tape = device_type == "sbt";
    // The start and stop costs come from the registered database's backups; a repository
    // without one (calibrated before its first registration) predicts the data phase only.
    let fixed = match crate::commands::context(g) {
        Ok(ctx) => recman_engine::tuning::overhead::fixed_seconds(ctx.repo.catalog(), ctx.db.id)?,
        Err(_) => None,
    };
    let a = walk(&c, window, tape).with_fixed_cost(fixed);
    if json {
        println!("{}", serde_json::to_string_pretty(&a)?);
    } else {
        print_advice(&a);
    }
    if apply {
        apply_settings(g, &a)?;
    }
    Ok(())
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

/// Stores the settings CONFIGURE knows, as `recman configure` would.
fn apply_settings(g: &Global, a: &Advice) -> Result<()> {
    let s = &a.settings;
    for what in [
        ConfigureWhat::Channels {
            value: s.channels.to_string(),
        },
        ConfigureWhat::Compression {
            value: s.compress.clone(),
        },
        ConfigureWhat::Filesperset {
            value: s.filesperset.to_string(),
        },
        ConfigureWhat::Maxopenfiles {
            value: s.maxopenfiles.to_string(),
        },
        ConfigureWhat::SectionSize {
            value: s
                .section_size
                .map(|z| z.to_string())
                .unwrap_or_else(|| "none".into()),
        },
    ] {
        crate::catalog_cmds::configure(g, what)?;
    }
    Ok(())
}

pub fn list_calibration(g: &Global, json: bool) -> Result<()> {
    let repo = crate::commands::open_repo(g)?;
    let recs = repo.catalog().calibrations()?;
    if json {
        let v: Vec<serde_json::Value> = recs
            .iter()
            .map(|r| {
                let body: serde_json::Value =
                    serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null);
                serde_json::json!({"id": r.id, "taken_at": r.taken_at, "pgdata": r.pgdata, "calibration": body})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if recs.is_empty() {
        println!("no calibrations; run `recman calibrate`");
    }
    for r in &recs {
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
    Ok(())
}
