//! The statements of the language as plain values. The parser builds them, the pretty-printer
//! prints them back in canonical form, and recman-cli lowers them to commands.

pub use crate::ast_objects::*;
pub use crate::ast_terms::*;

/// A whole script: the statements in source order.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub statements: Vec<Stmt>,
}

impl Script {
    /// The statements with where they started in the source cleared (nested RUN blocks too):
    /// two scripts that say the same thing compare equal this way however they were laid out.
    pub fn without_spans(&self) -> Script {
        fn strip(stmts: &[Stmt]) -> Vec<Stmt> {
            stmts
                .iter()
                .map(|s| Stmt {
                    statement: match &s.statement {
                        Statement::Run(inner) => Statement::Run(strip(inner)),
                        other => other.clone(),
                    },
                    line: 0,
                    column: 0,
                    first_line: String::new(),
                })
                .collect()
        }
        Script {
            statements: strip(&self.statements),
        }
    }
}

/// One statement with where it started, so that a failure can name it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub statement: Statement,
    pub line: usize,
    pub column: usize,
    /// The first source line of the statement, trimmed, for messages.
    pub first_line: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Connect {
        to: ConnectTo,
        /// None for the bare form; `/` (operating-system authentication) is kept as "/".
        string: Option<String>,
    },
    Configure(Configure),
    /// `SHOW ALL` is `Show(vec!["ALL"])`; other forms keep their keywords.
    Show(Vec<String>),
    Run(Vec<Stmt>),
    Allocate(Allocate),
    Release(Option<String>),
    Backup(Backup),
    Restore(Restore),
    Recover(Recover),
    Validate(Validate),
    List(List),
    Report(Report),
    Crosscheck(Crosscheck),
    Delete(Delete),
    Catalog(CatalogCmd),
    Sql(String),
    Set(SetCmd),
    CreateCatalog,
    /// CREATE RESTORE POINT name: PostgreSQL's pg_create_restore_point.
    CreateRestorePoint(String),
    RegisterDatabase,
    Help(Option<String>),
    Exit,
    /// A statement of Oracle's instance or of RMAN that has no PostgreSQL counterpart here
    /// (STARTUP, SHUTDOWN, ALTER, SWITCH, DUPLICATE, CHANGE, ...): kept as words so that the
    /// interpreter can refuse it with a precise message.
    Foreign {
        verb: String,
        words: Vec<Word>,
    },
}

/// A token of a foreign statement, kept as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Word {
    Bare(String),
    Quoted(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectTo {
    Target,
    Catalog,
    Auxiliary,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Allocate {
    pub name: Option<String>,
    pub auxiliary: bool,
    pub maintenance: bool,
    pub device: Device,
    pub operands: Vec<ChannelOp>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ChannelOp {
    Connect(String),
    Format(Vec<String>),
    MaxOpenFiles(u64),
    MaxPieceSize(Size),
    Rate(Size),
    Parms(String),
    Send(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Configure {
    /// None is CLEAR.
    Retention(Option<Retention>),
    DefaultDevice(Option<Device>),
    DeviceType {
        device: Device,
        /// None is CLEAR.
        settings: Option<DeviceSettings>,
    },
    Channel {
        auxiliary: bool,
        number: Option<u64>,
        device: Device,
        /// None is CLEAR.
        operands: Option<Vec<ChannelOp>>,
    },
    ControlfileAutobackup(AutobackupSetting),
    Optimization(OnOff),
    /// None is CLEAR.
    Compression(Option<CompressionSetting>),
    EncryptionForDatabase(OnOff),
    EncryptionAlgorithm(Option<String>),
    /// None is CLEAR; an empty list is TO NONE.
    ArchivelogDeletionPolicy(Option<Vec<DeletionRule>>),
    /// None is CLEAR; Some(None) is UNLIMITED.
    Maxsetsize(Option<Option<Size>>),
    Copies {
        archivelog: bool,
        device: Device,
        count: Option<u64>,
    },
    Exclude {
        tablespace: String,
        clear: bool,
    },
    SnapshotControlfile(Option<String>),
    /// recman's RPO target (`'4h'`); None is CLEAR.
    RpoTarget(Option<String>),
    /// recman's other targets and thresholds of the failure checks: `name` is the setting
    /// (`rto-target`, `drill-interval`, `backup-window` and the others of [`MEASURES`]); None
    /// is CLEAR.
    Measure {
        name: String,
        value: Option<String>,
    },
}

/// The settings CONFIGURE sets with `TO 'value' | CLEAR`, by their words in the language.
pub const MEASURES: &[(&str, &str)] = &[
    ("rto-target", "RTO TARGET"),
    ("drill-interval", "DRILL INTERVAL"),
    ("slot-retention-limit", "SLOT RETENTION LIMIT"),
    ("repository-min-free", "REPOSITORY MIN FREE"),
    ("repository-lock-limit", "REPOSITORY LOCK LIMIT"),
    ("certificate-expiry-warning", "CERTIFICATE EXPIRY WARNING"),
    ("backup-window", "BACKUP WINDOW"),
];

/// The words CONFIGURE names setting `name` by, if it is one of [`MEASURES`].
pub fn measure_words(name: &str) -> Option<&'static str> {
    MEASURES.iter().find(|(n, _)| *n == name).map(|(_, w)| *w)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
    Clear,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    Redundancy(u64),
    WindowDays(u64),
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceSettings {
    pub parallelism: Option<u64>,
    /// (compressed, copy)
    pub backup_type: Option<(bool, bool)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AutobackupSetting {
    Switch(OnOff),
    Format {
        device: Device,
        format: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompressionSetting {
    pub algorithm: String,
    pub release: Option<String>,
    pub optimize_for_load: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeletionRule {
    BackedUp { times: u64, device: Device },
    AppliedOnStandby { all: bool },
    ShippedToStandby { all: bool },
}
