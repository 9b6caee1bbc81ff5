//! The AST of the data-moving statements: BACKUP, RESTORE, RECOVER, VALIDATE, SET and the
//! catalog-maintenance statements.

use crate::ast_terms::{DateExpr, Device, Lsn, Size, Until};

#[derive(Debug, Clone, PartialEq)]
pub struct Backup {
    /// Operands written before the first object.
    pub options: Vec<BackupOpt>,
    pub specs: Vec<BackupSpec>,
    /// `PLUS ARCHIVELOG` and its operands.
    pub plus_archivelog: Option<Vec<BackupOpt>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BackupSpec {
    pub parenthesized: bool,
    pub object: BackupObject,
    pub options: Vec<BackupOpt>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BackupObject {
    Database,
    Datafile(Vec<FileRef>),
    Tablespace(Vec<String>),
    Archivelog(ArchSpec),
    CurrentControlfile { for_standby: bool },
    Spfile,
    Backupset(Selection),
    Datafilecopy(Selection),
    RecoveryArea,
    RecoveryFiles,
}

/// Which backup sets or copies: numbers, ALL, quoted names, or FROM TAG.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    All,
    Keys(Vec<u64>),
    Names(Vec<String>),
    Like(String),
    FromTag(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum FileRef {
    Number(u64),
    Path(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArchSpec {
    pub range: ArchRange,
    pub like: Option<String>,
    pub thread: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ArchRange {
    All,
    From(Mark),
    Until(Mark),
    FromUntil(Mark, Mark),
    Between(Mark, Mark),
    /// Only a LIKE pattern.
    Like,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    Time(DateExpr),
    Scn(Lsn),
    Sequence(u64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum BackupOpt {
    Full,
    Incremental {
        level: u64,
        cumulative: bool,
    },
    IncrementalFromScn(Lsn),
    /// AS [COMPRESSED] BACKUPSET | AS COPY
    As {
        compressed: bool,
        copy: bool,
    },
    ForRecoverOfCopy {
        tag: Option<String>,
    },
    SectionSize(Size),
    Duration {
        hours: u64,
        minutes: u64,
        /// RMAN's optional `:ss`.
        seconds: Option<u64>,
        partial: bool,
        minimize: Option<String>,
    },
    Validate,
    CheckLogical,
    NoChecksum,
    Force,
    Skip(String),
    DeviceType(Device),
    Channel(String),
    Copies(u64),
    Format(Vec<String>),
    Tag(String),
    FilesPerSet(u64),
    MaxSetSize(Size),
    Keep {
        until: Option<DateExpr>,
        restore_point: Option<String>,
    },
    NoKeep,
    NotBackedUp(NotBackedUp),
    DeleteInput {
        all: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum NotBackedUp {
    Plain,
    Times(u64),
    Since(DateExpr),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    pub object: RestoreObject,
    pub options: Vec<RestoreOpt>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RestoreObject {
    Database { skip_tablespaces: Vec<String> },
    Tablespace(Vec<String>),
    Datafile(Vec<FileRef>),
    Controlfile { from: Option<String> },
    Spfile { from: Option<String> },
    Archivelog(ArchSpec),
    StandbyControlfile,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RestoreOpt {
    Until(Until),
    FromTag(String),
    FromBackupset,
    FromDatafilecopy,
    Preview {
        summary: bool,
    },
    Validate,
    CheckLogical,
    Force,
    DeviceType(Device),
    Channel(String),
    /// recman's extension: the new data directory, as `SET NEWNAME FOR DATABASE` gives it.
    To(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Recover {
    pub device: Option<Device>,
    pub object: RecoverObject,
    pub options: Vec<RecoverOpt>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RecoverObject {
    Database,
    Tablespace(Vec<String>),
    Datafile(Vec<FileRef>),
    CopyOfDatabase {
        tag: Option<String>,
    },
    CorruptionList,
    /// RECOVER TABLE schema.table [OF PLUGGABLE DATABASE db]: a PostgreSQL database plays the
    /// pluggable database.
    Table {
        table: String,
        database: Option<String>,
    },
    Block {
        file: FileRef,
        blocks: Vec<(u64, Option<u64>)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum RecoverOpt {
    Until(Until),
    NoRedo,
    FromTag(String),
    DeleteArchivelog {
        maxsize: Option<Size>,
    },
    AllowCorruption(u64),
    Test,
    /// RECOVER TABLE's AUXILIARY DESTINATION 'dir'.
    AuxiliaryDestination(String),
    /// RECOVER TABLE's REMAP TABLE old:new.
    RemapTable {
        from: String,
        to: String,
    },
    /// RECOVER TABLE's DUMP FILE 'file'.
    DumpFile(String),
    /// RECOVER TABLE's NOTABLEIMPORT.
    NoTableImport,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Validate {
    pub check_logical: bool,
    pub section_size: Option<Size>,
    pub object: ValidateObject,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValidateObject {
    Database,
    Tablespace(Vec<String>),
    Datafile(Vec<FileRef>),
    Backupset(Vec<u64>),
    RecoveryArea,
    CurrentControlfile,
    Spfile,
    Archivelog(ArchSpec),
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetCmd {
    Until(Until),
    /// `to` None is `TO NEW`.
    Newname {
        target: NewnameFor,
        to: Option<String>,
    },
    Maxcorrupt {
        files: Vec<FileRef>,
        limit: u64,
    },
    ArchivelogDestination(String),
    CommandId(String),
    Dbid(u64),
    BackupCopies(u64),
    CompressionAlgorithm(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum NewnameFor {
    Database,
    Datafile(FileRef),
    Tablespace(String),
    Tempfile(FileRef),
}

/// What LIST, CROSSCHECK and DELETE act on.
#[derive(Debug, Clone, PartialEq)]
pub enum MaintObject {
    /// BACKUP [OF what]
    Backup(Option<OfObject>),
    Backupset(Vec<u64>),
    Backuppiece(Vec<String>),
    Copy(Option<OfObject>),
    Archivelog(ArchSpec),
}

#[derive(Debug, Clone, PartialEq)]
pub enum OfObject {
    Database,
    Tablespace(Vec<String>),
    Datafile(Vec<FileRef>),
    Archivelog(ArchSpec),
    Controlfile,
    Spfile,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Qualifier {
    Tag(String),
    Like(String),
    DeviceType(Device),
    CompletedAfter(DateExpr),
    CompletedBefore(DateExpr),
    CompletedBetween(DateExpr, DateExpr),
    BackedUp { times: u64, device: Device },
}

#[derive(Debug, Clone, PartialEq)]
pub enum List {
    Objects {
        expired: bool,
        object: MaintObject,
        summary: bool,
        by_file: bool,
        qualifiers: Vec<Qualifier>,
    },
    Incarnation,
    RestorePoint(Option<String>),
    ScriptNames,
    /// LIST FAILURE [ALL | n [, n]…] [DETAIL]: open failures, every one with ALL, or those
    /// numbered (open or closed).
    Failure {
        all: bool,
        ids: Vec<u64>,
        detail: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    NeedBackup {
        rule: Option<Retention2>,
        object: Option<OfObject>,
    },
    Obsolete(Option<Retention2>),
    Schema,
    Unrecoverable,
    /// recman's own: measured RPO and RTO beside their targets.
    Slo,
    /// recman's own: the repository's object-store requests and bytes per backup and per
    /// day of archiving.
    Costs,
}

/// A retention rule given on REPORT or DELETE itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Retention2 {
    Redundancy(u64),
    WindowDays(u64),
    Days(u64),
    Incremental(u64),
    Orphan,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Crosscheck {
    pub object: MaintObject,
    pub qualifiers: Vec<Qualifier>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    pub force: bool,
    pub noprompt: bool,
    pub what: DeleteWhat,
    pub qualifiers: Vec<Qualifier>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeleteWhat {
    Obsolete(Option<Retention2>),
    Expired(MaintObject),
    Object(MaintObject),
}

#[derive(Debug, Clone, PartialEq)]
pub enum CatalogCmd {
    StartWith { prefix: String, noprompt: bool },
    RecoveryArea { noprompt: bool },
    Files { kind: String, names: Vec<String> },
}
