//! RESTORE, RECOVER, VALIDATE and SET.

use super::{Parser, R};
use crate::ast::*;

impl Parser<'_> {
    pub(crate) fn restore(&mut self) -> R<Restore> {
        let object = match self.one_of(&[
            "DATABASE",
            "TABLESPACE",
            "DATAFILE",
            "CONTROLFILE",
            "SPFILE",
            "ARCHIVELOG",
            "STANDBY",
        ])? {
            "DATABASE" => {
                let mut skip = Vec::new();
                if self.eat_kw("SKIP") {
                    self.eat_kw("FOREVER");
                    self.expect_kw("TABLESPACE")?;
                    skip = self.names()?;
                }
                RestoreObject::Database {
                    skip_tablespaces: skip,
                }
            }
            "TABLESPACE" => RestoreObject::Tablespace(self.names()?),
            "DATAFILE" => RestoreObject::Datafile(self.file_refs()?),
            "CONTROLFILE" => RestoreObject::Controlfile {
                from: self.restore_from_autobackup()?,
            },
            "SPFILE" => RestoreObject::Spfile {
                from: self.restore_from_autobackup()?,
            },
            "ARCHIVELOG" => RestoreObject::Archivelog(self.arch_spec()?),
            _ => {
                self.expect_kw("CONTROLFILE")?;
                RestoreObject::StandbyControlfile
            }
        };
        let mut options = Vec::new();
        loop {
            let o = if self.eat_kw("UNTIL") {
                RestoreOpt::Until(self.until_clause()?)
            } else if self.eat_kw("FROM") {
                match self.one_of(&["TAG", "BACKUPSET", "DATAFILECOPY"])? {
                    "TAG" => {
                        self.eat_eq();
                        RestoreOpt::FromTag(self.name()?)
                    }
                    "BACKUPSET" => RestoreOpt::FromBackupset,
                    _ => RestoreOpt::FromDatafilecopy,
                }
            } else if self.eat_kw("PREVIEW") {
                self.eat_kw("RECALL");
                RestoreOpt::Preview {
                    summary: self.eat_kw("SUMMARY"),
                }
            } else if self.eat_kw("VALIDATE") {
                self.eat_kw("HEADER");
                RestoreOpt::Validate
            } else if self.eat_kws(&["CHECK", "LOGICAL"]) {
                RestoreOpt::CheckLogical
            } else if self.eat_kw("FORCE") {
                RestoreOpt::Force
            } else if self.is_kw("DEVICE") {
                RestoreOpt::DeviceType(self.device_type()?)
            } else if self.eat_kw("CHANNEL") {
                RestoreOpt::Channel(self.name()?)
            } else if self.eat_kw("TO") {
                RestoreOpt::To(self.quoted()?)
            } else {
                break;
            };
            options.push(o);
        }
        Ok(Restore { object, options })
    }

    /// `[TO 'x'] FROM AUTOBACKUP | FROM 'x'` after CONTROLFILE or SPFILE (kept as one string).
    fn restore_from_autobackup(&mut self) -> R<Option<String>> {
        if self.kw_at(0, "FROM") && (self.kw_at(1, "AUTOBACKUP")) {
            self.bump();
            self.bump();
            return Ok(Some("AUTOBACKUP".into()));
        }
        // FROM 'piece': a piece written by BACKUP CURRENT CONTROLFILE.
        if self.kw_at(0, "FROM") && matches!(self.peek_at(1), crate::parser::Tok::Quoted(_)) {
            self.bump();
            return Ok(Some(self.quoted()?));
        }
        Ok(None)
    }

    pub(crate) fn recover(&mut self) -> R<Recover> {
        let device = if self.is_kw("DEVICE") {
            Some(self.device_type()?)
        } else {
            None
        };
        let object = match self.one_of(&[
            "DATABASE",
            "TABLESPACE",
            "DATAFILE",
            "COPY",
            "CORRUPTION",
            "TABLE",
        ])? {
            "DATABASE" => RecoverObject::Database,
            "TABLE" => {
                let table = self.qualified()?;
                let database = if self.eat_kws(&["OF", "PLUGGABLE", "DATABASE"]) {
                    Some(self.name()?)
                } else {
                    None
                };
                RecoverObject::Table { table, database }
            }
            "TABLESPACE" => RecoverObject::Tablespace(self.names()?),
            "DATAFILE" => {
                let files = self.file_refs()?;
                if files.len() == 1 && self.eat_kw("BLOCK") {
                    let mut blocks = Vec::new();
                    loop {
                        let a = self.int()?;
                        let b = if self.eat_kw("TO") {
                            Some(self.int()?)
                        } else {
                            None
                        };
                        blocks.push((a, b));
                        if !self.eat_punct(',') {
                            break;
                        }
                    }
                    RecoverObject::Block {
                        file: files.into_iter().next().expect("one file"),
                        blocks,
                    }
                } else {
                    RecoverObject::Datafile(files)
                }
            }
            "COPY" => {
                self.expect_kws(&["OF", "DATABASE"])?;
                let tag = if self.eat_kws(&["WITH", "TAG"]) || self.eat_kw("TAG") {
                    self.eat_eq();
                    Some(self.name()?)
                } else {
                    None
                };
                RecoverObject::CopyOfDatabase { tag }
            }
            _ => {
                self.expect_kw("LIST")?;
                RecoverObject::CorruptionList
            }
        };
        let mut options = Vec::new();
        loop {
            let o = if self.eat_kw("UNTIL") {
                RecoverOpt::Until(self.until_clause()?)
            } else if self.eat_kw("NOREDO") {
                RecoverOpt::NoRedo
            } else if self.eat_kws(&["FROM", "TAG"]) {
                self.eat_eq();
                RecoverOpt::FromTag(self.name()?)
            } else if self.eat_kws(&["DELETE", "ARCHIVELOG"]) {
                let maxsize = if self.eat_kw("MAXSIZE") {
                    Some(self.size()?)
                } else {
                    None
                };
                RecoverOpt::DeleteArchivelog { maxsize }
            } else if self.eat_kw("ALLOW") {
                let n = self.int()?;
                self.expect_kw("CORRUPTION")?;
                RecoverOpt::AllowCorruption(n)
            } else if self.eat_kw("TEST") {
                RecoverOpt::Test
            } else if self.eat_kws(&["AUXILIARY", "DESTINATION"]) {
                RecoverOpt::AuxiliaryDestination(self.quoted()?)
            } else if self.eat_kws(&["REMAP", "TABLE"]) {
                let from = self.qualified()?;
                self.expect_punct(':')?;
                RecoverOpt::RemapTable {
                    from,
                    to: self.qualified()?,
                }
            } else if self.eat_kws(&["DUMP", "FILE"]) {
                RecoverOpt::DumpFile(self.quoted()?)
            } else if self.eat_kw("NOTABLEIMPORT") {
                RecoverOpt::NoTableImport
            } else {
                break;
            };
            options.push(o);
        }
        Ok(Recover {
            device,
            object,
            options,
        })
    }

    /// `name` or `schema.name`, each part a word or a quoted name.
    fn qualified(&mut self) -> R<String> {
        let first = self.name()?;
        if self.eat_punct('.') {
            Ok(format!("{first}.{}", self.name()?))
        } else {
            Ok(first)
        }
    }

    pub(crate) fn validate(&mut self) -> R<Validate> {
        let check_logical = self.eat_kws(&["CHECK", "LOGICAL"]);
        let section_size = if self.eat_kw("SECTION") {
            self.expect_kw("SIZE")?;
            Some(self.size()?)
        } else {
            None
        };
        let object = match self.one_of(&[
            "DATABASE",
            "TABLESPACE",
            "DATAFILE",
            "BACKUPSET",
            "RECOVERY",
            "CURRENT",
            "SPFILE",
            "ARCHIVELOG",
        ])? {
            "DATABASE" => ValidateObject::Database,
            "TABLESPACE" => ValidateObject::Tablespace(self.names()?),
            "DATAFILE" => ValidateObject::Datafile(self.file_refs()?),
            "BACKUPSET" => ValidateObject::Backupset(self.ints()?),
            "RECOVERY" => {
                self.expect_kw("AREA")?;
                ValidateObject::RecoveryArea
            }
            "CURRENT" => {
                self.expect_kw("CONTROLFILE")?;
                ValidateObject::CurrentControlfile
            }
            "SPFILE" => ValidateObject::Spfile,
            _ => ValidateObject::Archivelog(self.arch_spec()?),
        };
        Ok(Validate {
            check_logical,
            section_size,
            object,
        })
    }

    pub(crate) fn set(&mut self) -> R<SetCmd> {
        let k = self.one_of(&[
            "UNTIL",
            "NEWNAME",
            "MAXCORRUPT",
            "ARCHIVELOG",
            "COMMAND",
            "DBID",
            "BACKUP",
            "COMPRESSION",
        ])?;
        Ok(match k {
            "UNTIL" => SetCmd::Until(self.until_clause()?),
            "NEWNAME" => {
                self.expect_kw("FOR")?;
                let target =
                    match self.one_of(&["DATABASE", "DATAFILE", "TABLESPACE", "TEMPFILE"])? {
                        "DATABASE" => NewnameFor::Database,
                        "DATAFILE" => NewnameFor::Datafile(self.file_ref()?),
                        "TABLESPACE" => NewnameFor::Tablespace(self.name()?),
                        _ => NewnameFor::Tempfile(self.file_ref()?),
                    };
                self.expect_kw("TO")?;
                let to = if self.eat_kw("NEW") {
                    None
                } else {
                    Some(self.quoted()?)
                };
                SetCmd::Newname { target, to }
            }
            "MAXCORRUPT" => {
                self.expect_kws(&["FOR", "DATAFILE"])?;
                let files = self.file_refs()?;
                self.expect_kw("TO")?;
                SetCmd::Maxcorrupt {
                    files,
                    limit: self.int()?,
                }
            }
            "ARCHIVELOG" => {
                self.expect_kws(&["DESTINATION", "TO"])?;
                SetCmd::ArchivelogDestination(self.quoted()?)
            }
            "COMMAND" => {
                self.expect_kws(&["ID", "TO"])?;
                SetCmd::CommandId(self.quoted()?)
            }
            "DBID" => {
                self.eat_eq();
                SetCmd::Dbid(self.int()?)
            }
            "BACKUP" => {
                self.expect_kw("COPIES")?;
                self.eat_eq();
                SetCmd::BackupCopies(self.int()?)
            }
            _ => {
                self.expect_kw("ALGORITHM")?;
                SetCmd::CompressionAlgorithm(self.quoted()?)
            }
        })
    }
}
