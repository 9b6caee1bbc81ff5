//! The rules of each command's options: every option's documented range and the rules
//! between options (`--cumulative` requires `--incremental-level`), applied to a command value
//! whichever front end built it.

use crate::catalog::*;
use crate::check::{CheckError, Range, check_name, check_size, ranges};
use crate::command::*;

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

    /// A value of an option the table describes, by its row's kind.
    fn table_value(&self, option: &'static str, v: &str) -> Checked {
        use crate::option_table::{Kind, get};
        match get(option).map(|d| d.kind) {
            Some(Kind::Size(r)) => self.size(option, Some(v), r),
            Some(Kind::Count((lo, hi))) => crate::check::check_count(v, lo, hi)
                .map(|_| ())
                .map_err(|why| CheckError::Value {
                    option,
                    value: v.to_string(),
                    why,
                }),
            _ => Ok(()),
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

    /// A replication slot or application name as PostgreSQL takes it unquoted: lower-case
    /// letters, digits and underscores, at most 63.
    fn slot(&self, option: &'static str, v: Option<&str>) -> Checked {
        match v {
            Some(t)
                if t.is_empty()
                    || t.len() > 63
                    || !t
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
            {
                Err(CheckError::Value {
                    option,
                    value: t.to_string(),
                    why: "expected 1 to 63 lower-case letters, digits and underscores".into(),
                })
            }
            _ => Ok(()),
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
            Command::CreateCatalog { .. }
            | Command::Key(_)
            | Command::Show(_)
            | Command::Crosscheck(_)
            | Command::Catalog(_)
            | Command::Configure(_)
            | Command::Run { .. } => Ok(()),
            Command::CreateRestorePoint { name } => c.name("restore-point", Some(name)),
            Command::ChangeBackup(_) => Ok(()),
            Command::ListBackup {
                summary, by_file, ..
            } => c.pair("summary", *summary, "by-file", *by_file, false),
            Command::ListArchivelog { .. }
            | Command::ListIncarnation { .. }
            | Command::ListCopy { .. }
            | Command::RestoreControlfile { .. }
            | Command::Calibrate { .. }
            | Command::Advise { .. }
            | Command::ListCalibration { .. }
            | Command::Metrics
            | Command::Check { .. }
            | Command::Failure(_)
            | Command::Server { .. }
            | Command::Completions { .. }
            | Command::Man => Ok(()),
            Command::BackupControlfile { format } => check_format(format.as_deref()),
            Command::RegisterDatabase { name, .. } => c.name("name", Some(name)),
            Command::BackupDatabase(b) => c.backup_database(b),
            Command::BackupArchivelog(a) => {
                c.count("not-backed-up", n(a.not_backed_up), ranges::COPIES)?;
                check_format(a.format.as_deref())?;
                c.count("filesperset", n(a.filesperset), ranges::FILESPERSET)?;
                c.name("tag", a.tag.as_deref())
            }
            Command::SyntheticFull { from, tag, .. } => {
                c.name("from", from.as_deref())?;
                c.name("tag", tag.as_deref())
            }
            Command::BackupBackupset { which, .. } => c.name("which", Some(which)),
            Command::BackupRecoveryArea { .. } => Ok(()),
            Command::Drill(d) => c.drill(d),
            Command::DuplicateDatabase(d) => {
                c.name("slot", d.slot.as_deref())?;
                c.count(
                    "channels",
                    Some(u64::from(d.restore.channels)),
                    ranges::CHANNELS,
                )
            }
            Command::ListDrill { .. } => Ok(()),
            Command::RestoreDatabase(r) => c.restore_database(r),
            Command::ValidateDatabase {
                channels,
                maxopenfiles,
                io,
                ..
            } => {
                c.count("channels", n(*channels), ranges::CHANNELS)?;
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
            Command::RecoverTable(t) => c.recover_table(t),
            Command::RecoverBlock { .. } => Ok(()),
            Command::ArchivePush(p) => {
                c.count("batch", Some(u64::from(p.batch)), ranges::PUSH_BATCH)?;
                c.count("parallel", n(p.parallel), ranges::CHANNELS)
            }
            Command::ArchiveGet(g) => {
                c.count("prefetch", Some(u64::from(g.prefetch)), ranges::PREFETCH)
            }
            Command::ArchivePushAhead(p) => c.count("parallel", n(p.parallel), ranges::CHANNELS),
            Command::Receive(r) => c.receive(r),
            Command::ArchivePrefetch(p) => {
                c.count("count", Some(p.count as u64), ranges::PREFETCH)?;
                c.count(
                    "parallel",
                    p.parallel.map(|n| n as u64),
                    ranges::PREFETCH_PARALLEL,
                )
            }
            Command::Report(r) => c.report(r),
            Command::Delete(d) => match d {
                DeleteWhat::Obsolete { policy, .. } => c.policy(policy),
                DeleteWhat::Expired { .. } => Ok(()),
                DeleteWhat::Backup { which, .. } => c.name("which", Some(which)),
                DeleteWhat::Archivelog { backed_up, .. } => {
                    c.count("backed-up", backed_up.map(u64::from), ranges::COPIES)
                }
            },
        }
    }
}

/// The rules of the commands with many options, one command each.
impl Checker {
    fn backup_database(&self, b: &BackupDatabase) -> Checked {
        let n = |v: Option<u32>| v.map(u64::from);
        self.count("channels", n(b.channels), ranges::CHANNELS)?;
        self.count("filesperset", n(b.filesperset), ranges::FILESPERSET)?;
        self.count("maxopenfiles", n(b.maxopenfiles), ranges::MAXOPENFILES)?;
        self.name("tag", b.tag.as_deref())?;
        self.count(
            "archive-timeout",
            Some(b.archive_timeout),
            ranges::ARCHIVE_TIMEOUT,
        )?;
        self.size(
            "section-size",
            b.section_size.as_deref(),
            ranges::SECTION_SIZE,
        )?;
        self.count(
            "incremental-level",
            b.incremental_level.map(u64::from),
            ranges::INCREMENTAL_LEVEL,
        )?;
        self.pair(
            "cumulative",
            b.cumulative,
            "incremental-level",
            b.incremental_level.is_some(),
            true,
        )?;
        self.pair("as-copy", b.as_copy, "tag", b.tag.is_some(), true)?;
        for (name, v) in &b.table {
            self.table_value(name, v)?;
        }
        check_format(b.format.as_deref())?;
        self.pair(
            "as-copy",
            b.as_copy,
            "incremental-level",
            b.incremental_level.is_some(),
            false,
        )?;
        self.pair(
            "for-recover-of-copy",
            b.for_recover_of_copy,
            "tag",
            b.tag.is_some(),
            true,
        )?;
        self.io(&b.io)
    }

    fn drill(&self, d: &Drill) -> Checked {
        self.pair(
            "until-time",
            d.restore.until_time.is_some(),
            "until-lsn",
            d.restore.until_lsn.is_some(),
            false,
        )?;
        self.count(
            "channels",
            Some(u64::from(d.restore.channels)),
            ranges::CHANNELS,
        )
    }

    fn restore_database(&self, r: &RestoreDatabase) -> Checked {
        self.name("from-tag", r.from_tag.as_deref())?;
        self.name("from-copy", r.from_copy.as_deref())?;
        self.count("channels", Some(u64::from(r.channels)), ranges::CHANNELS)?;
        let untils = [
            r.until_time.is_some(),
            r.until_lsn.is_some(),
            r.until_xid.is_some(),
        ];
        self.untils(untils)?;
        self.name("until-restore-point", r.until_restore_point.as_deref())?;
        let point = r.until_restore_point.is_some();
        let other = untils.iter().any(|u| *u);
        self.pair(
            "until-restore-point",
            point,
            "another --until-… option",
            other,
            false,
        )?;
        self.pair("preview", r.preview, "validate", r.validate, false)?;
        for d in &r.include_db {
            self.name("include-db", Some(d))?;
        }
        let partial = !r.include_db.is_empty();
        self.pair(
            "include-db",
            partial,
            "from-copy",
            r.from_copy.is_some(),
            false,
        )?;
        self.pair(
            "include-db",
            partial,
            "preview or --validate",
            r.preview || r.validate,
            false,
        )?;
        self.pair(
            "to",
            r.to.is_none(),
            "preview or --validate",
            r.preview || r.validate,
            true,
        )?;
        self.pair(
            "switch-to-copy",
            r.switch_to_copy,
            "from-copy",
            r.from_copy.is_some(),
            true,
        )
    }

    fn recover_table(&self, t: &RecoverTable) -> Checked {
        self.count("channels", Some(u64::from(t.channels)), ranges::CHANNELS)?;
        self.untils([
            t.until_time.is_some(),
            t.until_lsn.is_some(),
            t.until_xid.is_some(),
        ])
    }

    /// At most one of --until-time, --until-lsn and --until-xid (given: `untils`, in that
    /// order).
    fn untils(&self, untils: [bool; 3]) -> Checked {
        self.pair("until-time", untils[0], "until-lsn", untils[1], false)?;
        self.pair("until-time", untils[0], "until-xid", untils[2], false)?;
        self.pair("until-lsn", untils[1], "until-xid", untils[2], false)
    }

    fn receive(&self, r: &Receive) -> Checked {
        self.count(
            "flush-interval",
            Some(r.flush_interval_ms),
            ranges::FLUSH_INTERVAL_MS,
        )?;
        self.slot("slot", Some(&r.slot))?;
        self.slot("application-name", r.application_name.as_deref())?;
        if !matches!(r.mode.as_str(), "sync" | "async") {
            return Err(CheckError::Value {
                option: "mode",
                value: r.mode.clone(),
                why: "expected sync or async".into(),
            });
        }
        Ok(())
    }

    fn report(&self, r: &ReportWhat) -> Checked {
        match r {
            ReportWhat::Io { which, .. } => self.name("which", which.as_deref()),
            ReportWhat::Obsolete { policy, .. } => self.policy(policy),
            ReportWhat::NeedBackup {
                redundancy,
                days,
                drill_days,
            } => {
                self.count("redundancy", redundancy.map(u64::from), ranges::COPIES)?;
                self.days("days", *days)?;
                self.days("drill-days", *drill_days)?;
                self.pair(
                    "redundancy",
                    redundancy.is_some(),
                    "days",
                    days.is_some(),
                    false,
                )
            }
            ReportWhat::Schema { .. }
            | ReportWhat::Unrecoverable { .. }
            | ReportWhat::Rpo { .. }
            | ReportWhat::Repositories { .. }
            | ReportWhat::Slo { .. }
            | ReportWhat::Costs { .. }
            | ReportWhat::Fleet { .. } => Ok(()),
        }
    }
}

/// A FORMAT template: an absolute directory and a name unique per piece.
fn check_format(t: Option<&str>) -> Result<(), CheckError> {
    match t {
        Some(f) => recman_engine::piece_format::PieceFormat::parse(f)
            .map(|_| ())
            .map_err(|e| CheckError::Value {
                option: "format",
                value: f.to_string(),
                why: e
                    .to_string()
                    .split("; hint:")
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
