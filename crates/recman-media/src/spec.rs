//! Device specifications as users write them (`--repo`, `configure device-type ... parms`):
//!
//! - `/srv/backup` or `disk:/srv/backup`: a directory;
//! - `s3://bucket/prefix`: S3-compatible storage, configured by the AWS variables;
//! - `vtape:/srv/vtape[,drives=N,blksize=SIZE,rate=SIZE,capacity=SIZE,cartridges=N]`: the
//!   virtual tape library, created with those settings when the directory has none;
//! - `plugin:PROGRAM ARG...`: an external media-manager plugin.

use std::path::Path;
use std::sync::Arc;

use crate::{Media, MediaError};
#[path = "spec_drivers.rs"]
mod drivers;

/// Opens the device a specification names. `s3_settings` are keys of the config file's `[s3]`
/// section, applied over the AWS variables.
pub fn open_spec(
    spec: &str,
    s3_settings: &[(String, String)],
) -> Result<Arc<dyn Media>, MediaError> {
    let bad = |why: &str| {
        MediaError::permanent(spec, "", why).with_hint(
            "write /DIR, s3://BUCKET/PREFIX, vtape:/DIR[,drives=N,blksize=256K] or plugin:PROGRAM ARGS",
        )
    };
    if spec.starts_with("s3://") {
        return drivers::s3(spec, s3_settings);
    }
    if let Some(rest) = spec.strip_prefix("vtape:") {
        let mut parts = rest.split(',');
        let dir = Path::new(parts.next().unwrap_or_default());
        if dir.as_os_str().is_empty() {
            return Err(bad("a vtape device needs a directory"));
        }
        let opts: Vec<&str> = parts.collect();
        return drivers::vtape(spec, dir, &opts);
    }
    if let Some(rest) = spec.strip_prefix("plugin:") {
        let argv: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
        if argv.is_empty() {
            return Err(bad("a plugin device needs a program"));
        }
        return Ok(Arc::new(crate::plugin::PluginMedia::new(argv)?));
    }
    let dir = spec.strip_prefix("disk:").unwrap_or(spec);
    if !dir.starts_with('/') {
        return Err(bad("a disk device needs an absolute directory"));
    }
    crate::disk::create_dir_all_durable(Path::new(dir))
        .map_err(|e| MediaError::io(spec, "", "create directory", e))?;
    Ok(Arc::new(crate::disk::DiskMedia::new(Path::new(dir))?))
}

/// "256K", "16M", "1G" or plain bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}
