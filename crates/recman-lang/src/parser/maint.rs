//! LIST, REPORT, CROSSCHECK, DELETE and CATALOG.

use super::{Parser, R};
use crate::ast::*;

impl Parser<'_> {
    pub(crate) fn list(&mut self) -> R<List> {
        if self.eat_kw("INCARNATION") {
            if self.eat_kws(&["OF", "DATABASE"]) {
                self.name()?;
            }
            return Ok(List::Incarnation);
        }
        if self.eat_kws(&["RESTORE", "POINT"]) {
            return Ok(List::RestorePoint(if self.eat_kw("ALL") {
                None
            } else {
                Some(self.name()?)
            }));
        }
        if self.eat_kws(&["SCRIPT", "NAMES"]) {
            return Ok(List::ScriptNames);
        }
        if self.eat_kw("FAILURE") {
            let all = self.eat_kw("ALL");
            let mut ids = Vec::new();
            if !all && matches!(self.peek().tok, crate::lexer::Tok::Number { .. }) {
                ids.push(self.int()?);
                while self.eat_punct(',') {
                    ids.push(self.int()?);
                }
            }
            let detail = self.eat_kw("DETAIL");
            return Ok(List::Failure { all, ids, detail });
        }
        let expired = self.eat_kw("EXPIRED");
        let object = self.maint_object()?;
        let mut summary = false;
        let mut by_file = false;
        if self.eat_kws(&["BY", "FILE"]) {
            by_file = true;
        } else if self.eat_kw("SUMMARY") {
            summary = true;
        }
        let qualifiers = self.qualifiers()?;
        Ok(List::Objects {
            expired,
            object,
            summary,
            by_file,
            qualifiers,
        })
    }

    pub(crate) fn maint_object(&mut self) -> R<MaintObject> {
        Ok(
            match self.one_of(&["BACKUP", "BACKUPSET", "BACKUPPIECE", "COPY", "ARCHIVELOG"])? {
                "BACKUP" => MaintObject::Backup(self.of_object()?),
                "BACKUPSET" => MaintObject::Backupset(if self.is_int() {
                    self.ints()?
                } else {
                    Vec::new()
                }),
                "BACKUPPIECE" => {
                    let mut v = vec![self.name()?];
                    while self.eat_punct(',') {
                        v.push(self.name()?);
                    }
                    MaintObject::Backuppiece(v)
                }
                "COPY" => MaintObject::Copy(self.of_object()?),
                _ => MaintObject::Archivelog(self.arch_spec()?),
            },
        )
    }

    fn of_object(&mut self) -> R<Option<OfObject>> {
        if !self.eat_kw("OF") {
            return Ok(None);
        }
        Ok(Some(
            match self.one_of(&[
                "DATABASE",
                "TABLESPACE",
                "DATAFILE",
                "ARCHIVELOG",
                "CONTROLFILE",
                "SPFILE",
            ])? {
                "DATABASE" => OfObject::Database,
                "TABLESPACE" => OfObject::Tablespace(self.names()?),
                "DATAFILE" => OfObject::Datafile(self.file_refs()?),
                "ARCHIVELOG" => OfObject::Archivelog(self.arch_spec()?),
                "CONTROLFILE" => OfObject::Controlfile,
                _ => OfObject::Spfile,
            },
        ))
    }

    pub(crate) fn qualifiers(&mut self) -> R<Vec<Qualifier>> {
        let mut v = Vec::new();
        loop {
            let q = if self.eat_kw("TAG") {
                self.eat_eq();
                Qualifier::Tag(self.name()?)
            } else if self.eat_kw("LIKE") {
                Qualifier::Like(self.quoted()?)
            } else if self.is_kw("DEVICE") {
                Qualifier::DeviceType(self.device_type()?)
            } else if self.eat_kw("COMPLETED") {
                match self.one_of(&["AFTER", "BEFORE", "BETWEEN"])? {
                    "AFTER" => Qualifier::CompletedAfter(self.date()?),
                    "BEFORE" => Qualifier::CompletedBefore(self.date()?),
                    _ => {
                        let a = self.date()?;
                        self.expect_kw("AND")?;
                        Qualifier::CompletedBetween(a, self.date()?)
                    }
                }
            } else if self.eat_kws(&["BACKED", "UP"]) {
                let times = self.int()?;
                self.expect_kws(&["TIMES", "TO"])?;
                // The seeds write `TO disk` without DEVICE TYPE; RMAN accepts both.
                let device = if self.is_kw("DEVICE") {
                    self.device_type()?
                } else {
                    self.device()?
                };
                Qualifier::BackedUp { times, device }
            } else {
                return Ok(v);
            };
            v.push(q);
        }
    }

    fn retention_rule(&mut self) -> R<Option<Retention2>> {
        Ok(if self.eat_kw("REDUNDANCY") {
            self.eat_eq();
            Some(Retention2::Redundancy(self.int()?))
        } else if self.eat_kws(&["RECOVERY", "WINDOW"]) {
            self.expect_kw("OF")?;
            let n = self.int()?;
            self.expect_kw("DAYS")?;
            Some(Retention2::WindowDays(n))
        } else if self.eat_kw("ORPHAN") {
            Some(Retention2::Orphan)
        } else {
            None
        })
    }

    pub(crate) fn report(&mut self) -> R<Report> {
        let r = match self.one_of(&[
            "NEED",
            "OBSOLETE",
            "SCHEMA",
            "UNRECOVERABLE",
            "SLO",
            "COSTS",
        ])? {
            "NEED" => {
                self.expect_kw("BACKUP")?;
                let rule = if self.eat_kw("DAYS") {
                    self.eat_eq();
                    Some(Retention2::Days(self.int()?))
                } else if self.eat_kw("INCREMENTAL") {
                    self.eat_eq();
                    Some(Retention2::Incremental(self.int()?))
                } else {
                    self.retention_rule()?
                };
                let object = self.of_object_bare()?;
                Report::NeedBackup { rule, object }
            }
            "OBSOLETE" => Report::Obsolete(self.retention_rule()?),
            "SCHEMA" => Report::Schema,
            "SLO" => Report::Slo,
            "COSTS" => Report::Costs,
            _ => Report::Unrecoverable,
        };
        Ok(r)
    }

    /// `DATABASE | TABLESPACE … | DATAFILE …` without OF, as REPORT NEED BACKUP writes it.
    fn of_object_bare(&mut self) -> R<Option<OfObject>> {
        Ok(if self.eat_kw("DATABASE") {
            Some(OfObject::Database)
        } else if self.eat_kw("TABLESPACE") {
            Some(OfObject::Tablespace(self.names()?))
        } else if self.eat_kw("DATAFILE") {
            Some(OfObject::Datafile(self.file_refs()?))
        } else {
            None
        })
    }

    pub(crate) fn delete(&mut self) -> R<Delete> {
        let mut force = false;
        let mut noprompt = false;
        loop {
            if self.eat_kw("FORCE") {
                force = true;
            } else if self.eat_kw("NOPROMPT") {
                noprompt = true;
            } else {
                break;
            }
        }
        let what = if self.eat_kw("OBSOLETE") {
            DeleteWhat::Obsolete(self.retention_rule()?)
        } else if self.eat_kw("EXPIRED") {
            DeleteWhat::Expired(self.maint_object()?)
        } else {
            self.expect_note("\"OBSOLETE\"");
            self.expect_note("\"EXPIRED\"");
            DeleteWhat::Object(self.maint_object()?)
        };
        let qualifiers = self.qualifiers()?;
        Ok(Delete {
            force,
            noprompt,
            what,
            qualifiers,
        })
    }

    pub(crate) fn catalog(&mut self) -> R<CatalogCmd> {
        if self.eat_kws(&["START", "WITH"]) {
            let prefix = self.quoted()?;
            return Ok(CatalogCmd::StartWith {
                prefix,
                noprompt: self.eat_kw("NOPROMPT"),
            });
        }
        if self.eat_kws(&["RECOVERY", "AREA"]) || self.eat_kw("DB_RECOVERY_FILE_DEST") {
            return Ok(CatalogCmd::RecoveryArea {
                noprompt: self.eat_kw("NOPROMPT"),
            });
        }
        let kind = self.one_of(&[
            "BACKUPPIECE",
            "DATAFILECOPY",
            "ARCHIVELOG",
            "CONTROLFILECOPY",
        ])?;
        let mut names = vec![self.quoted()?];
        while self.eat_punct(',') {
            names.push(self.quoted()?);
        }
        Ok(CatalogCmd::Files {
            kind: kind.to_string(),
            names,
        })
    }
}
