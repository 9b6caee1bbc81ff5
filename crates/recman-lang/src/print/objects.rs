//! Canonical form of the clauses (without the leading verb and the final `;`).

use super::words::{list, name, q};
use crate::ast::*;
use std::fmt::{self, Display, Formatter};

pub(crate) fn file(r: &FileRef) -> String {
    match r {
        FileRef::Number(n) => n.to_string(),
        FileRef::Path(p) => q(p),
    }
}

pub(crate) fn names(v: &[String]) -> String {
    list(v, |s| name(s))
}

pub(crate) fn quals(v: &[Qualifier]) -> String {
    v.iter().map(|x| format!(" {x}")).collect()
}

fn opts<T: Display>(v: &[T]) -> String {
    v.iter().map(|x| format!(" {x}")).collect()
}

impl Display for Mark {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Mark::Time(d) => write!(f, "TIME {d}"),
            Mark::Scn(l) => write!(f, "SCN {l}"),
            Mark::Sequence(n) => write!(f, "SEQUENCE {n}"),
        }
    }
}

fn mark_value(m: &Mark) -> String {
    match m {
        Mark::Time(d) => d.to_string(),
        Mark::Scn(l) => l.to_string(),
        Mark::Sequence(n) => n.to_string(),
    }
}

impl Display for ArchSpec {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.range {
            ArchRange::All => f.write_str("ALL")?,
            ArchRange::Like => {}
            ArchRange::From(m) => write!(f, "FROM {m}")?,
            ArchRange::Until(m) => write!(f, "UNTIL {m}")?,
            ArchRange::FromUntil(a, b) => write!(f, "FROM {a} UNTIL {b}")?,
            ArchRange::Between(a, b) => {
                let kind = match a {
                    Mark::Time(_) => "TIME",
                    Mark::Scn(_) => "SCN",
                    Mark::Sequence(_) => "SEQUENCE",
                };
                write!(f, "{kind} BETWEEN {} AND {}", mark_value(a), mark_value(b))?
            }
        }
        if let Some(l) = &self.like {
            if self.range != ArchRange::Like {
                f.write_str(" ")?;
            }
            write!(f, "LIKE {}", q(l))?;
        }
        if let Some(t) = self.thread {
            write!(f, " THREAD {t}")?;
        }
        Ok(())
    }
}

impl Display for Selection {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Selection::All => f.write_str("ALL"),
            Selection::Keys(k) => f.write_str(&list(k, |n| n.to_string())),
            Selection::Names(n) => f.write_str(&list(n, |s| q(s))),
            Selection::Like(s) => write!(f, "LIKE {}", q(s)),
            Selection::FromTag(t) => write!(f, "FROM TAG {}", q(t)),
        }
    }
}

impl Display for BackupObject {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            BackupObject::Database => f.write_str("DATABASE"),
            BackupObject::Datafile(v) => write!(f, "DATAFILE {}", list(v, file)),
            BackupObject::Tablespace(v) => write!(f, "TABLESPACE {}", names(v)),
            BackupObject::Archivelog(a) => write!(f, "ARCHIVELOG {a}"),
            BackupObject::CurrentControlfile { for_standby } => {
                f.write_str("CURRENT CONTROLFILE")?;
                if *for_standby {
                    f.write_str(" FOR STANDBY")?;
                }
                Ok(())
            }
            BackupObject::Spfile => f.write_str("SPFILE"),
            BackupObject::Backupset(s) => write!(f, "BACKUPSET {s}"),
            BackupObject::Datafilecopy(s) => write!(f, "DATAFILECOPY {s}"),
            BackupObject::RecoveryArea => f.write_str("RECOVERY AREA"),
            BackupObject::RecoveryFiles => f.write_str("RECOVERY FILES"),
        }
    }
}

impl Display for BackupOpt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            BackupOpt::Full => f.write_str("FULL"),
            BackupOpt::Incremental { level, cumulative } => {
                write!(f, "INCREMENTAL LEVEL {level}")?;
                if *cumulative {
                    f.write_str(" CUMULATIVE")?;
                }
                Ok(())
            }
            BackupOpt::IncrementalFromScn(l) => write!(f, "INCREMENTAL FROM SCN {l}"),
            BackupOpt::As { compressed, copy } => write!(
                f,
                "AS {}{}",
                if *compressed { "COMPRESSED " } else { "" },
                if *copy { "COPY" } else { "BACKUPSET" }
            ),
            BackupOpt::ForRecoverOfCopy { tag } => {
                f.write_str("FOR RECOVER OF COPY")?;
                if let Some(t) = tag {
                    write!(f, " WITH TAG {}", q(t))?;
                }
                Ok(())
            }
            BackupOpt::SectionSize(s) => write!(f, "SECTION SIZE {s}"),
            BackupOpt::Duration {
                hours,
                minutes,
                seconds,
                partial,
                minimize,
            } => {
                write!(f, "DURATION {hours}:{minutes:02}")?;
                if let Some(s) = seconds {
                    write!(f, ":{s:02}")?;
                }
                if *partial {
                    f.write_str(" PARTIAL")?;
                }
                if let Some(m) = minimize {
                    write!(f, " MINIMIZE {m}")?;
                }
                Ok(())
            }
            BackupOpt::Validate => f.write_str("VALIDATE"),
            BackupOpt::CheckLogical => f.write_str("CHECK LOGICAL"),
            BackupOpt::NoChecksum => f.write_str("NOCHECKSUM"),
            BackupOpt::Force => f.write_str("FORCE"),
            BackupOpt::Skip(s) => write!(f, "SKIP {s}"),
            BackupOpt::DeviceType(d) => write!(f, "DEVICE TYPE {d}"),
            BackupOpt::Channel(c) => write!(f, "CHANNEL {}", name(c)),
            BackupOpt::Copies(n) => write!(f, "COPIES {n}"),
            BackupOpt::Format(v) => write!(f, "FORMAT {}", list(v, |s| q(s))),
            BackupOpt::Tag(t) => write!(f, "TAG {}", q(t)),
            BackupOpt::FilesPerSet(n) => write!(f, "FILESPERSET {n}"),
            BackupOpt::MaxSetSize(s) => write!(f, "MAXSETSIZE {s}"),
            BackupOpt::Keep {
                until,
                restore_point,
            } => {
                match until {
                    None => f.write_str("KEEP FOREVER")?,
                    Some(d) => write!(f, "KEEP UNTIL TIME {d}")?,
                }
                if let Some(r) = restore_point {
                    write!(f, " RESTORE POINT {}", name(r))?;
                }
                Ok(())
            }
            BackupOpt::NoKeep => f.write_str("NOKEEP"),
            BackupOpt::NotBackedUp(n) => match n {
                NotBackedUp::Plain => f.write_str("NOT BACKED UP"),
                NotBackedUp::Times(t) => write!(f, "NOT BACKED UP {t} TIMES"),
                NotBackedUp::Since(d) => write!(f, "NOT BACKED UP SINCE TIME {d}"),
            },
            BackupOpt::DeleteInput { all } => {
                write!(f, "DELETE {}INPUT", if *all { "ALL " } else { "" })
            }
        }
    }
}

impl Display for Backup {
    /// Printed with a leading space so that `BACKUP` + this reads right.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&opts(&self.options))?;
        for s in &self.specs {
            f.write_str(" ")?;
            if s.parenthesized {
                f.write_str("(")?;
            }
            write!(f, "{}{}", s.object, opts(&s.options))?;
            if s.parenthesized {
                f.write_str(")")?;
            }
        }
        if let Some(p) = &self.plus_archivelog {
            write!(f, " PLUS ARCHIVELOG{}", opts(p))?;
        }
        Ok(())
    }
}

impl Display for RestoreOpt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            RestoreOpt::Until(u) => write!(f, "{u}"),
            RestoreOpt::FromTag(t) => write!(f, "FROM TAG {}", q(t)),
            RestoreOpt::FromBackupset => f.write_str("FROM BACKUPSET"),
            RestoreOpt::FromDatafilecopy => f.write_str("FROM DATAFILECOPY"),
            RestoreOpt::Preview { summary } => {
                write!(f, "PREVIEW{}", if *summary { " SUMMARY" } else { "" })
            }
            RestoreOpt::Validate => f.write_str("VALIDATE"),
            RestoreOpt::CheckLogical => f.write_str("CHECK LOGICAL"),
            RestoreOpt::Force => f.write_str("FORCE"),
            RestoreOpt::DeviceType(d) => write!(f, "DEVICE TYPE {d}"),
            RestoreOpt::Channel(c) => write!(f, "CHANNEL {}", name(c)),
            RestoreOpt::To(p) => write!(f, "TO {}", q(p)),
        }
    }
}

impl Display for Restore {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.object {
            RestoreObject::Database { skip_tablespaces } => {
                f.write_str("DATABASE")?;
                if !skip_tablespaces.is_empty() {
                    write!(f, " SKIP TABLESPACE {}", names(skip_tablespaces))?;
                }
            }
            RestoreObject::Tablespace(v) => write!(f, "TABLESPACE {}", names(v))?,
            RestoreObject::Datafile(v) => write!(f, "DATAFILE {}", list(v, file))?,
            RestoreObject::Controlfile { from } => {
                f.write_str("CONTROLFILE")?;
                match from.as_deref() {
                    Some("AUTOBACKUP") => f.write_str(" FROM AUTOBACKUP")?,
                    Some(piece) => write!(f, " FROM {}", q(piece))?,
                    None => {}
                }
            }
            RestoreObject::Spfile { from } => {
                f.write_str("SPFILE")?;
                if from.is_some() {
                    f.write_str(" FROM AUTOBACKUP")?;
                }
            }
            RestoreObject::Archivelog(a) => write!(f, "ARCHIVELOG {a}")?,
            RestoreObject::StandbyControlfile => f.write_str("STANDBY CONTROLFILE")?,
        }
        f.write_str(&opts(&self.options))
    }
}

impl Display for RecoverOpt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            RecoverOpt::Until(u) => write!(f, "{u}"),
            RecoverOpt::NoRedo => f.write_str("NOREDO"),
            RecoverOpt::FromTag(t) => write!(f, "FROM TAG {}", q(t)),
            RecoverOpt::DeleteArchivelog { maxsize } => {
                f.write_str("DELETE ARCHIVELOG")?;
                if let Some(m) = maxsize {
                    write!(f, " MAXSIZE {m}")?;
                }
                Ok(())
            }
            RecoverOpt::AllowCorruption(n) => write!(f, "ALLOW {n} CORRUPTION"),
            RecoverOpt::Test => f.write_str("TEST"),
            RecoverOpt::AuxiliaryDestination(d) => write!(f, "AUXILIARY DESTINATION {}", q(d)),
            RecoverOpt::RemapTable { from, to } => write!(f, "REMAP TABLE {from}:{to}"),
            RecoverOpt::DumpFile(d) => write!(f, "DUMP FILE {}", q(d)),
            RecoverOpt::NoTableImport => f.write_str("NOTABLEIMPORT"),
        }
    }
}

impl Display for Recover {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(d) = &self.device {
            write!(f, "DEVICE TYPE {d} ")?;
        }
        match &self.object {
            RecoverObject::Database => f.write_str("DATABASE")?,
            RecoverObject::Tablespace(v) => write!(f, "TABLESPACE {}", names(v))?,
            RecoverObject::Datafile(v) => write!(f, "DATAFILE {}", list(v, file))?,
            RecoverObject::CopyOfDatabase { tag } => {
                f.write_str("COPY OF DATABASE")?;
                if let Some(t) = tag {
                    write!(f, " WITH TAG {}", q(t))?;
                }
            }
            RecoverObject::CorruptionList => f.write_str("CORRUPTION LIST")?,
            RecoverObject::Table { table, database } => {
                write!(f, "TABLE {table}")?;
                if let Some(d) = database {
                    write!(f, " OF PLUGGABLE DATABASE {d}")?;
                }
            }
            RecoverObject::Block { file: fr, blocks } => {
                let b = list(blocks, |(a, b)| match b {
                    Some(b) => format!("{a} TO {b}"),
                    None => a.to_string(),
                });
                write!(f, "DATAFILE {} BLOCK {b}", file(fr))?
            }
        }
        f.write_str(&opts(&self.options))
    }
}

impl Display for Validate {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.check_logical {
            f.write_str("CHECK LOGICAL ")?;
        }
        if let Some(s) = &self.section_size {
            write!(f, "SECTION SIZE {s} ")?;
        }
        match &self.object {
            ValidateObject::Database => f.write_str("DATABASE"),
            ValidateObject::Tablespace(v) => write!(f, "TABLESPACE {}", names(v)),
            ValidateObject::Datafile(v) => write!(f, "DATAFILE {}", list(v, file)),
            ValidateObject::Backupset(v) => {
                write!(f, "BACKUPSET {}", list(v, |n| n.to_string()))
            }
            ValidateObject::RecoveryArea => f.write_str("RECOVERY AREA"),
            ValidateObject::CurrentControlfile => f.write_str("CURRENT CONTROLFILE"),
            ValidateObject::Spfile => f.write_str("SPFILE"),
            ValidateObject::Archivelog(a) => write!(f, "ARCHIVELOG {a}"),
        }
    }
}

impl Display for SetCmd {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SetCmd::Until(u) => write!(f, "{u}"),
            SetCmd::Newname { target, to } => {
                f.write_str("NEWNAME FOR ")?;
                match target {
                    NewnameFor::Database => f.write_str("DATABASE")?,
                    NewnameFor::Datafile(r) => write!(f, "DATAFILE {}", file(r))?,
                    NewnameFor::Tablespace(n) => write!(f, "TABLESPACE {}", name(n))?,
                    NewnameFor::Tempfile(r) => write!(f, "TEMPFILE {}", file(r))?,
                }
                match to {
                    Some(p) => write!(f, " TO {}", q(p)),
                    None => f.write_str(" TO NEW"),
                }
            }
            SetCmd::Maxcorrupt { files, limit } => {
                write!(
                    f,
                    "MAXCORRUPT FOR DATAFILE {} TO {limit}",
                    list(files, file)
                )
            }
            SetCmd::ArchivelogDestination(p) => write!(f, "ARCHIVELOG DESTINATION TO {}", q(p)),
            SetCmd::CommandId(s) => write!(f, "COMMAND ID TO {}", q(s)),
            SetCmd::Dbid(n) => write!(f, "DBID {n}"),
            SetCmd::BackupCopies(n) => write!(f, "BACKUP COPIES {n}"),
            SetCmd::CompressionAlgorithm(s) => write!(f, "COMPRESSION ALGORITHM {}", q(s)),
        }
    }
}
