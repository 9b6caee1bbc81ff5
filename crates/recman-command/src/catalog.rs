//! The catalog's commands: CONFIGURE, SHOW, REPORT, DELETE, CROSSCHECK and CATALOG. A
//! CONFIGURE value stays in words (`redundancy 2`): the settings module parses and checks it
//! the same way whether it came from a flag, the config file or a script.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub enum ConfigureWhat {
    RetentionPolicy {
        value: Vec<String>,
    },
    Channels {
        value: String,
    },
    Compression {
        value: String,
    },
    Filesperset {
        value: String,
    },
    Maxopenfiles {
        value: String,
    },
    SectionSize {
        value: String,
    },
    BackupOptimization {
        value: String,
    },
    ArchivelogDeletionPolicy {
        value: Vec<String>,
    },
    /// `auto` or `off`: whether backups adapt their settings while they run (`--tune`).
    Tuning {
        value: String,
    },
    /// `on` or `off`: whether retention counts imported backups (see
    /// `recman_engine::retention::Imported`).
    ImportedRetention {
        value: String,
    },
    /// RMAN's DATAFILE BACKUP COPIES: how many copies of each piece `backup database` writes
    /// when it gives no `--copies` (1 to 4), or `clear`.
    BackupCopies {
        value: String,
    },
    /// The age past which the newest backup is a failure: `30m`, `4h`, `1d`, `none`.
    RpoTarget {
        value: String,
    },
    /// A setting stored as given, checked by its spec: the targets and thresholds of the
    /// failure checks (`rto-target`, `drill-interval`, `slot-retention-limit`,
    /// `repository-min-free`).
    Named {
        name: &'static str,
        value: String,
    },
    /// `off` or `synthetic-full-every N days` (see `recman_engine::forever`).
    IncrementalForever {
        value: Vec<String>,
    },
    /// `parms SPEC`, `parallelism N`, `blksize N`, `env A=1` or `clear` for one device type.
    DeviceType {
        device: String,
        value: Vec<String>,
    },
    DefaultDeviceType {
        value: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum ShowWhat {
    /// `rman`: as statements of the language (SHOW ALL), which it accepts back.
    All { json: bool, rman: bool },
}

/// A retention policy for one command instead of the configured one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyOverride {
    pub redundancy: Option<u32>,
    pub recovery_window: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReportWhat {
    Schema {
        json: bool,
    },
    Unrecoverable {
        json: bool,
    },
    Io {
        which: Option<String>,
        json: bool,
        all: bool,
        /// `--plot FILE.svg`: throughput over time from the per-second samples.
        plot: Option<std::path::PathBuf>,
        /// `--html FILE`: a page with the plot and the tables.
        html: Option<std::path::PathBuf>,
    },
    Obsolete {
        policy: PolicyOverride,
        json: bool,
    },
    /// The WAL receiver's exposure per database: bytes and seconds not yet durable in the
    /// repository (`recman receive`).
    Rpo {
        json: bool,
    },
    /// The repository list (--repo and each --also-repo): each one's state and what it is
    /// owed; the front end prints it.
    Repositories {
        json: bool,
    },
    /// Each database's measured RPO and RTO, and the predicted restore time, beside their
    /// targets (issue 43).
    Slo {
        json: bool,
    },
    /// The object-store requests and bytes of each backup and each day of archiving
    /// (issue 41), to price a policy.
    Costs {
        json: bool,
    },
    /// The fleet page written to a file (issue 43); the front end writes it.
    Fleet {
        html: std::path::PathBuf,
    },
    NeedBackup {
        redundancy: Option<u32>,
        days: Option<f64>,
        /// Also report when no drill passed within this many days.
        drill_days: Option<f64>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeleteWhat {
    Obsolete {
        policy: PolicyOverride,
        noprompt: bool,
    },
    Expired {
        noprompt: bool,
    },
    Backup {
        which: String,
        noprompt: bool,
    },
    Archivelog {
        which: String,
        backed_up: Option<u32>,
        noprompt: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum CrosscheckWhat {
    Backup { verify: bool },
    Archivelog { which: Option<String>, verify: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub enum CatalogWhat {
    StartWith {
        path: Option<PathBuf>,
    },
    /// Backups and the WAL archive of another tool, read in place (docs/migration.md).
    Import {
        location: PathBuf,
        stanza: Option<String>,
        pgbackrest_config: Option<PathBuf>,
        /// Then copy each backup of the location into recman's format
        /// (`recman_engine::import::copy_imported`).
        copy: bool,
    },
}
