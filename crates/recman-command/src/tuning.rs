//! CALIBRATE, ADVISE, LIST CALIBRATION and LIST DRILL: the seeds' tuning method and the
//! drill records as commands. The measurements and the method are the engine's
//! (`recman_engine::tuning`); this runs them, keeps calibrations in the catalog and hands the
//! results to the printer.

use crate::catalog::ConfigureWhat;
use crate::configure::{self, ConfigChange};
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::say::Say;
use recman_catalog::{CalibrationRecord, DrillRecord};
use recman_engine::tuning::advise::Advice;
use recman_engine::tuning::calibrate::{CalibrateOptions, Calibration};
use recman_engine::tuning::overhead::Learned;
use recman_engine::{Context, EngineError};

#[derive(Debug)]
pub enum TuningOutcome {
    Calibrated {
        calibration: Box<Calibration>,
        json: bool,
    },
    Advised {
        advice: Box<Advice>,
        json: bool,
    },
    /// LIST CALIBRATION: each stored calibration (its body as stored, JSON).
    Calibrations {
        records: Vec<CalibrationRecord>,
        json: bool,
    },
    /// LIST DRILL: each recorded drill of the database.
    Drills {
        records: Vec<DrillRecord>,
        json: bool,
    },
}

pub(crate) fn cat_err(e: recman_catalog::CatalogError) -> ExecError {
    EngineError::from(e).into()
}

pub fn calibrate(
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<TuningOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let pgdata = ctx
        .pgdata
        .clone()
        .or_else(|| (!ctx.db.pgdata.is_empty()).then(|| ctx.db.pgdata.clone().into()))
        .ok_or_else(|| {
            EngineError::Invalid(
                "calibrate needs the data directory; hint: pass --pgdata DIR".into(),
            )
        })?;
    let c = recman_engine::tuning::calibrate::calibrate(
        &pgdata,
        &output_devices(&ctx.repo)?,
        &CalibrateOptions::default(),
    )?;
    let body = serde_json::to_string(&c).map_err(|e| EngineError::Internal(e.to_string()))?;
    ctx.repo
        .catalog()
        .add_calibration(c.taken_at, &c.pgdata, &body)
        .map_err(cat_err)?;
    p.say(TuningOutcome::Calibrated {
        calibration: Box::new(c),
        json,
    });
    Ok(())
}

/// Outputs to calibrate: a device type's name and its medium.
type Outputs = Vec<(String, std::sync::Arc<dyn recman_catalog::Media>)>;

/// The repository's own medium and every device type configured with PARMS: each output a
/// backup may be sent to.
fn output_devices(repo: &recman_catalog::Repository) -> Result<Outputs, ExecError> {
    use recman_engine::devices::{DEVICE_TYPES, media_for, parms_key, repository_device};
    let own = repository_device(repo);
    let mut out = vec![(own.to_string(), std::sync::Arc::clone(repo.media()))];
    for dt in DEVICE_TYPES.into_iter().filter(|d| *d != own) {
        if repo
            .catalog()
            .config(&parms_key(dt))
            .map_err(cat_err)?
            .is_some()
        {
            out.push((dt.to_string(), media_for(repo, dt)?));
        }
    }
    Ok(out)
}

/// The device type a plain `backup database` writes to: the configured default, else the
/// repository's own.
pub(crate) fn backup_device_type(repo: &recman_catalog::Repository) -> Result<String, ExecError> {
    Ok(
        match repo
            .catalog()
            .config("default-device-type")
            .map_err(cat_err)?
        {
            Some(d) => d.to_lowercase(),
            None => recman_engine::devices::repository_device(repo).to_string(),
        },
    )
}

/// advise's steps for a backup to `device_type`; a calibration from before device types were
/// probed has one output, the repository's. `learned`, where a database is registered, lends
/// the CPU rates and the start and stop costs of its recent backups.
pub(crate) fn advice_for(
    mut c: Calibration,
    device_type: &str,
    window: Option<f64>,
    learned: Learned,
) -> Advice {
    if c.outputs.iter().any(|o| o.device_type == device_type) {
        c.outputs.retain(|o| o.device_type == device_type);
    }
    c.cpu.learned = learned.channel_cpu;
    recman_engine::tuning::advise::advise(&c, window, device_type == "sbt")
        .with_history(&c, &learned.runs)
        .with_fixed_cost(learned.fixed_seconds)
}

/// What the registered database's recent backups teach advise (nothing without a database).
pub(crate) fn learned_of(ctx: Option<&Context>) -> Result<Learned, ExecError> {
    match ctx {
        Some(ctx) => {
            recman_engine::tuning::overhead::learn(ctx.repo.catalog(), ctx.db.id).map_err(cat_err)
        }
        None => Ok(Learned::default()),
    }
}

/// H:MM or H:MM:SS as seconds.
pub fn window_seconds(w: &str) -> Result<f64, EngineError> {
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
        _ => Err(EngineError::Invalid(format!(
            "backup window {w:?} is not H:MM or H:MM:SS; hint: e.g. `--window 2:00`"
        ))),
    }
}

/// The newest calibration of the catalog.
fn newest(repo: &recman_catalog::Repository) -> Result<Calibration, ExecError> {
    let rec = repo
        .catalog()
        .calibrations()
        .map_err(cat_err)?
        .pop()
        .ok_or_else(|| {
            EngineError::NotFound(format!(
                "no calibration in the catalog of {}; hint: run `recman calibrate` first",
                repo.location()
            ))
        })?;
    serde_json::from_str(&rec.body)
        .map_err(|source| ExecError::BadCalibration { id: rec.id, source })
}

pub fn advise(
    window: Option<&str>,
    json: bool,
    apply: bool,
    e: &dyn Env,
    p: &mut (impl Say<TuningOutcome> + Say<ConfigChange> + ?Sized),
) -> Result<(), ExecError> {
    let window = window.map(window_seconds).transpose()?;
    let repo = env(e.repository())?;
    let c = newest(&repo)?;
    let device_type = backup_device_type(&repo)?;
    // The start and stop costs come from the registered database's backups; a repository
    // without one (calibrated before its first registration) predicts the data phase only.
    let ctx = e.context().ok();
    let a = advice_for(c, &device_type, window, learned_of(ctx.as_ref())?);
    let settings = a.settings.clone();
    p.say(TuningOutcome::Advised {
        advice: Box::new(a),
        json,
    });
    if apply {
        // The settings CONFIGURE knows, stored as `configure` would.
        let s = settings;
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
            configure::configure(what, e, p)?;
        }
    }
    Ok(())
}

pub fn list_calibration(
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<TuningOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let repo = env(e.repository())?;
    let records = repo.catalog().calibrations().map_err(cat_err)?;
    p.say(TuningOutcome::Calibrations { records, json });
    Ok(())
}

pub fn list_drill(
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<TuningOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let records = ctx.repo.catalog().drills(ctx.db.id).map_err(cat_err)?;
    p.say(TuningOutcome::Drills { records, json });
    Ok(())
}
