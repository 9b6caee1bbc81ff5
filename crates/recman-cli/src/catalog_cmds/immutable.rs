//! The CLI's side of immutable repositories and of `--repo-as-of` (docs/immutable.md): option
//! parsing, the cache a repository read as of a time gets, and the commands refused then.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use chrono::{DateTime, Utc};
use recman_command::Command;
use recman_command::model::{Immutable, LockMode};

const DEFAULT_LOCK_DAYS: f64 = 7.0;

pub fn lock_mode(s: &str) -> Result<LockMode, String> {
    s.parse()
}

/// The marker's setting for `create catalog --immutable`; a retention of 0 is refused by
/// `create catalog` itself, naming the option.
pub fn spec(mode: Option<LockMode>, days: Option<f64>) -> Immutable {
    let days = days.unwrap_or(DEFAULT_LOCK_DAYS);
    Immutable {
        mode: mode.unwrap_or(LockMode::Compliance),
        min_retention_secs: (days * 86_400.0).round() as u64,
    }
}

/// A number of seconds as people read a retention.
pub fn span(secs: u64) -> String {
    if secs.is_multiple_of(86_400) {
        format!("{} day(s)", secs / 86_400)
    } else if secs >= 3_600 {
        format!("{:.1} hour(s)", secs as f64 / 3_600.0)
    } else {
        format!("{secs} second(s)")
    }
}

/// The instant `--repo-as-of` names.
pub fn as_of_time(text: &str) -> Result<DateTime<Utc>> {
    let Some(micros) = recman_command::options::until_micros(Some(text))? else {
        bail!("--repo-as-of {text:?} is not a time; hint: write it as 2026-11-21T14:30:00Z");
    };
    let Some(t) = DateTime::from_timestamp_micros(micros) else {
        bail!("--repo-as-of {text:?} is out of range; hint: write it as 2026-11-21T14:30:00Z");
    };
    if t > Utc::now() {
        bail!(
            "--repo-as-of {text:?} is in the future; hint: name a time before the damage was done"
        );
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

/// Refuses, naming the option, a command that writes the repository while it is read as of
/// a time. The driver refuses any write too; this says so before anything starts.
pub fn refuse_writes(as_of: Option<&str>, c: &Command) -> Result<()> {
    let Some(at) = as_of else {
        return Ok(());
    };
    let writes = matches!(
        c,
        Command::CreateCatalog { .. }
            | Command::RegisterDatabase { .. }
            | Command::CreateRestorePoint { .. }
            | Command::ChangeBackup(_)
            | Command::BackupDatabase(_)
            | Command::BackupArchivelog(_)
            | Command::BackupBackupset { .. }
            | Command::BackupRecoveryArea { .. }
            | Command::BackupControlfile { .. }
            | Command::SyntheticFull { .. }
            | Command::RecoverCopy { .. }
            | Command::Configure(_)
            | Command::Delete(_)
            | Command::Key(_)
            | Command::ArchivePush(_)
            | Command::ArchivePushAhead(_)
            | Command::Receive(_)
    );
    if writes {
        bail!(
            "recman {} writes the repository, which --repo-as-of {at} reads as it was then; hint: run it without --repo-as-of",
            c.path().join(" ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_settings_become_the_marker_entry() {
        assert!(lock_mode("legal-hold").is_err());
        assert_eq!(spec(None, Some(0.0)).min_retention_secs, 0);
        let s = spec(None, Some(0.5));
        assert_eq!(s.mode, LockMode::Compliance);
        assert_eq!(s.min_retention_secs, 43_200);
        assert_eq!(span(43_200), "12.0 hour(s)");
        assert_eq!(span(7 * 86_400), "7 day(s)");
    }

    #[test]
    fn as_of_caches_sit_beside_the_cache_one_per_instant() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let p = as_of_cache(Path::new("/c/recman/b_p"), at);
        assert_eq!(
            p,
            PathBuf::from("/c/recman/b_p.as-of-20270115T080000.000000Z")
        );
    }
}
