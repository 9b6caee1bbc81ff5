//! CONFIGURE and SHOW ALL. Settings are repository-wide rows of the catalog's config table,
//! checked by [`crate::settings::validate`]; device types are free-form keys
//! (`device-type.sbt.parms`).

use crate::catalog::{ConfigureWhat, ShowWhat};
use crate::check::{check_count, ranges};
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::precedence::{SPECS, device_key};
use crate::say::Say;
use crate::settings::Setting;
use recman_engine::EngineError;
use recman_engine::devices::{check_device, parallelism_key, parms_key};

/// One change CONFIGURE made, reported as it is stored.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigChange {
    /// A setting went back to its default.
    Cleared {
        name: &'static str,
        default: &'static str,
    },
    Set {
        name: &'static str,
        old: Option<String>,
        value: String,
    },
    /// Every setting of a device type was removed.
    DeviceCleared { device: String },
    /// `what` (parms, parallelism, blksize, env) of a device type; `describe` says what a
    /// PARMS specification opens.
    DeviceSet {
        device: String,
        what: &'static str,
        value: String,
        describe: Option<String>,
    },
    /// The device type backups go to without --device-type (`clear` as given).
    DefaultDevice { value: String },
    /// The changes above are stored.
    Stored,
}

/// How SHOW ALL is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShowFormat {
    Text,
    Json,
    /// As statements of the language.
    Rman,
}

/// SHOW ALL's answer: every setting with its source, and the device rows of the catalog.
#[derive(Debug)]
pub struct ShownSettings {
    pub repository: String,
    pub settings: Vec<Setting>,
    /// The catalog's `device-type.*` and `default-device-type` rows, as stored.
    pub catalog_rows: Vec<(String, String)>,
    pub format: ShowFormat,
}

fn invalid(s: String) -> ExecError {
    EngineError::Invalid(s).into()
}

pub fn configure(
    what: ConfigureWhat,
    e: &dyn Env,
    p: &mut (impl Say<ConfigChange> + ?Sized),
) -> Result<(), ExecError> {
    let (name, words) = match what {
        ConfigureWhat::DeviceType { device, value } => {
            return configure_device(&device, &value, e, p);
        }
        ConfigureWhat::DefaultDeviceType { value } => {
            return configure_default_device(&value, e, p);
        }
        ConfigureWhat::RetentionPolicy { value } => ("retention-policy", value),
        ConfigureWhat::Channels { value } => ("channels", vec![value]),
        ConfigureWhat::Compression { value } => ("compression", vec![value]),
        ConfigureWhat::Filesperset { value } => ("filesperset", vec![value]),
        ConfigureWhat::Maxopenfiles { value } => ("maxopenfiles", vec![value]),
        ConfigureWhat::SectionSize { value } => ("section-size", vec![value]),
        ConfigureWhat::BackupOptimization { value } => ("backup-optimization", vec![value]),
        ConfigureWhat::ArchivelogDeletionPolicy { value } => ("archivelog-deletion-policy", value),
        ConfigureWhat::Tuning { value } => ("tuning", vec![value]),
        ConfigureWhat::ImportedRetention { value } => ("imported-retention", vec![value]),
        ConfigureWhat::RpoTarget { value } => ("rpo-target", vec![value]),
        ConfigureWhat::Named { name, value } => (name, vec![value]),
        ConfigureWhat::BackupCopies { value } => ("backup-copies", vec![value]),
        ConfigureWhat::IncrementalForever { value } => ("incremental-forever", value),
    };
    let spec = SPECS.iter().find(|s| s.name == name).expect("a spec");
    let repo = env(e.repository())?;
    let cat = repo.catalog();
    if words.len() == 1 && words[0].eq_ignore_ascii_case("clear") {
        cat.clear_config(spec.key).map_err(EngineError::from)?;
        p.say(ConfigChange::Cleared {
            name,
            default: spec.default,
        });
        return Ok(());
    }
    let value = crate::settings::validate(name, &words)?;
    let old = cat.config(spec.key).map_err(EngineError::from)?;
    cat.set_config(spec.key, &value)
        .map_err(EngineError::from)?;
    p.say(ConfigChange::Set { name, old, value });
    p.say(ConfigChange::Stored);
    Ok(())
}

/// A device block size: a power of two from 16K to 16M, as `524288`, `512K` or `1M`.
pub fn parse_blksize(text: &str) -> Result<u64, EngineError> {
    let n = recman_engine::io::parse_size(text)
        .map_err(|e| EngineError::Invalid(format!("blksize: {e}")))?;
    if !n.is_power_of_two() || !(16 << 10..=16 << 20).contains(&n) {
        return Err(EngineError::Invalid(format!(
            "blksize {text}: a device block size is a power of two from 16K to 16M; hint: e.g. 256K or 1M"
        )));
    }
    Ok(n)
}

/// A device environment `K=V,K2=V2` (spaces around items dropped), checked and normalized.
pub fn parse_env(text: &str) -> Result<String, EngineError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, _)| !k.is_empty() && !k.contains(char::is_whitespace))
            .ok_or_else(|| {
                EngineError::Invalid(format!("env item {item:?} is not NAME=VALUE; hint: e.g. `env NB_ORA_CLASS=pg_backup,NB_ORA_POLICY=daily`"))
            })?;
        out.push(format!("{k}={v}"));
    }
    if out.is_empty() {
        return Err(EngineError::Invalid(
            "env needs at least one NAME=VALUE; hint: `recman configure device-type sbt clear` removes the setting".into(),
        ));
    }
    Ok(out.join(","))
}

fn configure_device(
    device: &str,
    words: &[String],
    e: &dyn Env,
    p: &mut (impl Say<ConfigChange> + ?Sized),
) -> Result<(), ExecError> {
    check_device(device)?;
    let repo = env(e.repository())?;
    let cat = repo.catalog();
    let cat_err = |e: recman_catalog::CatalogError| ExecError::from(EngineError::from(e));
    if words.len() == 1 && words[0].eq_ignore_ascii_case("clear") {
        for k in [
            parms_key(device),
            parallelism_key(device),
            device_key(device, "blksize"),
            device_key(device, "env"),
        ] {
            cat.clear_config(&k).map_err(cat_err)?;
        }
        p.say(ConfigChange::DeviceCleared {
            device: device.to_string(),
        });
        return Ok(());
    }
    let mut it = words.iter();
    let mut changed = false;
    while let Some(w) = it.next() {
        let set =
            |what: &'static str, value: String, describe: Option<String>| ConfigChange::DeviceSet {
                device: device.to_string(),
                what,
                value,
                describe,
            };
        match w.to_lowercase().as_str() {
            "parms" => {
                let spec = it.next().ok_or_else(|| {
                    invalid("parms needs a value; hint: e.g. `recman configure device-type sbt parms 'vtape:/srv/vtape'`".into())
                })?;
                // Opened now so a wrong specification is refused here, not at backup time.
                let media = recman_engine::devices::open_spec(spec)?;
                cat.set_config(&parms_key(device), spec).map_err(cat_err)?;
                p.say(set("parms", spec.clone(), Some(media.describe())));
            }
            "parallelism" => {
                let (lo, hi) = ranges::CHANNELS;
                let n = check_count(it.next().map(String::as_str).unwrap_or(""), lo, hi)
                    .map_err(|e| invalid(format!("parallelism: {e}; hint: e.g. `recman configure device-type sbt parallelism 4`")))?;
                cat.set_config(&parallelism_key(device), &n.to_string())
                    .map_err(cat_err)?;
                p.say(set("parallelism", n.to_string(), None));
            }
            "blksize" => {
                let v = it.next().ok_or_else(|| {
                    invalid("blksize needs a size; hint: e.g. `recman configure device-type sbt blksize 1M`".into())
                })?;
                let n = parse_blksize(v)?;
                cat.set_config(&device_key(device, "blksize"), &n.to_string())
                    .map_err(cat_err)?;
                p.say(set("blksize", n.to_string(), None));
            }
            "env" => {
                let v = it.next().ok_or_else(|| {
                    invalid("env needs K=V[,K=V...]; hint: e.g. `recman configure device-type sbt env NB_ORA_CLASS=pg_backup`".into())
                })?;
                let env = parse_env(v)?;
                cat.set_config(&device_key(device, "env"), &env)
                    .map_err(cat_err)?;
                p.say(set("env", env, None));
            }
            other => {
                return Err(invalid(format!(
                    "configure device-type {device}: unknown word {other:?}; hint: use `parms SPEC`, `parallelism N`, `blksize N`, `env K=V,...` or `clear`"
                )));
            }
        }
        changed = true;
    }
    if changed {
        p.say(ConfigChange::Stored);
    }
    Ok(())
}

fn configure_default_device(
    value: &str,
    e: &dyn Env,
    p: &mut (impl Say<ConfigChange> + ?Sized),
) -> Result<(), ExecError> {
    let repo = env(e.repository())?;
    if value.eq_ignore_ascii_case("clear") {
        repo.catalog()
            .clear_config("default-device-type")
            .map_err(EngineError::from)?;
    } else {
        let v = value.to_lowercase();
        check_device(&v)?;
        repo.catalog()
            .set_config("default-device-type", &v)
            .map_err(EngineError::from)?;
    }
    p.say(ConfigChange::DefaultDevice {
        value: value.to_string(),
    });
    Ok(())
}

pub fn show(
    what: ShowWhat,
    e: &dyn Env,
    p: &mut (impl Say<ShownSettings> + ?Sized),
) -> Result<(), ExecError> {
    let ShowWhat::All { json, rman } = what;
    let format = match (json, rman) {
        (_, true) => ShowFormat::Rman,
        (true, false) => ShowFormat::Json,
        (false, false) => ShowFormat::Text,
    };
    let repo = env(e.repository())?;
    let settings = crate::settings::resolve_all(&repo, &env(e.config_file_settings())?)?;
    let catalog_rows = repo
        .catalog()
        .config_all()
        .map_err(EngineError::from)?
        .into_iter()
        .filter(|(k, _)| k.starts_with("device-type.") || k == "default-device-type")
        .collect();
    p.say(ShownSettings {
        repository: repo.location().to_string(),
        settings,
        catalog_rows,
        format,
    });
    Ok(())
}

/// What CONFIGURE stored under the catalog setting `key` (None: not configured), for a front
/// end that checks its own words against it (the language's ALLOCATE CHANNEL ... PARMS).
pub fn stored(repo: &recman_catalog::Repository, key: &str) -> Result<Option<String>, ExecError> {
    Ok(repo.catalog().config(key).map_err(EngineError::from)?)
}

/// The device type that is the repository itself (`disk` or `s3`), which a second-tier copy
/// must not go to.
pub fn own_device(repo: &recman_catalog::Repository) -> &'static str {
    recman_engine::devices::repository_device(repo)
}
