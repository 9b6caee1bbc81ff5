//! The catalog's commands: CONFIGURE and SHOW, REPORT, DELETE, CROSSCHECK and CATALOG START
//! WITH. Their clap definitions live here so that cli.rs only names them; the command model
//! runs them, and the modules here print their outcomes.

mod archivelog;
pub mod immutable;
pub mod listing;
pub mod maint;
pub mod settings;
mod show_rman;

use clap::{Args, Subcommand};

pub use archivelog::{ArchivelogBackupArgs, say_archivelog};

#[derive(Subcommand, Debug, Clone)]
pub enum ConfigureWhat {
    /// `redundancy N`, `recovery-window DAYS`, `none` or `clear`.
    RetentionPolicy {
        #[arg(num_args = 1.., required = true)]
        value: Vec<String>,
    },
    /// Default channel count of backups, or `clear`.
    Channels { value: String },
    /// Default compression of backups (none, lz4, zstd, zstd:LEVEL), or `clear`.
    Compression { value: String },
    /// Default FILESPERSET of backups, or `clear`.
    Filesperset { value: String },
    /// Default MAXOPENFILES of backups, or `clear`.
    Maxopenfiles { value: String },
    /// Default SECTION SIZE of backups (e.g. 1G), `none`, or `clear`.
    SectionSize { value: String },
    /// `on`: full and level 0 backups leave out files unchanged since the last full backup
    /// (RMAN's BACKUP OPTIMIZATION); `off` or `clear`.
    BackupOptimization { value: String },
    /// `none`, `backed-up N times` or `clear`: when `delete archivelog all` may remove WAL.
    ArchivelogDeletionPolicy {
        #[arg(num_args = 1.., required = true)]
        value: Vec<String>,
    },
    /// `auto`: backups adapt read sizes, queue depth and the zstd level while they run (as
    /// `backup database --tune auto`); `off` or `clear`.
    Tuning { value: String },
    /// `on`: retention counts the backups `catalog import` recorded like recman's own, and
    /// `delete obsolete` forgets those it no longer needs (recman's record and manifest only:
    /// the old tool's files are never deleted); `off` (the default: never obsolete) or `clear`.
    ImportedRetention { value: String },
    /// The age past which the newest backup is a failure in `recman check` (a whole number
    /// with s, m, h or d: `4h`), `none` or `clear`.
    RpoTarget { value: String },
    /// The restore time the last drill and the predicted restore must stay within, else
    /// `recman check` reports rto-exceeded (`30m`, `4h`), `none` or `clear`.
    RtoTarget { value: String },
    /// How old the newest drill may be before `recman check` reports drill-stale (`7d`),
    /// `none` or `clear`.
    DrillInterval { value: String },
    /// WAL a replication slot of the cluster may retain before `recman check` reports
    /// slot-retention (a size: `1G`, the default), or `clear`.
    SlotRetentionLimit { value: String },
    /// Free space the repository's file system must keep besides room for one more full
    /// backup, else `recman check` reports repository-space (`10G`), `none` or `clear`.
    RepositoryMinFree { value: String },
    /// How long a command may hold the repository lock before `recman check` reports
    /// repository-lock (`24h`, the default), or `clear`.
    RepositoryLockLimit { value: String },
    /// How long before a fleet certificate (--tls-cert, --tls-ca) ends `recman check` reports
    /// certificate-expiry (`30d`, the default), or `clear`.
    CertificateExpiryWarning { value: String },
    /// The time a full backup must fit in, else `recman check` reports backup-overrun when
    /// the next one is predicted to take longer (`6h`), `none` or `clear`.
    BackupWindow { value: String },
    /// Copies of each piece `backup database` writes without --copies (RMAN's DATAFILE BACKUP
    /// COPIES), 1 to 4; the further copies need --copy-format locations. Or `clear`.
    BackupCopies { value: String },
    /// `synthetic-full-every N days`: backups that name no level are level 1s, and a synthetic
    /// full is built from the chain every N days; `off` or `clear`.
    IncrementalForever {
        #[arg(num_args = 1.., required = true)]
        value: Vec<String>,
    },
    /// A device type's specification and default channel count (RMAN's CONFIGURE DEVICE
    /// TYPE / CHANNEL DEVICE TYPE ... PARMS): `sbt parms 'vtape:/srv/vtape'`,
    /// `s3 parms s3://bucket/prefix`, `disk parms /srv/backup`, `sbt parallelism 4`, `sbt clear`.
    DeviceType {
        /// disk, s3 or sbt.
        device: String,
        /// `parms SPEC`, `parallelism N` (both may be given) or `clear`.
        #[arg(num_args = 1.., required = true)]
        value: Vec<String>,
    },
    /// The device type backups go to without --device-type, or `clear`.
    DefaultDeviceType { value: String },
    /// The settings the option table gives a `configure` subcommand of their own.
    #[command(flatten)]
    Table(crate::table_args::TableSetting),
}

#[derive(Subcommand, Debug, Clone)]
pub enum ShowWhat {
    /// Every setting with its value and where it comes from.
    All {
        #[arg(long, conflicts_with = "rman")]
        json: bool,
        /// As RMAN CONFIGURE statements, which `recman run` accepts back (the language's
        /// SHOW ALL).
        #[arg(long)]
        rman: bool,
    },
}

/// A policy for one command instead of the configured one (never both kinds at once).
#[derive(Args, Debug, Clone, Default)]
pub struct PolicyOverride {
    /// Keep this many newest full backups. Range: 1 to 10000.
    #[arg(long, conflicts_with = "recovery_window",
          value_parser = crate::input::count::<u32>(crate::input::COPIES))]
    pub redundancy: Option<u32>,
    /// Keep what recovery to any point of the last DAYS days needs (fractions allowed).
    /// Range: 0 to 36500.
    #[arg(long, value_parser = crate::input::Days)]
    pub recovery_window: Option<f64>,
}

#[derive(Subcommand, Debug, Clone)]
pub enum ReportWhat {
    /// Databases, tablespaces, sizes and relation counts of the target (RMAN's REPORT SCHEMA).
    Schema {
        #[arg(long)]
        json: bool,
    },
    /// Unlogged relations: no backup holds their data (RMAN's REPORT UNRECOVERABLE).
    Unrecoverable {
        #[arg(long)]
        json: bool,
    },
    /// I/O statistics of a backup (RMAN's V$BACKUP_ASYNC_IO / V$BACKUP_SYNC_IO) and the bottleneck.
    Io {
        /// Backup id or tag (default: the newest available).
        #[arg(value_parser = crate::input::Name)]
        which: Option<String>,
        #[arg(long)]
        json: bool,
        /// Show every input file, not only the 20 slowest.
        #[arg(long)]
        all: bool,
        /// Also draw throughput over time to this SVG file: a line per channel for reads and
        /// one for writes, from the backup's per-second samples.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<std::path::PathBuf>,
        /// Also write an HTML page with the plot, the settings changed while the backup ran and
        /// the statistics tables.
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
    },
    /// The WAL receiver's exposure per database (`recman receive`): WAL bytes the primary
    /// has written that are not durable in the repository (when --target reaches the
    /// primary), and seconds since the receiver last recorded its position.
    Rpo {
        #[arg(long)]
        json: bool,
    },
    /// The repository list (--repo, then each --also-repo) in its fallback order: whether
    /// each one answers, its newest archived WAL file and backup per database, and what
    /// archive-push and backups owe it after it missed them (docs/repositories.md).
    Repositories {
        #[arg(long)]
        json: bool,
    },
    /// Each database's measured RPO (the receiver's exposure, else the archive's lag), RTO
    /// (the last passed drill) and predicted restore time, beside the RPO and RTO targets.
    Slo {
        #[arg(long)]
        json: bool,
    },
    /// Requests sent to the repository's object store (PUT, GET, HEAD, LIST, DELETE) and
    /// payload bytes each way, for every backup (its whole backup command) and every UTC day
    /// of archiving (archive-push and archive-get), to price a retention or archiving policy.
    Costs {
        #[arg(long)]
        json: bool,
    },
    /// The fleet page as a file: every database's health, open failures, last backups, RPO
    /// and RTO against the targets, drill history and throughput plots, as one HTML page
    /// that loads nothing from anywhere (what `server --page-listen` serves).
    Fleet {
        /// Where to write the page (replaced whole, never half-written).
        #[arg(long, value_name = "FILE")]
        html: std::path::PathBuf,
    },
    /// Backups and archived WAL the retention policy no longer needs.
    Obsolete {
        #[command(flatten)]
        policy: PolicyOverride,
        #[arg(long)]
        json: bool,
    },
    /// Whether the database has enough backups under a redundancy or a recovery window.
    NeedBackup {
        /// Report when there are fewer full backups than this. Range: 1 to 10000.
        #[arg(long, conflicts_with = "days",
              value_parser = crate::input::count::<u32>(crate::input::COPIES))]
        redundancy: Option<u32>,
        /// Report when recovery needs more than this many days of archived WAL.
        /// Range: 0 to 36500.
        #[arg(long, value_parser = crate::input::Days)]
        days: Option<f64>,
        /// Also report when no restore drill passed within this many days (`recman drill`).
        /// Range: 0 to 36500.
        #[arg(long, value_parser = crate::input::Days)]
        drill_days: Option<f64>,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum DeleteWhat {
    /// What `report obsolete` lists: media first, then records.
    Obsolete {
        #[command(flatten)]
        policy: PolicyOverride,
        #[arg(long)]
        noprompt: bool,
    },
    /// Records of EXPIRED backups and archived WAL (their media are already gone).
    Expired {
        #[arg(long)]
        noprompt: bool,
    },
    /// One backup by id, or every backup with a tag.
    Backup {
        #[arg(value_parser = crate::input::Name)]
        which: String,
        #[arg(long)]
        noprompt: bool,
    },
    /// Archived WAL that no AVAILABLE backup needs.
    Archivelog {
        #[arg(value_parser = ["all"])]
        which: String,
        /// Only WAL held by at least N backup sets. Range: 1 to 10000.
        #[arg(long, value_name = "N",
              value_parser = crate::input::count::<u32>(crate::input::COPIES))]
        backed_up: Option<u32>,
        #[arg(long)]
        noprompt: bool,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum CrosscheckWhat {
    /// Every piece of every backup.
    Backup {
        /// Read every piece whole and compare its checksum.
        #[arg(long)]
        verify: bool,
    },
    /// Every archived WAL file.
    Archivelog {
        #[arg(value_parser = ["all"])]
        which: Option<String>,
        #[arg(long)]
        verify: bool,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum CatalogWhat {
    /// Rebuild or extend the catalog from the manifests and WAL files under PATH (default:
    /// the whole repository); works when catalog.db is missing or damaged.
    StartWith { path: Option<std::path::PathBuf> },
    /// Import another tool's backups and WAL archive, read where they lie (never written to):
    /// a pgBackRest repository (its path, a stanza's directory `REPO/backup/STANZA`, or its
    /// configuration file), or a directory pg_basebackup wrote (docs/migration.md).
    Import {
        /// The repository, stanza directory, pgbackrest.conf, or pg_basebackup directory.
        location: std::path::PathBuf,
        /// pgBackRest's stanza, when the repository or configuration holds several.
        #[arg(long)]
        stanza: Option<String>,
        /// pgBackRest's configuration file: the stanza's repository and passphrase
        /// (repo1-path, repo1-cipher-pass); PGBACKREST_REPO1_CIPHER_PASS also gives it.
        #[arg(long, value_name = "FILE")]
        pgbackrest_config: Option<std::path::PathBuf>,
        /// Then copy each backup into recman's own format (backup sets in the repository, its
        /// WAL to consistency in recman's archive), so that it no longer needs the location;
        /// the location's files are only read.
        #[arg(long)]
        copy: bool,
    },
}
