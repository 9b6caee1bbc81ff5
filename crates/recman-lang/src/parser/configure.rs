//! CONFIGURE.

use super::{Parser, R};
use crate::ast::*;

impl Parser<'_> {
    fn on_off(&mut self) -> R<OnOff> {
        Ok(match self.one_of(&["ON", "OFF", "CLEAR"])? {
            "ON" => OnOff::On,
            "OFF" => OnOff::Off,
            _ => OnOff::Clear,
        })
    }

    /// `CLEAR` (None) or `TO 'value'`; `4h` and `1G` lex as a number with a suffix and are
    /// taken unquoted too.
    fn value_or_clear(&mut self) -> R<Option<String>> {
        if self.eat_kw("CLEAR") {
            return Ok(None);
        }
        self.expect_kw("TO")?;
        if let crate::lexer::Tok::Number { digits, suffix } = &self.peek().tok {
            let v = format!("{digits}{suffix}");
            self.bump();
            return Ok(Some(v));
        }
        Ok(Some(self.quoted()?))
    }

    /// One of [`MEASURES`] after its first keyword `first`: the rest of its words pick it
    /// (REPOSITORY MIN FREE or REPOSITORY LOCK LIMIT), then `TO 'value'` or CLEAR.
    fn measure(&mut self, first: &str) -> R<Configure> {
        let candidates: Vec<(&str, Vec<&str>)> = MEASURES
            .iter()
            .filter_map(|(name, words)| {
                let mut w = words.split(' ');
                (w.next() == Some(first)).then(|| (*name, w.collect()))
            })
            .collect();
        let Some((name, _)) = candidates.iter().find(|(_, rest)| self.eat_kws(rest)) else {
            // Expecting the first candidate's words names what was wanted in the error.
            self.expect_kws(&candidates[0].1)?;
            return Err(self.unexpected());
        };
        Ok(Configure::Measure {
            name: name.to_string(),
            value: self.value_or_clear()?,
        })
    }

    pub(crate) fn configure(&mut self) -> R<Configure> {
        let k = self.one_of(&[
            "RETENTION",
            "DEFAULT",
            "DEVICE",
            "CHANNEL",
            "AUXILIARY",
            "CONTROLFILE",
            "BACKUP",
            "COMPRESSION",
            "ENCRYPTION",
            "ARCHIVELOG",
            "MAXSETSIZE",
            "DATAFILE",
            "EXCLUDE",
            "SNAPSHOT",
            "RPO",
            "RTO",
            "DRILL",
            "SLOT",
            "REPOSITORY",
            "CERTIFICATE",
        ])?;
        Ok(match k {
            "RETENTION" => self.retention_policy()?,
            "DEFAULT" => {
                self.expect_kws(&["DEVICE", "TYPE"])?;
                if self.eat_kw("CLEAR") {
                    Configure::DefaultDevice(None)
                } else {
                    self.expect_kw("TO")?;
                    Configure::DefaultDevice(Some(self.device()?))
                }
            }
            "DEVICE" => self.device_type_settings()?,
            "CHANNEL" | "AUXILIARY" => self.configure_channel(k == "AUXILIARY")?,
            "CONTROLFILE" => self.controlfile_autobackup()?,
            "BACKUP" if self.is_kw("WINDOW") => self.measure(k)?,
            "BACKUP" => {
                self.expect_kw("OPTIMIZATION")?;
                Configure::Optimization(self.on_off()?)
            }
            "COMPRESSION" => self.compression_algorithm()?,
            "ENCRYPTION" => self.encryption()?,
            "ARCHIVELOG" => self.archivelog_setting()?,
            "MAXSETSIZE" => self.maxsetsize()?,
            "DATAFILE" => {
                self.expect_kw("BACKUP")?;
                self.copies(false)?
            }
            "EXCLUDE" => {
                self.expect_kws(&["FOR", "TABLESPACE"])?;
                let tablespace = self.name()?;
                Configure::Exclude {
                    tablespace,
                    clear: self.eat_kw("CLEAR"),
                }
            }
            "RPO" => {
                self.expect_kw("TARGET")?;
                Configure::RpoTarget(self.value_or_clear()?)
            }
            "RTO" | "DRILL" | "SLOT" | "REPOSITORY" | "CERTIFICATE" => self.measure(k)?,
            _ => {
                self.expect_kws(&["CONTROLFILE", "NAME"])?;
                if self.eat_kw("CLEAR") {
                    Configure::SnapshotControlfile(None)
                } else {
                    self.expect_kw("TO")?;
                    Configure::SnapshotControlfile(Some(self.quoted()?))
                }
            }
        })
    }

    /// `RETENTION POLICY (TO REDUNDANCY n | TO RECOVERY WINDOW OF n DAYS | TO NONE | CLEAR)`.
    fn retention_policy(&mut self) -> R<Configure> {
        self.expect_kw("POLICY")?;
        if self.eat_kw("CLEAR") {
            return Ok(Configure::Retention(None));
        }
        self.expect_kw("TO")?;
        Ok(Configure::Retention(Some(
            match self.one_of(&["REDUNDANCY", "RECOVERY", "NONE"])? {
                "REDUNDANCY" => {
                    self.eat_eq();
                    Retention::Redundancy(self.int()?)
                }
                "RECOVERY" => {
                    self.expect_kws(&["WINDOW", "OF"])?;
                    let n = self.int()?;
                    self.expect_kw("DAYS")?;
                    Retention::WindowDays(n)
                }
                _ => Retention::None,
            },
        )))
    }

    /// `DEVICE TYPE d (CLEAR | PARALLELISM n | BACKUP TYPE TO ...)`: at least one setting.
    fn device_type_settings(&mut self) -> R<Configure> {
        self.expect_kw("TYPE")?;
        let device = self.device()?;
        if self.eat_kw("CLEAR") {
            return Ok(Configure::DeviceType {
                device,
                settings: None,
            });
        }
        let mut s = DeviceSettings::default();
        loop {
            if self.eat_kw("PARALLELISM") {
                s.parallelism = Some(self.int()?);
            } else if self.eat_kw("BACKUP") {
                self.expect_kws(&["TYPE", "TO"])?;
                let compressed = self.eat_kw("COMPRESSED");
                let copy = self.one_of(&["BACKUPSET", "COPY"])? == "COPY";
                s.backup_type = Some((compressed, copy));
            } else {
                break;
            }
        }
        if s == DeviceSettings::default() {
            self.expect_note("\"CLEAR\"");
            return Err(self.unexpected());
        }
        Ok(Configure::DeviceType {
            device,
            settings: Some(s),
        })
    }

    /// `[AUXILIARY] CHANNEL [n] DEVICE TYPE d (CLEAR | operands)`.
    fn configure_channel(&mut self, auxiliary: bool) -> R<Configure> {
        if auxiliary {
            self.expect_kw("CHANNEL")?;
        }
        let number = if self.is_int() {
            Some(self.int()?)
        } else {
            None
        };
        self.expect_kws(&["DEVICE", "TYPE"])?;
        let device = self.device()?;
        let operands = if self.eat_kw("CLEAR") {
            None
        } else {
            let ops = self.channel_ops()?;
            if ops.is_empty() {
                self.expect_note("\"CLEAR\"");
                return Err(self.unexpected());
            }
            Some(ops)
        };
        Ok(Configure::Channel {
            auxiliary,
            number,
            device,
            operands,
        })
    }

    /// `CONTROLFILE AUTOBACKUP (ON | OFF | CLEAR | FORMAT FOR DEVICE TYPE d (TO 'f' | CLEAR))`.
    fn controlfile_autobackup(&mut self) -> R<Configure> {
        self.expect_kw("AUTOBACKUP")?;
        if !self.eat_kw("FORMAT") {
            return Ok(Configure::ControlfileAutobackup(AutobackupSetting::Switch(
                self.on_off()?,
            )));
        }
        self.expect_kw("FOR")?;
        let device = self.device_type()?;
        let format = if self.eat_kw("CLEAR") {
            None
        } else {
            self.expect_kw("TO")?;
            Some(self.quoted()?)
        };
        Ok(Configure::ControlfileAutobackup(
            AutobackupSetting::Format { device, format },
        ))
    }

    /// `COMPRESSION ALGORITHM (CLEAR | 'name' [AS OF RELEASE 'r'] [OPTIMIZE FOR LOAD b])`.
    fn compression_algorithm(&mut self) -> R<Configure> {
        self.expect_kw("ALGORITHM")?;
        if self.eat_kw("CLEAR") {
            return Ok(Configure::Compression(None));
        }
        let algorithm = self.quoted()?;
        let release = if self.eat_kws(&["AS", "OF"]) {
            self.expect_kw("RELEASE")?;
            Some(self.quoted()?)
        } else {
            None
        };
        let optimize_for_load = if self.eat_kw("OPTIMIZE") {
            self.expect_kws(&["FOR", "LOAD"])?;
            Some(self.one_of(&["TRUE", "FALSE"])? == "TRUE")
        } else {
            None
        };
        Ok(Configure::Compression(Some(CompressionSetting {
            algorithm,
            release,
            optimize_for_load,
        })))
    }

    /// `ENCRYPTION ALGORITHM ('name' | CLEAR)` or `ENCRYPTION FOR DATABASE (ON | OFF | CLEAR)`.
    fn encryption(&mut self) -> R<Configure> {
        if !self.eat_kw("ALGORITHM") {
            self.expect_kws(&["FOR", "DATABASE"])?;
            return Ok(Configure::EncryptionForDatabase(self.on_off()?));
        }
        Ok(if self.eat_kw("CLEAR") {
            Configure::EncryptionAlgorithm(None)
        } else {
            Configure::EncryptionAlgorithm(Some(self.quoted()?))
        })
    }

    /// `ARCHIVELOG BACKUP COPIES ...` or `ARCHIVELOG DELETION POLICY (CLEAR | TO NONE | TO
    /// rule ...)`.
    fn archivelog_setting(&mut self) -> R<Configure> {
        if self.eat_kw("BACKUP") {
            return self.copies(true);
        }
        self.expect_kws(&["DELETION", "POLICY"])?;
        if self.eat_kw("CLEAR") {
            return Ok(Configure::ArchivelogDeletionPolicy(None));
        }
        self.expect_kw("TO")?;
        if self.eat_kw("NONE") {
            return Ok(Configure::ArchivelogDeletionPolicy(Some(Vec::new())));
        }
        let mut rules = Vec::new();
        loop {
            let r = if self.eat_kws(&["BACKED", "UP"]) {
                let times = self.int()?;
                self.expect_kws(&["TIMES", "TO"])?;
                DeletionRule::BackedUp {
                    times,
                    device: self.device_type()?,
                }
            } else if self.eat_kws(&["APPLIED", "ON"]) {
                let all = self.eat_kw("ALL");
                self.expect_kw("STANDBY")?;
                DeletionRule::AppliedOnStandby { all }
            } else if self.eat_kws(&["SHIPPED", "TO"]) {
                let all = self.eat_kw("ALL");
                self.expect_kw("STANDBY")?;
                DeletionRule::ShippedToStandby { all }
            } else if rules.is_empty() {
                return Err(self.unexpected());
            } else {
                break;
            };
            rules.push(r);
        }
        Ok(Configure::ArchivelogDeletionPolicy(Some(rules)))
    }

    /// `MAXSETSIZE (CLEAR | TO UNLIMITED | TO size)`.
    fn maxsetsize(&mut self) -> R<Configure> {
        if self.eat_kw("CLEAR") {
            return Ok(Configure::Maxsetsize(None));
        }
        self.expect_kw("TO")?;
        Ok(if self.eat_kw("UNLIMITED") {
            Configure::Maxsetsize(Some(None))
        } else {
            Configure::Maxsetsize(Some(Some(self.size()?)))
        })
    }

    /// `COPIES FOR DEVICE TYPE d (TO n | CLEAR)` after DATAFILE BACKUP / ARCHIVELOG BACKUP.
    fn copies(&mut self, archivelog: bool) -> R<Configure> {
        self.expect_kws(&["COPIES", "FOR"])?;
        let device = self.device_type()?;
        let count = if self.eat_kw("CLEAR") {
            None
        } else {
            self.expect_kw("TO")?;
            let t = self.peek().clone();
            let n = self.int()?;
            if !(1..=4).contains(&n) {
                return Err(
                    self.invalid_at(&t, format!("{n} copies is out of range; hint: use 1 to 4"))
                );
            }
            Some(n)
        };
        Ok(Configure::Copies {
            archivelog,
            device,
            count,
        })
    }
}
