//! The drivers behind a specification's scheme.

use std::path::Path;
use std::sync::Arc;

use crate::{Media, MediaError};

pub(crate) fn s3(spec: &str, settings: &[(String, String)]) -> Result<Arc<dyn Media>, MediaError> {
    let mut cfg = crate::s3::S3Config::from_url(spec)?;
    cfg.try_apply_env()?;
    // The config file's [s3] keys come last: an explicit file beats ambient variables.
    for (k, v) in settings {
        cfg.set(k, v)?;
    }
    Ok(Arc::new(crate::s3::S3Media::new(cfg)?))
}

pub(crate) fn vtape(spec: &str, dir: &Path, opts: &[&str]) -> Result<Arc<dyn Media>, MediaError> {
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
        let size = || crate::parse_size(v).ok_or_else(|| bad(format!("{k}={v} is not a size")));
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
