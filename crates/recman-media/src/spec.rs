//! Device specifications as users write them (`--repo`, `configure device-type ... parms`):
//!
//! - `/srv/backup` or `disk:/srv/backup`: a directory;
//! - `s3://bucket/prefix`: S3-compatible storage, configured by the AWS variables;
//! - `azure://container/prefix`: Azure Blob Storage, configured by the AZURE_* variables;
//! - `gs://bucket/prefix`: Google Cloud Storage, configured by GOOGLE_APPLICATION_CREDENTIALS
//!   and the config file's `[gcs]` section;
//! - `vtape:/srv/vtape[,drives=N,blksize=SIZE,rate=SIZE,capacity=SIZE,cartridges=N]`: the
//!   virtual tape library, created with those settings when the directory has none;
//! - `plugin:PROGRAM ARG...`: an external media-manager plugin.

use std::path::Path;
use std::sync::Arc;

use crate::error::MediaError;
use crate::media::Media;
use crate::size::parse_size;

/// Opens the device a specification names. `s3_settings` are keys of the config file's `[s3]`
/// section, applied over the AWS variables; `env` is a plugin's environment (RMAN's
/// PARMS 'ENV=(...)'), ignored by the other drivers.
pub fn open_spec(
    spec: &str,
    s3_settings: &[(String, String)],
    env: &[(String, String)],
) -> Result<Arc<dyn Media>, MediaError> {
    let bad = |why: &str| {
        MediaError::permanent(spec, "", why).with_hint(
            "write /DIR, s3://BUCKET/PREFIX, azure://CONTAINER/PREFIX, gs://BUCKET/PREFIX, vtape:/DIR[,drives=N,blksize=256K] or plugin:PROGRAM ARGS",
        )
    };
    if spec.starts_with("s3://") {
        return open_s3(spec, s3_settings);
    }
    if spec.starts_with("azure://") {
        return open_azure(spec, &azure_settings());
    }
    if spec.starts_with("gs://") {
        return open_gcs(spec, &gcs_settings());
    }
    if let Some(rest) = spec.strip_prefix("vtape:") {
        let mut parts = rest.split(',');
        let dir = Path::new(parts.next().unwrap_or_default());
        if dir.as_os_str().is_empty() {
            return Err(bad("a vtape device needs a directory"));
        }
        let opts: Vec<&str> = parts.collect();
        return open_vtape(spec, dir, &opts);
    }
    if let Some(rest) = spec.strip_prefix("plugin:") {
        let argv: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
        if argv.is_empty() {
            return Err(bad("a plugin device needs a program"));
        }
        return Ok(Arc::new(crate::plugin::PluginMedia::with_env(
            argv,
            env.to_vec(),
        )?));
    }
    let dir = spec.strip_prefix("disk:").unwrap_or(spec);
    if !dir.starts_with('/') {
        return Err(bad("a disk device needs an absolute directory"));
    }
    crate::disk::create_dir_all_durable(Path::new(dir))
        .map_err(|e| MediaError::io(spec, "", "create directory", e))?;
    Ok(Arc::new(crate::disk::DiskMedia::new(Path::new(dir))?))
}

fn open_s3(spec: &str, settings: &[(String, String)]) -> Result<Arc<dyn Media>, MediaError> {
    Ok(Arc::new(s3_media(spec, settings)?))
}

fn s3_media(spec: &str, settings: &[(String, String)]) -> Result<crate::s3::S3Media, MediaError> {
    let mut cfg = crate::s3::S3Config::from_url(spec)?;
    cfg.try_apply_env()?;
    // The config file's [s3] keys come last: an explicit file beats ambient variables.
    for (k, v) in settings {
        cfg.set(k, v)?;
    }
    crate::s3::S3Media::new(cfg)
}

/// Opens the S3 repository `spec` read-only, as it was at `at`: each object's newest version
/// written before then (`--repo-as-of`). Only a versioned S3 bucket keeps what that needs.
pub fn open_spec_as_of(
    spec: &str,
    s3_settings: &[(String, String)],
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Arc<dyn Media>, MediaError> {
    if !spec.starts_with("s3://") {
        return Err(MediaError::permanent(
            spec,
            "",
            "a repository can be read as of a time only in a versioned s3 bucket",
        )
        .with_op("read as of")
        .with_hint("leave out --repo-as-of, or use it with an s3:// repository whose bucket has versioning or Object Lock"));
    }
    Ok(Arc::new(s3_media(spec, s3_settings)?.as_of(at)?))
}

static AZURE_SETTINGS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Sets, once per process, the `[azure]` keys of the config file every Azure device gets.
pub fn set_azure_settings(settings: Vec<(String, String)>) {
    let _ = AZURE_SETTINGS.set(settings);
}

fn azure_settings() -> Vec<(String, String)> {
    AZURE_SETTINGS.get().cloned().unwrap_or_default()
}

fn open_azure(spec: &str, settings: &[(String, String)]) -> Result<Arc<dyn Media>, MediaError> {
    let mut cfg = crate::azure::AzureConfig::from_url(spec)?;
    cfg.try_apply_env()?;
    for (k, v) in settings {
        cfg.set(k, v)?;
    }
    Ok(Arc::new(crate::azure::open(cfg)?))
}

static GCS_SETTINGS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Sets, once per process, the `[gcs]` keys of the config file every GCS device gets.
pub fn set_gcs_settings(settings: Vec<(String, String)>) {
    let _ = GCS_SETTINGS.set(settings);
}

fn gcs_settings() -> Vec<(String, String)> {
    GCS_SETTINGS.get().cloned().unwrap_or_default()
}

fn open_gcs(spec: &str, settings: &[(String, String)]) -> Result<Arc<dyn Media>, MediaError> {
    let mut cfg = crate::gcs::GcsConfig::from_url(spec)?;
    cfg.try_apply_env()?;
    // The config file's [gcs] keys come last: an explicit file beats ambient variables.
    for (k, v) in settings {
        cfg.set(k, v)?;
    }
    Ok(Arc::new(crate::gcs::open(cfg)?))
}

fn open_vtape(spec: &str, dir: &Path, opts: &[&str]) -> Result<Arc<dyn Media>, MediaError> {
    let bad = |why: String| {
        MediaError::permanent(spec, "", &why)
            .with_hint("options are drives=N, cartridges=N, blksize=SIZE, rate=SIZE, capacity=SIZE, compression=on|off")
    };
    // The options describe the library to create; an existing one keeps its library.json.
    if dir.join("library.json").exists() {
        return Ok(Arc::new(crate::vtape::VtapeMedia::open(dir)?));
    }
    let mut cfg = crate::vtape::VtapeConfig::default();
    for kv in opts {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad(format!("vtape option {kv:?} is not KEY=VALUE")))?;
        let size = || parse_size(v).ok_or_else(|| bad(format!("{k}={v} is not a size")));
        let count = || {
            v.parse::<usize>()
                .map_err(|_| bad(format!("{k}={v} is not a number")))
        };
        match k {
            "drives" => cfg.drives = count()?,
            "cartridges" => cfg.cartridges = count()?,
            "blksize" => cfg.block_size = size()? as usize,
            "rate" => cfg.native_rate = size()? as f64,
            "capacity" => cfg.cartridge_capacity = size()?,
            "compression" => cfg.hardware_compression = matches!(v, "on" | "true" | "yes"),
            _ => return Err(bad(format!("unknown vtape option {k:?}"))),
        }
    }
    Ok(Arc::new(crate::vtape::VtapeMedia::create_library(
        dir, &cfg,
    )?))
}
