//! `--tune auto` starts where `advise` would: when the catalog holds a calibration of the
//! database's data directory, the backup begins with advise's channels, compression, input
//! buffers, open files and section size, and the tuner's keep/revert rule adjusts from there.
//! Starting from the defaults cost most where the defaults are furthest from the answer: under
//! a slow output, an uncompressed start wrote at the output's rate until the compression ladder
//! had climbed, set by set (docs/tuning.md, the grid's write-throttled case).
//!
//! What the command itself says wins: a `--channels`, `--compress`, `--section-size`,
//! `--maxopenfiles`, `--filesperset`, `--input-buffers` or `--input-buffer-size` on the backup
//! stays. CONFIGURE'd settings and the defaults give way to the calibration's advice: asking for
//! auto tuning is asking recman to choose.

use crate::command::BackupDatabase;
use crate::error::ExecError;
use crate::tuning::{advice_for, cat_err, learned_of};
use recman_engine::io::ReadMode;
use recman_engine::tune::TuneNote;
use recman_engine::tuning::advise::Settings;
use recman_engine::tuning::calibrate::Calibration;
use recman_engine::{BackupOptions, Context, Progress};
use recman_format::Compression;

/// Replaces in `opts` what the command left open by advise's `s`; returns each change as a
/// note for the backup's tuning events.
pub(crate) fn apply_advice(
    b: &BackupDatabase,
    opts: &mut BackupOptions,
    s: &Settings,
    calibrated: &str,
) -> Vec<TuneNote> {
    let mut notes = Vec::new();
    let mut note = |setting: &str, old: String, new: String| {
        if old != new {
            notes.push(TuneNote {
                setting: setting.to_string(),
                old: Some(old),
                new,
                reason: format!("tune auto: starts from advise's settings ({calibrated})"),
            });
        }
    };
    // A count the command left open takes advise's (at least 1).
    fn count(
        note: &mut impl FnMut(&str, String, String),
        given: Option<u32>,
        setting: &str,
        slot: &mut u32,
        advised: u32,
    ) {
        if given.is_none() {
            note(setting, slot.to_string(), advised.to_string());
            *slot = advised.max(1);
        }
    }
    count(
        &mut note,
        b.channels,
        "channels",
        &mut opts.channels,
        s.channels,
    );
    if b.compress.is_none()
        && let Ok(c) = s.compress.parse::<Compression>()
    {
        note(
            "compress_level",
            opts.compression.to_string(),
            c.to_string(),
        );
        opts.compression = c;
    }
    count(
        &mut note,
        b.filesperset,
        "filesperset",
        &mut opts.filesperset,
        s.filesperset,
    );
    count(
        &mut note,
        b.maxopenfiles,
        "maxopenfiles",
        &mut opts.maxopenfiles,
        s.maxopenfiles,
    );
    if b.section_size.is_none() {
        let show = |v: Option<u64>| v.map_or_else(|| "none".to_string(), |z| z.to_string());
        note(
            "section_size",
            show(opts.section_size),
            show(s.section_size),
        );
        opts.section_size = s.section_size;
    }
    // The buffers only as a pair: advise's count is per open file for its size.
    if b.io.input_buffers.is_none() && b.io.input_buffer_size.is_none() {
        let size = s.input_buffer_size as usize;
        let mut io = opts.io.clone();
        io.input_buffers = Some(s.input_buffers as usize);
        io.input_buffer_size = Some(size);
        if s.input_buffers > 0 && io.validate().is_ok() {
            let show = |v: Option<usize>| v.map_or_else(|| "plan".to_string(), |z| z.to_string());
            note(
                "queue_depth",
                show(opts.io.input_buffers),
                s.input_buffers.to_string(),
            );
            note(
                "input_buffer_size",
                show(opts.io.input_buffer_size),
                size.to_string(),
            );
            opts.io = io;
        }
    }
    // Reads through the page cache where calibrate found most of the cluster cached and such
    // reads faster (a small, hot cluster reads 1.6 times faster so: docs/performance.md);
    // a command that chose how to read keeps its choice.
    if !s.direct_reads && opts.io.reads == ReadMode::Auto && !b.io.direct_reads {
        note("reads", "auto".into(), "buffered".into());
        opts.io.reads = ReadMode::Buffered;
    }
    notes
}

/// The newest calibration of the database's data directory, if any.
fn calibration_of(ctx: &Context) -> Result<Option<Calibration>, ExecError> {
    let mut dirs = vec![ctx.db.pgdata.clone()];
    if let Some(p) = &ctx.pgdata {
        dirs.push(p.display().to_string());
    }
    let canon = |d: &str| {
        std::fs::canonicalize(d)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| d.trim_end_matches('/').to_string())
    };
    let dirs: Vec<String> = dirs
        .iter()
        .filter(|d| !d.is_empty())
        .map(|d| canon(d))
        .collect();
    let records = ctx.repo.catalog().calibrations().map_err(cat_err)?;
    let Some(rec) = records
        .into_iter()
        .rev()
        .find(|r| dirs.contains(&canon(&r.pgdata)))
    else {
        return Ok(None);
    };
    serde_json::from_str(&rec.body)
        .map(Some)
        .map_err(|source| ExecError::BadCalibration { id: rec.id, source })
}

/// For `--tune auto` with a calibration of the database: advise's settings in `opts` where
/// the command left them open, each change noted for the backup's tuning events.
pub(crate) fn start_from_advice(
    ctx: &Context,
    b: &BackupDatabase,
    opts: &mut BackupOptions,
    progress: &dyn Progress,
) -> Result<(), ExecError> {
    if !opts.tune_auto {
        return Ok(());
    }
    let Some(c) = calibration_of(ctx)? else {
        progress.notice(
            "tune auto: no calibration of this data directory in the catalog; starting from the configured settings (hint: `recman calibrate` lets auto start from advise's)",
        );
        return Ok(());
    };
    let device_type = match &opts.device {
        Some(d) => d.clone(),
        None => recman_engine::devices::repository_device(&ctx.repo).to_string(),
    };
    let when = calibration_date(c.taken_at);
    let a = advice_for(c, &device_type, None, learned_of(Some(ctx))?);
    let notes = apply_advice(b, opts, &a.settings, &format!("calibration of {when}"));
    for n in &notes {
        progress.notice(&format!(
            "tune auto: {} {} -> {} (advise, calibration of {when})",
            n.setting,
            n.old.as_deref().unwrap_or("-"),
            n.new
        ));
    }
    opts.tune_notes = notes;
    // Whether the backup is long enough to learn from is judged at advise's predicted rate.
    opts.tune_expected_rate = Some(a.predicted_bytes_per_second as f64);
    Ok(())
}

/// A calibration's date, UTC, as `YYYY-MM-DD HH:MM`.
fn calibration_date(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros).map_or_else(
        || format!("{micros} µs"),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice() -> Settings {
        Settings {
            channels: 2,
            compress: "zstd:1".into(),
            filesperset: 64,
            maxopenfiles: 2,
            input_buffers: 8,
            input_buffer_size: 1 << 20,
            io: "io_uring".into(),
            direct_reads: true,
            section_size: Some(41 << 20),
            blksize: 1 << 20,
        }
    }

    /// `backup database --tune auto` with nothing else said, and its options before advise.
    fn auto_backup() -> (BackupDatabase, BackupOptions) {
        let b = BackupDatabase {
            tune: Some("auto".into()),
            ..Default::default()
        };
        let o = BackupOptions {
            tune_auto: true,
            ..Default::default()
        };
        (b, o)
    }

    #[test]
    fn auto_starts_from_advise_where_the_command_is_silent() {
        let (b, mut o) = auto_backup();
        let notes = apply_advice(&b, &mut o, &advice(), "test");
        assert_eq!(o.channels, 2);
        assert_eq!(o.compression, Compression::Zstd { level: 1 });
        assert_eq!(o.maxopenfiles, 2);
        assert_eq!(o.section_size, Some(41 << 20));
        assert_eq!(o.io.input_buffers, Some(8));
        assert_eq!(o.io.input_buffer_size, Some(1 << 20));
        let changed: Vec<&str> = notes.iter().map(|n| n.setting.as_str()).collect();
        // filesperset was already advise's 64: no note for it.
        assert_eq!(
            changed,
            [
                "channels",
                "compress_level",
                "maxopenfiles",
                "section_size",
                "queue_depth",
                "input_buffer_size"
            ]
        );
        assert!(notes[1].old.as_deref() == Some("none") && notes[1].new == "zstd:1");
        assert_eq!(o.io.reads, ReadMode::Auto, "advise kept the reads");
    }

    #[test]
    fn auto_reads_through_the_page_cache_where_advise_says_so() {
        let (b, mut o) = auto_backup();
        assert_eq!(o.io.reads, ReadMode::Auto);
        let cached = Settings {
            direct_reads: false,
            ..advice()
        };
        let notes = apply_advice(&b, &mut o, &cached, "test");
        assert_eq!(o.io.reads, ReadMode::Buffered);
        let n = notes.iter().find(|n| n.setting == "reads").unwrap();
        assert_eq!(
            (n.old.as_deref(), n.new.as_str()),
            (Some("auto"), "buffered")
        );
    }

    #[test]
    fn the_commands_own_flags_stay() {
        let b = BackupDatabase {
            tune: Some("auto".into()),
            channels: Some(1),
            compress: Some("lz4".into()),
            section_size: Some("8M".into()),
            io: crate::command::IoOptions {
                input_buffer_size: Some("256K".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut o = BackupOptions {
            tune_auto: true,
            channels: 1,
            compression: Compression::Lz4,
            section_size: Some(8 << 20),
            ..Default::default()
        };
        o.io.input_buffer_size = Some(256 << 10);
        let notes = apply_advice(&b, &mut o, &advice(), "test");
        assert_eq!(o.channels, 1);
        assert_eq!(o.compression, Compression::Lz4);
        assert_eq!(o.section_size, Some(8 << 20));
        assert_eq!(
            (o.io.input_buffers, o.io.input_buffer_size),
            (None, Some(256 << 10))
        );
        // Only what the command left open moved.
        assert_eq!(o.maxopenfiles, 2);
        assert!(notes.iter().all(|n| n.setting == "maxopenfiles"));
    }

    /// A calibration of `pgdata`: one disk read at `read`, an output written at `write`,
    /// lz4 at ratio 0.3 and cheap.
    fn calibration(pgdata: &str, read: u64, write: u64) -> String {
        serde_json::json!({
            "taken_at": 1_795_662_000_000_000i64, "pgdata": pgdata, "total_bytes": 1u64 << 30,
            "inputs": [{"device": "8:0", "bytes": 1u64 << 30, "files": 10, "largest_file": 1 << 28,
                "probes": [{"request_size": 1 << 20, "queue_depth": 4, "direct": true, "bytes": 1,
                    "bytes_per_second": read}],
                "best_bytes_per_second": read, "best_request_size": 1 << 20, "best_queue_depth": 4}],
            "outputs": [{"kind": "disk", "describe": "disk /r", "device_type": "disk",
                "probes": [{"streams": 1, "bytes": 1, "bytes_per_second": write}]}],
            "cpu": {"cores": 1, "sample_bytes": 1, "check_bytes_per_second": 4_000_000_000u64,
                "codecs": [{"compression": "none", "bytes_per_second": u64::MAX, "ratio": 1.0},
                    {"compression": "lz4", "bytes_per_second": 2_000_000_000u64, "ratio": 0.3}]},
            "page_cache": {"bytes": 1, "resident_bytes": 0, "fraction": 0.0},
            "io_uring": true
        })
        .to_string()
    }

    #[test]
    fn auto_starts_from_the_newest_calibration_of_its_own_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let repo = recman_catalog::Repository::create(&dir.path().join("repo")).unwrap();
        let db = repo
            .catalog()
            .register_database("db", 7, 150000, "/srv/pg/main")
            .unwrap();
        let ctx = Context {
            repo,
            db,
            pgdata: None,
            conninfo: None,
            tls: None,
        };
        let b = BackupDatabase {
            tune: Some("auto".into()),
            ..Default::default()
        };
        let start = |ctx: &Context| {
            let mut o = BackupOptions {
                tune_auto: true,
                ..Default::default()
            };
            start_from_advice(ctx, &b, &mut o, &recman_engine::NoProgress).unwrap();
            o
        };
        // Another cluster's calibration says nothing about this one.
        let cat = ctx.repo.catalog();
        cat.add_calibration(
            1,
            "/srv/pg/other",
            &calibration("/srv/pg/other", 400_000_000, 50_000_000),
        )
        .unwrap();
        let o = start(&ctx);
        assert_eq!((o.compression, o.tune_notes.len()), (Compression::None, 0));
        // Its own, with an output slower than the disk: auto starts compressed, and says why.
        cat.add_calibration(
            2,
            "/srv/pg/main/",
            &calibration("/srv/pg/main/", 400_000_000, 50_000_000),
        )
        .unwrap();
        let o = start(&ctx);
        assert_eq!(o.compression, Compression::Lz4);
        let n = o
            .tune_notes
            .iter()
            .find(|n| n.setting == "compress_level")
            .expect("the compression taken from advise is a tuning event");
        assert!(
            n.reason.contains("advise") && n.reason.contains("2026-11-26"),
            "{n:?}"
        );
        // Without auto tuning nothing is looked up or changed.
        let mut plain = BackupOptions::default();
        start_from_advice(&ctx, &b, &mut plain, &recman_engine::NoProgress).unwrap();
        assert_eq!(
            (plain.compression, plain.tune_notes.len()),
            (Compression::None, 0)
        );
    }

    #[test]
    fn calibration_dates_read_as_utc() {
        assert_eq!(calibration_date(0), "1970-01-01 00:00 UTC");
        // 2026-11-26 03:00:00 UTC
        assert_eq!(
            calibration_date(1_795_662_000 * 1_000_000),
            "2026-11-26 03:00 UTC"
        );
    }
}
