//! Device types (RMAN's DISK and SBT, plus S3): the repository's own medium, and the devices
//! configured with `configure device-type TYPE parms 'SPEC'`. A device is opened once per
//! process, so every channel of a command shares one driver (a tape library's drives are
//! handed out by that one driver).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use recman_catalog::Repository;
use recman_media::Media;

use crate::error::EngineError;

pub const DEVICE_TYPES: [&str; 3] = ["disk", "s3", "sbt"];

/// The catalog setting holding a device type's specification.
pub fn parms_key(device: &str) -> String {
    format!("device-type.{device}.parms")
}

/// The catalog setting holding how many channels a device type gets by default.
pub fn parallelism_key(device: &str) -> String {
    format!("device-type.{device}.parallelism")
}

/// The device type of the repository's own medium.
pub fn repository_device(repo: &Repository) -> &'static str {
    if repo.is_remote() { "s3" } else { "disk" }
}

/// Checks a device type name.
pub fn check_device(device: &str) -> Result<(), EngineError> {
    if DEVICE_TYPES.contains(&device) {
        Ok(())
    } else {
        Err(crate::refusal::Input::UnknownDevice {
            device: device.to_string(),
            known: DEVICE_TYPES.join(", "),
        }
        .into())
    }
}

/// The driver for `device`: the repository's medium when it is the repository's own type,
/// else the configured one.
pub fn media_for(repo: &Repository, device: &str) -> Result<Arc<dyn Media>, EngineError> {
    // A FORMAT directory: a disk device named by where it is, opened like any directory.
    if let Some(dir) = device.strip_prefix(crate::piece_format::DIR_DEVICE_PREFIX) {
        return open_spec(dir);
    }
    check_device(device)?;
    if device == repository_device(repo) {
        return Ok(Arc::clone(repo.media()));
    }
    let Some(spec) = repo.catalog().config(&parms_key(device))? else {
        let example = match device {
            "sbt" => "vtape:/srv/vtape",
            "s3" => "s3://bucket/prefix",
            _ => "/srv/backup",
        };
        return Err(crate::refusal::Input::DeviceNotConfigured {
            device: device.to_string(),
            repo: repo.location().to_string(),
            example: example.to_string(),
        }
        .into());
    };
    // RMAN's PARMS 'ENV=(...)': the media manager's own settings, handed to a plugin's
    // process environment.
    let env = repo
        .catalog()
        .config(&format!("device-type.{device}.env"))?
        .unwrap_or_default();
    // An encrypted repository's copies on other devices are sealed with its keys too.
    Ok(repo.seal_device(open_spec_with_env(&spec, &env)?))
}

static OPEN: OnceLock<Mutex<HashMap<String, Arc<dyn Media>>>> = OnceLock::new();
static S3_SETTINGS: OnceLock<Vec<(String, String)>> = OnceLock::new();

pub use recman_media::{set_azure_settings, set_gcs_settings};

/// Sets, once per process, the `[s3]` keys of the config file that every S3 device gets.
pub fn set_s3_settings(settings: Vec<(String, String)>) {
    let _ = S3_SETTINGS.set(settings);
}

/// Opens the S3 repository `spec` read-only as it was at `at` (`--repo-as-of`), with the
/// process's `[s3]` settings; not shared with [`open_spec`]'s writable driver.
pub fn open_spec_as_of(
    spec: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Arc<dyn Media>, EngineError> {
    let settings = S3_SETTINGS.get().map(Vec::as_slice).unwrap_or_default();
    Ok(recman_media::open_spec_as_of(spec, settings, at)?)
}

/// Opens a device specification once per process.
pub fn open_spec(spec: &str) -> Result<Arc<dyn Media>, EngineError> {
    open_spec_with_env(spec, "")
}

/// As [`open_spec`], with a plugin environment `K=V,K2=V2` (part of what identifies the
/// opened device).
fn open_spec_with_env(spec: &str, env: &str) -> Result<Arc<dyn Media>, EngineError> {
    let key = format!("{spec}\0{env}");
    let mut open = OPEN
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .expect("device table lock");
    if let Some(m) = open.get(&key) {
        return Ok(Arc::clone(m));
    }
    let vars: Vec<(String, String)> = env
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let settings = S3_SETTINGS.get().map(Vec::as_slice).unwrap_or_default();
    let m = recman_media::open_spec(spec, settings, &vars)?;
    open.insert(key, Arc::clone(&m));
    Ok(m)
}
