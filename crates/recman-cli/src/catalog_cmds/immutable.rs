//! The CLI's side of immutable repositories and of `--repo-as-of` (docs/immutable.md): option
//! parsing and the commands refused while a repository is read as of a time (the reading
//! itself is `recman_command::open`).

use anyhow::{Result, bail};
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
}
