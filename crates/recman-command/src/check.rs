//! The documented range of every option, applied to a command value whichever front end built
//! it. clap applies the same ranges on the command line (the CLI's value parsers use these
//! functions), so a script statement and its subcommand refuse a value in the same words.

use crate::catalog::*;
use crate::command::*;

/// A refused option value or combination; `option` is the flag's name without dashes.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CheckError {
    #[error(
        "invalid value {value:?} for --{option}: {why}; hint: docs/commands.md gives each option's range"
    )]
    Value {
        option: &'static str,
        value: String,
        why: String,
    },
    #[error(
        "--{option} {rule} --{other}; hint: docs/commands.md describes the options of `recman {command}`"
    )]
    Combination {
        command: String,
        option: &'static str,
        rule: &'static str,
        other: &'static str,
    },
}

/// An inclusive range of a whole-number option.
pub type Range = (u64, u64);

/// The ranges the options share; docs/commands.md lists them.
pub mod ranges {
    use super::Range;
    /// Parallel streams: each channel is a thread with tens of MiB of buffers, so beyond a
    /// few hundred the machine runs out before the storage does.
    pub const CHANNELS: Range = (1, 256);
    pub const FILESPERSET: Range = (1, 1_000_000);
    pub const MAXOPENFILES: Range = (1, 1024);
    /// Kept-backup counts of retention (REDUNDANCY, BACKED UP N TIMES).
    pub const COPIES: Range = (1, 10_000);
    /// At most 256 sections a file, so small sections only help small files.
    pub const SECTION_SIZE: Range = (1 << 20, 1 << 40);
    pub const DAYS: (f64, f64) = (0.0, 36_500.0);
    pub const ARCHIVE_TIMEOUT: Range = (1, 86_400);
    pub const INCREMENTAL_LEVEL: Range = (0, 1);
    pub const IO_SLAVES: Range = (1, 64);
    pub const BUFFERS: Range = (1, 256);
    pub const INPUT_BUFFER_SIZE: Range = (8 << 10, 4 << 20);
    pub const BLKSIZE: Range = (4 << 10, 64 << 20);
    pub const RATE: Range = (1 << 10, 1 << 40);
    pub const PUSH_BATCH: Range = (1, 1024);
    pub const PREFETCH: Range = (0, 1024);
    pub const PREFETCH_PARALLEL: Range = (1, 64);

    /// The range of a backup setting that `configure`, the config file and the catalog share
    /// with the flag of the same name.
    pub fn of_setting(setting: &str) -> Range {
        match setting {
            "channels" => CHANNELS,
            "filesperset" => FILESPERSET,
            "maxopenfiles" => MAXOPENFILES,
            _ => (1, u32::MAX as u64),
        }
    }
}

/// Why `text` is not a whole number in `lo..=hi`, in words that give the range.
pub fn check_count(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from {lo} to {hi}")),
    }
}

/// Why `text` is not a size in `lo..=hi` bytes, in words that give the range.
pub fn check_size(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let range = format!("a size from {} to {}, e.g. 1M", human(lo), human(hi));
    // parse_size saturates: "inf" and 2^64 land above any bound, "nan" at 0.
    match recman_engine::io::parse_size(text) {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("expected {range}")),
    }
}

/// A name, tag or id: not empty, no control characters (they would reach terminals and logs
/// raw), at most 200 characters.
pub fn check_name(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("it is empty".into());
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "it holds the control character {c:?}; hint: use letters, digits and punctuation"
        ));
    }
    if text.chars().count() > 200 {
        return Err("it is longer than 200 characters".into());
    }
    Ok(())
}

/// 8192 -> "8K", 4194304 -> "4M": bounds as users write them.
pub fn human(n: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// Collects the checks of one command.
struct Checker {
    command: String,
}

type Checked = Result<(), CheckError>;

impl Checker {
    fn count(&self, option: &'static str, v: Option<u64>, (lo, hi): Range) -> Checked {
        match v {
            Some(n) if !(lo..=hi).contains(&n) => Err(CheckError::Value {
                option,
                value: n.to_string(),
                why: format!("expected a whole number from {lo} to {hi}"),
            }),
            _ => Ok(()),
        }
    }

    fn size(&self, option: &'static str, v: Option<&str>, (lo, hi): Range) -> Checked {
        match v {
            Some(t) => check_size(t, lo, hi)
                .map(|_| ())
                .map_err(|why| CheckError::Value {
                    option,
                    value: t.to_string(),
                    why,
                }),
            None => Ok(()),
        }
    }

    fn name(&self, option: &'static str, v: Option<&str>) -> Checked {
        match v {
            Some(t) => check_name(t).map_err(|why| CheckError::Value {
                option,
                value: t.to_string(),
                why,
            }),
            None => Ok(()),
        }
    }

    fn days(&self, option: &'static str, v: Option<f64>) -> Checked {
        let (lo, hi) = ranges::DAYS;
        match v {
            Some(d) if !(d.is_finite() && (lo..=hi).contains(&d)) => Err(CheckError::Value {
                option,
                value: d.to_string(),
                why: format!("expected a number of days from {lo} to {hi}"),
            }),
            _ => Ok(()),
        }
    }

    /// `option` may only be given with `other` (`needs`) or never with it (`!needs`).
    fn pair(
        &self,
        option: &'static str,
        given: bool,
        other: &'static str,
        other_given: bool,
        needs: bool,
    ) -> Checked {
        if given && other_given != needs {
            return Err(CheckError::Combination {
                command: self.command.clone(),
                option,
                rule: if needs {
                    "requires"
                } else {
                    "cannot be used with"
                },
                other,
            });
        }
        Ok(())
    }

    fn io(&self, io: &IoOptions) -> Checked {
        self.count("io-slaves", Some(io.io_slaves as u64), ranges::IO_SLAVES)?;
        self.count(
            "input-buffers",
            io.input_buffers.map(|n| n as u64),
            ranges::BUFFERS,
        )?;
        self.size(
            "input-buffer-size",
            io.input_buffer_size.as_deref(),
            ranges::INPUT_BUFFER_SIZE,
        )?;
        self.size("blksize", io.blksize.as_deref(), ranges::BLKSIZE)?;
        self.count(
            "output-buffers",
            Some(io.output_buffers as u64),
            ranges::BUFFERS,
        )?;
        self.size("rate", io.rate.as_deref(), ranges::RATE)
    }

    fn policy(&self, p: &PolicyOverride) -> Checked {
        self.count("redundancy", p.redundancy.map(u64::from), ranges::COPIES)?;
        self.days("recovery-window", p.recovery_window)?;
        self.pair(
            "redundancy",
            p.redundancy.is_some(),
            "recovery-window",
            p.recovery_window.is_some(),
            false,
        )
    }
}

impl Command {
    /// Applies every option's documented range and the rules between options.
    pub fn check(&self) -> Result<(), CheckError> {
        let c = Checker {
            command: self.path().join(" "),
        };
        let n = |v: Option<u32>| v.map(u64::from);
        match self {
            Command::CreateCatalog
            | Command::Show(_)
            | Command::Crosscheck(_)
            | Command::Catalog(_)
            | Command::Configure(_)
            | Command::Run { .. } => Ok(()),
            Command::ListBackup {
                summary, by_file, ..
            } => c.pair("summary", *summary, "by-file", *by_file, false),
            Command::ListArchivelog { .. }
            | Command::ListIncarnation { .. }
            | Command::ListCopy { .. } => Ok(()),
            Command::RegisterDatabase { name } => c.name("name", Some(name)),
            Command::BackupDatabase(b) => {
                c.count("channels", n(b.channels), ranges::CHANNELS)?;
                c.count("filesperset", n(b.filesperset), ranges::FILESPERSET)?;
                c.count("maxopenfiles", n(b.maxopenfiles), ranges::MAXOPENFILES)?;
                c.name("tag", b.tag.as_deref())?;
                c.count(
                    "archive-timeout",
                    Some(b.archive_timeout),
                    ranges::ARCHIVE_TIMEOUT,
                )?;
                c.size(
                    "section-size",
                    b.section_size.as_deref(),
                    ranges::SECTION_SIZE,
                )?;
                c.count(
                    "incremental-level",
                    b.incremental_level.map(u64::from),
                    ranges::INCREMENTAL_LEVEL,
                )?;
                c.pair(
                    "cumulative",
                    b.cumulative,
                    "incremental-level",
                    b.incremental_level.is_some(),
                    true,
                )?;
                c.pair("as-copy", b.as_copy, "tag", b.tag.is_some(), true)?;
                c.pair(
                    "as-copy",
                    b.as_copy,
                    "incremental-level",
                    b.incremental_level.is_some(),
                    false,
                )?;
                c.pair(
                    "for-recover-of-copy",
                    b.for_recover_of_copy,
                    "tag",
                    b.tag.is_some(),
                    true,
                )?;
                c.io(&b.io)
            }
            Command::BackupArchivelog(a) => {
                c.count("not-backed-up", n(a.not_backed_up), ranges::COPIES)?;
                c.count("filesperset", n(a.filesperset), ranges::FILESPERSET)?;
                c.name("tag", a.tag.as_deref())
            }
            Command::SyntheticFull { from, tag, .. } => {
                c.name("from", from.as_deref())?;
                c.name("tag", tag.as_deref())
            }
            Command::BackupBackupset { which, .. } => c.name("which", Some(which)),
            Command::BackupRecoveryArea { .. } => Ok(()),
            Command::RestoreDatabase(r) => {
                c.name("from-tag", r.from_tag.as_deref())?;
                c.name("from-copy", r.from_copy.as_deref())?;
                c.count("channels", Some(u64::from(r.channels)), ranges::CHANNELS)?;
                let untils = [
                    r.until_time.is_some(),
                    r.until_lsn.is_some(),
                    r.until_xid.is_some(),
                ];
                c.pair("until-time", untils[0], "until-lsn", untils[1], false)?;
                c.pair("until-time", untils[0], "until-xid", untils[2], false)?;
                c.pair("until-lsn", untils[1], "until-xid", untils[2], false)?;
                c.pair("preview", r.preview, "validate", r.validate, false)?;
                c.pair(
                    "to",
                    r.to.is_none(),
                    "preview or --validate",
                    r.preview || r.validate,
                    true,
                )?;
                c.pair(
                    "switch-to-copy",
                    r.switch_to_copy,
                    "from-copy",
                    r.from_copy.is_some(),
                    true,
                )
            }
            Command::ValidateDatabase { maxopenfiles, io } => {
                c.count(
                    "maxopenfiles",
                    Some(u64::from(*maxopenfiles)),
                    ranges::MAXOPENFILES,
                )?;
                c.io(io)
            }
            Command::ValidateBackup { which, channels } => {
                c.name("which", which.as_deref())?;
                c.count("channels", n(*channels), ranges::CHANNELS)
            }
            Command::RecoverCopy { tag, .. } => c.name("tag", Some(tag)),
            Command::ArchivePush(p) => {
                c.count("batch", Some(u64::from(p.batch)), ranges::PUSH_BATCH)?;
                c.count("parallel", n(p.parallel), ranges::CHANNELS)
            }
            Command::ArchiveGet(g) => {
                c.count("prefetch", Some(u64::from(g.prefetch)), ranges::PREFETCH)
            }
            Command::ArchivePrefetch(p) => {
                c.count("count", Some(p.count as u64), ranges::PREFETCH)?;
                c.count(
                    "parallel",
                    p.parallel.map(|n| n as u64),
                    ranges::PREFETCH_PARALLEL,
                )
            }
            Command::Report(r) => match r {
                ReportWhat::Io { which, .. } => c.name("which", which.as_deref()),
                ReportWhat::Obsolete { policy, .. } => c.policy(policy),
                ReportWhat::NeedBackup { redundancy, days } => {
                    c.count("redundancy", n(*redundancy), ranges::COPIES)?;
                    c.days("days", *days)?;
                    c.pair(
                        "redundancy",
                        redundancy.is_some(),
                        "days",
                        days.is_some(),
                        false,
                    )
                }
                ReportWhat::Schema { .. } | ReportWhat::Unrecoverable { .. } => Ok(()),
            },
            Command::Delete(d) => match d {
                DeleteWhat::Obsolete { policy, .. } => c.policy(policy),
                DeleteWhat::Expired { .. } => Ok(()),
                DeleteWhat::Backup { which, .. } => c.name("which", Some(which)),
                DeleteWhat::Archivelog { backed_up, .. } => {
                    c.count("backed-up", n(*backed_up), ranges::COPIES)
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_names() {
        assert_eq!(check_count("4", 1, 8), Ok(4));
        for bad in ["0", "9", "-1", "18446744073709551616", "x", ""] {
            assert!(
                check_count(bad, 1, 8).unwrap_err().contains("1 to 8"),
                "{bad}"
            );
        }
        assert_eq!(check_size("1M", 8192, 4 << 20), Ok(1 << 20));
        for bad in [
            "0",
            "-1",
            "4194305",
            "18446744073709551616",
            "inf",
            "nan",
            "1Q",
        ] {
            assert!(
                check_size(bad, 8192, 4 << 20)
                    .unwrap_err()
                    .contains("8K to 4M"),
                "{bad}"
            );
        }
        assert!(check_name("nightly-2026").is_ok());
        assert!(check_name("a\u{1b}[31mb").is_err());
        assert!(check_name("").is_err());
    }

    #[test]
    fn a_command_value_gets_the_flag_ranges_and_rules() {
        let mut b = BackupDatabase {
            filesperset: Some(0),
            ..Default::default()
        };
        let e = Command::BackupDatabase(Box::new(b.clone()))
            .check()
            .unwrap_err();
        assert!(
            e.to_string().contains("--filesperset") && e.to_string().contains("1 to 1000000"),
            "{e}"
        );
        b.filesperset = Some(4);
        b.cumulative = true;
        let e = Command::BackupDatabase(Box::new(b.clone()))
            .check()
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("--cumulative requires --incremental-level"),
            "{e}"
        );
        b.incremental_level = Some(1);
        assert_eq!(Command::BackupDatabase(Box::new(b)).check(), Ok(()));
        let mut r = RestoreDatabase::into(Some("/x".into()));
        r.channels = 0;
        assert!(Command::RestoreDatabase(Box::new(r)).check().is_err());
    }
}
