//! BACKUP and the archived-log specification shared with other statements.

use super::{Parser, R};
use crate::ast::*;
use crate::lexer::Tok;

impl Parser<'_> {
    pub(crate) fn backup(&mut self) -> R<Backup> {
        let mut options = Vec::new();
        // Objects are checked first so that an error lists them before the operands.
        while !self.starts_backup_object() {
            match self.backup_opt()? {
                Some(o) => options.push(o),
                None => break,
            }
        }
        let mut specs = vec![self.backup_spec()?];
        loop {
            if self.is_kw("PLUS") || self.is_punct(';') || self.is_punct('}') {
                break;
            }
            if !self.starts_backup_object() {
                break;
            }
            specs.push(self.backup_spec()?);
        }
        let plus_archivelog = if self.eat_kw("PLUS") {
            self.expect_kw("ARCHIVELOG")?;
            let mut v = Vec::new();
            while let Some(o) = self.backup_opt()? {
                v.push(o);
            }
            Some(v)
        } else {
            None
        };
        Ok(Backup {
            options,
            specs,
            plus_archivelog,
        })
    }

    fn starts_backup_object(&mut self) -> bool {
        let mut any = false;
        for k in [
            "DATABASE",
            "DATAFILE",
            "TABLESPACE",
            "ARCHIVELOG",
            "CURRENT",
            "SPFILE",
            "BACKUPSET",
            "DATAFILECOPY",
            "RECOVERY",
        ] {
            any |= self.is_kw(k);
        }
        any || self.is_punct('(')
    }

    fn backup_spec(&mut self) -> R<BackupSpec> {
        let parenthesized = self.eat_punct('(');
        let object = self.backup_object()?;
        let mut options = Vec::new();
        while let Some(o) = self.backup_opt()? {
            options.push(o);
        }
        if parenthesized {
            self.expect_punct(')')?;
        }
        Ok(BackupSpec {
            parenthesized,
            object,
            options,
        })
    }

    fn backup_object(&mut self) -> R<BackupObject> {
        let k = self.one_of(&[
            "DATABASE",
            "DATAFILE",
            "TABLESPACE",
            "ARCHIVELOG",
            "CURRENT",
            "SPFILE",
            "BACKUPSET",
            "DATAFILECOPY",
            "RECOVERY",
        ])?;
        Ok(match k {
            "DATABASE" => BackupObject::Database,
            "DATAFILE" => BackupObject::Datafile(self.file_refs()?),
            "TABLESPACE" => BackupObject::Tablespace(self.names()?),
            "ARCHIVELOG" => BackupObject::Archivelog(self.arch_spec()?),
            "CURRENT" => {
                self.expect_kw("CONTROLFILE")?;
                let for_standby = self.eat_kws(&["FOR", "STANDBY"]);
                BackupObject::CurrentControlfile { for_standby }
            }
            "SPFILE" => BackupObject::Spfile,
            "BACKUPSET" => BackupObject::Backupset(self.selection()?),
            "DATAFILECOPY" => BackupObject::Datafilecopy(self.selection()?),
            _ => match self.one_of(&["AREA", "FILES"])? {
                "AREA" => BackupObject::RecoveryArea,
                _ => BackupObject::RecoveryFiles,
            },
        })
    }

    fn selection(&mut self) -> R<Selection> {
        if self.eat_kw("ALL") {
            return Ok(Selection::All);
        }
        if self.eat_kw("LIKE") {
            return Ok(Selection::Like(self.quoted()?));
        }
        if self.eat_kws(&["FROM", "TAG"]) {
            self.eat_eq();
            return Ok(Selection::FromTag(self.name()?));
        }
        if self.is_quoted() {
            let mut v = vec![self.quoted()?];
            while self.eat_punct(',') {
                v.push(self.quoted()?);
            }
            return Ok(Selection::Names(v));
        }
        Ok(Selection::Keys(self.ints()?))
    }

    /// `LEVEL [=] n` of either word order; the range is checked in both, or one order would
    /// take a level the printed (canonical) order refuses.
    fn incremental_level(&mut self) -> R<u64> {
        self.expect_kw("LEVEL")?;
        self.eat_eq();
        let t = self.peek().clone();
        let level = self.int()?;
        if level > 4 {
            return Err(self.invalid_at(
                &t,
                format!("incremental level {level} is out of range; hint: use LEVEL 0 or LEVEL 1"),
            ));
        }
        Ok(level)
    }

    /// One BACKUP operand, or None when the current token starts none.
    fn backup_opt(&mut self) -> R<Option<BackupOpt>> {
        let o = if self.eat_kw("FULL") {
            BackupOpt::Full
        } else if self.eat_kw("INCREMENTAL") {
            if self.eat_kws(&["FROM", "SCN"]) {
                BackupOpt::IncrementalFromScn(self.lsn()?)
            } else {
                let level = self.incremental_level()?;
                let cumulative = self.eat_kw("CUMULATIVE");
                BackupOpt::Incremental { level, cumulative }
            }
        } else if self.eat_kw("CUMULATIVE") {
            // RMAN also accepts CUMULATIVE before INCREMENTAL.
            self.expect_kw("INCREMENTAL")?;
            let level = self.incremental_level()?;
            BackupOpt::Incremental {
                level,
                cumulative: true,
            }
        } else if self.eat_kw("AS") {
            let compressed = self.eat_kw("COMPRESSED");
            let copy = self.one_of(&["BACKUPSET", "COPY"])? == "COPY";
            BackupOpt::As { compressed, copy }
        } else if self.eat_kws(&["FOR", "RECOVER"]) {
            self.for_recover_of_copy()?
        } else if self.eat_kw("SECTION") {
            self.expect_kw("SIZE")?;
            self.eat_eq();
            BackupOpt::SectionSize(self.size()?)
        } else if self.eat_kw("DURATION") {
            self.duration()?
        } else if self.eat_kw("VALIDATE") {
            BackupOpt::Validate
        } else if self.eat_kws(&["CHECK", "LOGICAL"]) {
            BackupOpt::CheckLogical
        } else if self.eat_kw("NOCHECKSUM") {
            BackupOpt::NoChecksum
        } else if self.eat_kw("FORCE") {
            BackupOpt::Force
        } else if self.eat_kw("SKIP") {
            BackupOpt::Skip(
                self.one_of(&["OFFLINE", "READONLY", "INACCESSIBLE"])?
                    .to_string(),
            )
        } else if self.is_kw("DEVICE") {
            BackupOpt::DeviceType(self.device_type()?)
        } else if self.eat_kw("CHANNEL") {
            BackupOpt::Channel(self.name()?)
        } else if self.eat_kw("COPIES") {
            self.eat_eq();
            BackupOpt::Copies(self.int()?)
        } else if self.eat_kw("FORMAT") {
            self.eat_eq();
            BackupOpt::Format(self.formats()?)
        } else if self.eat_kw("TAG") {
            self.eat_eq();
            BackupOpt::Tag(self.name()?)
        } else if self.eat_kw("FILESPERSET") {
            self.eat_eq();
            BackupOpt::FilesPerSet(self.int()?)
        } else if self.eat_kw("MAXSETSIZE") {
            self.eat_eq();
            BackupOpt::MaxSetSize(self.size()?)
        } else if self.eat_kw("KEEP") {
            self.keep()?
        } else if self.eat_kw("NOKEEP") {
            BackupOpt::NoKeep
        } else if self.eat_kws(&["NOT", "BACKED"]) {
            self.not_backed_up()?
        } else if self.eat_kw("DELETE") {
            let all = self.eat_kw("ALL");
            self.expect_kw("INPUT")?;
            BackupOpt::DeleteInput { all }
        } else {
            return Ok(None);
        };
        Ok(Some(o))
    }

    /// `FOR RECOVER OF COPY [[WITH] TAG [=] t]`, after FOR RECOVER.
    fn for_recover_of_copy(&mut self) -> R<BackupOpt> {
        self.expect_kws(&["OF", "COPY"])?;
        let tag = if self.eat_kws(&["WITH", "TAG"]) || self.eat_kw("TAG") {
            self.eat_eq();
            Some(self.name()?)
        } else {
            None
        };
        Ok(BackupOpt::ForRecoverOfCopy { tag })
    }

    /// `DURATION hh:mm[:ss] [PARTIAL] [MINIMIZE TIME | LOAD]`, after DURATION.
    fn duration(&mut self) -> R<BackupOpt> {
        let hours = self.int()?;
        self.expect_punct(':')?;
        let minutes = self.int()?;
        let seconds = if self.eat_punct(':') {
            Some(self.int()?)
        } else {
            None
        };
        let partial = self.eat_kw("PARTIAL");
        let minimize = if self.eat_kw("MINIMIZE") {
            Some(self.one_of(&["TIME", "LOAD"])?.to_string())
        } else {
            None
        };
        Ok(BackupOpt::Duration {
            hours,
            minutes,
            seconds,
            partial,
            minimize,
        })
    }

    /// `KEEP (FOREVER | UNTIL TIME [=] date) [RESTORE POINT name]`, after KEEP.
    fn keep(&mut self) -> R<BackupOpt> {
        let until = if self.eat_kw("FOREVER") {
            None
        } else {
            self.expect_kws(&["UNTIL", "TIME"])?;
            self.eat_eq();
            Some(self.date()?)
        };
        let restore_point = if self.eat_kws(&["RESTORE", "POINT"]) {
            Some(self.name()?)
        } else {
            None
        };
        Ok(BackupOpt::Keep {
            until,
            restore_point,
        })
    }

    /// `NOT BACKED UP [n TIMES | SINCE TIME [=] date]`, after NOT BACKED.
    fn not_backed_up(&mut self) -> R<BackupOpt> {
        self.expect_kw("UP")?;
        Ok(BackupOpt::NotBackedUp(if self.is_int() {
            let n = self.int()?;
            self.expect_kw("TIMES")?;
            NotBackedUp::Times(n)
        } else if self.eat_kws(&["SINCE", "TIME"]) {
            self.eat_eq();
            NotBackedUp::Since(self.date()?)
        } else {
            NotBackedUp::Plain
        }))
    }

    /// After ARCHIVELOG: ALL | LIKE 'x' | FROM/UNTIL … | TIME/SCN/SEQUENCE BETWEEN … AND …,
    /// then optional LIKE and THREAD.
    pub(crate) fn arch_spec(&mut self) -> R<ArchSpec> {
        let mut like = None;
        let range = if self.eat_kw("ALL") {
            ArchRange::All
        } else if self.eat_kw("LIKE") {
            like = Some(self.quoted()?);
            ArchRange::Like
        } else if self.eat_kw("FROM") {
            let from = self.mark()?;
            if self.eat_kw("UNTIL") {
                ArchRange::FromUntil(from, self.mark()?)
            } else {
                ArchRange::From(from)
            }
        } else if self.eat_kw("UNTIL") {
            ArchRange::Until(self.mark()?)
        } else if matches!(self.peek().tok, Tok::Word(_))
            && (self.kw_at(1, "BETWEEN"))
            && (self.is_kw("TIME") || self.is_kw("SCN") || self.is_kw("SEQUENCE"))
        {
            let kind = self.one_of(&["TIME", "SCN", "SEQUENCE"])?;
            self.expect_kw("BETWEEN")?;
            let a = self.mark_of(kind)?;
            self.expect_kw("AND")?;
            let b = self.mark_of(kind)?;
            ArchRange::Between(a, b)
        } else {
            self.expect_note("\"TIME\"");
            self.expect_note("\"SCN\"");
            self.expect_note("\"SEQUENCE\"");
            return Err(self.unexpected());
        };
        if like.is_none() && self.eat_kw("LIKE") {
            like = Some(self.quoted()?);
        }
        let thread = if self.eat_kw("THREAD") {
            self.eat_eq();
            Some(self.int()?)
        } else {
            None
        };
        Ok(ArchSpec {
            range,
            like,
            thread,
        })
    }

    fn mark(&mut self) -> R<Mark> {
        let kind = self.one_of(&["TIME", "SCN", "SEQUENCE"])?;
        self.eat_eq();
        self.mark_of(kind)
    }

    fn mark_of(&mut self, kind: &str) -> R<Mark> {
        Ok(match kind {
            "TIME" => Mark::Time(self.date()?),
            "SCN" => Mark::Scn(self.lsn()?),
            _ => Mark::Sequence(self.int()?),
        })
    }
}
