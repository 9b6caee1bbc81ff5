//! `--repo-as-of`: the instant an immutable repository is read as of, and the catalog cache
//! of that reading.

use crate::open::error::OpenError;
use chrono::{DateTime, Utc};
use recman_engine::RecoveryTarget;
use std::path::{Path, PathBuf};

/// The instant `--repo-as-of` names.
pub fn as_of_time(text: &str) -> Result<DateTime<Utc>, OpenError> {
    let RecoveryTarget::Time { micros, .. } = RecoveryTarget::parse_time(text)? else {
        return Err(OpenError::AsOfNotATime(text.to_string()));
    };
    let Some(t) = DateTime::from_timestamp_micros(micros) else {
        return Err(OpenError::AsOfOutOfRange(text.to_string()));
    };
    if t > Utc::now() {
        return Err(OpenError::AsOfFuture(text.to_string()));
    }
    Ok(t)
}

/// The cache of a repository read as of `at`: beside the repository's own cache, which may
/// have been filled from what an attacker left and is never read then. One per instant, so
/// the restored cluster's archive-get calls reuse what the restore rebuilt.
pub fn as_of_cache(cache: &Path, at: DateTime<Utc>) -> PathBuf {
    let stamp = at.format("%Y%m%dT%H%M%S%.6fZ").to_string();
    let mut name = cache
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cache".to_string());
    name.push_str(&format!(".as-of-{stamp}"));
    cache.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_of_caches_sit_beside_the_cache_one_per_instant() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let p = as_of_cache(Path::new("/c/recman/b_p"), at);
        assert_eq!(
            p,
            PathBuf::from("/c/recman/b_p.as-of-20270115T080000.000000Z")
        );
    }

    #[test]
    fn a_time_to_come_is_refused() {
        let e = as_of_time("2999-01-01T00:00:00Z").unwrap_err().to_string();
        assert!(e.contains("is in the future"), "{e}");
    }
}
