//! The commands and their option structs. A field that the user may leave out is an `Option`
//! (resolved later by [`crate::precedence`]) or carries its default in the struct's `Default`.

use crate::catalog::*;
use std::path::PathBuf;

/// Seconds `backup database` waits for its WAL to be archived when not told.
pub const DEFAULT_ARCHIVE_TIMEOUT: u64 = 120;
/// Files `validate database` reads at once when not told.
pub const DEFAULT_VALIDATE_MAXOPENFILES: u32 = 8;
/// Compression of archived WAL and synthetic fulls when not told.
pub const DEFAULT_WAL_COMPRESSION: &str = "lz4";

/// What `key` does to an encrypted repository's master key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyWhat {
    /// Which master key is current (its fingerprint) and when it was set.
    Show,
    /// Re-wrap the repository's keys under a new master key; no data object is rewritten.
    Rotate,
}

/// One command of recman, as either front end asks for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Create the repository and its catalog (RMAN's CREATE CATALOG); `encrypt` makes every
    /// object of it encrypted under the key given (docs/security.md).
    CreateCatalog {
        encrypt: bool,
        /// An immutable repository: every object under this S3 Object Lock
        /// (docs/immutable.md).
        immutable: Option<recman_catalog::repo::Immutable>,
    },
    /// `key show` / `key rotate` of an encrypted repository (docs/security.md).
    Key(KeyWhat),
    /// pg_create_restore_point on the target, recorded in the catalog (RMAN's CREATE RESTORE
    /// POINT).
    CreateRestorePoint {
        name: String,
    },
    /// RMAN's CHANGE BACKUP: keep or unkeep, mark unavailable or available, the backups with
    /// this id or tag.
    ChangeBackup(ChangeBackup),
    /// Record the target cluster in the catalog under `name`.
    RegisterDatabase {
        name: String,
        /// The database-host agent (`https://HOST:PORT`) its files are read through.
        agent: Option<String>,
    },
    BackupDatabase(Box<BackupDatabase>),
    BackupArchivelog(BackupArchivelog),
    /// A new level 0 merged inside the repository from a level 0 and its level 1s.
    SyntheticFull {
        from: Option<String>,
        tag: Option<String>,
        compress: String,
    },
    /// Copy backups already in the repository (`all`, an id or a tag) to another device.
    BackupBackupset {
        which: String,
        device_type: String,
    },
    /// Copy every backup and the archived WAL to another device.
    BackupRecoveryArea {
        device_type: String,
    },
    RestoreDatabase(Box<RestoreDatabase>),
    /// One table brought back to a past time through an auxiliary instance (RMAN's RECOVER
    /// TABLE).
    RecoverTable(Box<RecoverTable>),
    /// A restore test with a measured RTO, recorded in the catalog.
    Drill(Box<Drill>),
    /// A standby or a writable clone from the newest backup (RMAN's DUPLICATE).
    DuplicateDatabase(Box<DuplicateDatabase>),
    ListDrill {
        json: bool,
    },
    /// The catalog and pg_control as one piece (RMAN's BACKUP CURRENT CONTROLFILE), in the
    /// FORMAT directory or the repository.
    BackupControlfile {
        format: Option<String>,
    },
    /// The catalog of a `BackupControlfile` piece put into the repository.
    RestoreControlfile {
        from: PathBuf,
    },
    /// Check every page of the data directory, writing nothing.
    ValidateDatabase {
        /// None: one, RMAN's default PARALLELISM.
        channels: Option<u32>,
        maxopenfiles: u32,
        io: IoOptions,
        /// RMAN's CHECK LOGICAL.
        check_logical: bool,
    },
    /// Check every piece of a backup (default: the newest).
    ValidateBackup {
        which: Option<String>,
        channels: Option<u32>,
    },
    /// Roll an image copy forward with the level 1s taken for it.
    RecoverCopy {
        tag: String,
        until_time: Option<String>,
    },
    /// Block media recovery of a stopped cluster (RMAN's RECOVER … BLOCK and RECOVER
    /// CORRUPTION LIST): `blocks` as FILE:BLOCK, plus the recorded list with `corruption_list`.
    RecoverBlock {
        blocks: Vec<String>,
        corruption_list: bool,
        auxiliary_dir: Option<PathBuf>,
    },
    ListBackup {
        json: bool,
        summary: bool,
        by_file: bool,
    },
    ListArchivelog {
        json: bool,
    },
    ListIncarnation {
        json: bool,
    },
    ListCopy {
        json: bool,
    },
    ArchivePush(ArchivePush),
    ArchiveGet(ArchiveGet),
    ArchivePrefetch(ArchivePrefetch),
    ArchivePushAhead(ArchivePushAhead),
    /// Stream the database's WAL into the repository until stopped (docs/wal.md).
    Receive(Receive),
    Configure(ConfigureWhat),
    Show(ShowWhat),
    Report(ReportWhat),
    Delete(DeleteWhat),
    Crosscheck(CrosscheckWhat),
    Catalog(CatalogWhat),
    /// Measure the devices and the CPU for the tuning method (docs/tuning.md).
    Calibrate {
        json: bool,
    },
    /// The seeds' tuning steps from the newest calibration; `apply` stores the settings.
    Advise {
        window: Option<String>,
        json: bool,
        apply: bool,
    },
    ListCalibration {
        json: bool,
    },
    /// The repository's state as Prometheus text exposition (docs/monitoring.md).
    Metrics,
    /// Run the checks and record the failures they find (docs/failures.md).
    Check {
        json: bool,
    },
    /// LIST, ADVISE and REPAIR FAILURE (RMAN's Data Recovery Advisor).
    Failure(FailureWhat),
    /// The database-host agent: serves the data directory at --pgdata to backup hosts over
    /// mutual TLS until stopped (docs/commands.md).
    Server {
        listen: String,
        allow: Vec<String>,
        /// Directories a restore through this agent may write into.
        restore_dir: Vec<PathBuf>,
        /// The repository host's server a cluster restored here fetches WAL from.
        repo_host: Option<String>,
        /// Repository host: where to serve the metrics over plain HTTP.
        metrics_listen: Option<String>,
        /// Repository host: where to serve the fleet page over HTTPS.
        page_listen: Option<String>,
        /// The file of the page's read-only bearer token.
        page_token: Option<PathBuf>,
        /// Repository host: `DB=CONNINFO` of each database to run the WAL receiver for.
        receive: Vec<String>,
        /// The client certificate CNs that may read the page (none: any the CA signed).
        page_allow: Vec<String>,
    },
    /// A shell's completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        shell: String,
    },
    /// The manual page, in roff.
    Man,
    /// Run RMAN-style statements from a file (`-` for standard input) or a text.
    Run {
        file: Option<PathBuf>,
        text: Option<String>,
    },
}

impl Command {
    /// The command as its subcommand is spelled (`backup database`), for messages and the
    /// parity of the two front ends.
    pub fn path(&self) -> &'static [&'static str] {
        match self {
            Command::CreateCatalog { .. } => &["create", "catalog"],
            Command::Key(KeyWhat::Show) => &["key", "show"],
            Command::Key(KeyWhat::Rotate) => &["key", "rotate"],
            Command::CreateRestorePoint { .. } => &["create", "restore-point"],
            Command::ChangeBackup(_) => &["change", "backup"],
            Command::RegisterDatabase { .. } => &["register", "database"],
            Command::BackupDatabase(_) => &["backup", "database"],
            Command::BackupArchivelog(_) => &["backup", "archivelog"],
            Command::SyntheticFull { .. } => &["backup", "synthetic-full"],
            Command::BackupBackupset { .. } => &["backup", "backupset"],
            Command::BackupRecoveryArea { .. } => &["backup", "recovery-area"],
            Command::RestoreDatabase(_) => &["restore", "database"],
            Command::Drill(_) => &["drill"],
            Command::DuplicateDatabase(_) => &["duplicate", "database"],
            Command::ListDrill { .. } => &["list", "drill"],
            Command::BackupControlfile { .. } => &["backup", "controlfile"],
            Command::RestoreControlfile { .. } => &["restore", "controlfile"],
            Command::ValidateDatabase { .. } => &["validate", "database"],
            Command::ValidateBackup { .. } => &["validate", "backup"],
            Command::RecoverCopy { .. } => &["recover", "copy"],
            Command::RecoverTable(_) => &["recover", "table"],
            Command::RecoverBlock {
                corruption_list: true,
                ..
            } => &["recover", "corruption-list"],
            Command::RecoverBlock { .. } => &["recover", "block"],
            Command::ListBackup { .. } => &["list", "backup"],
            Command::ListArchivelog { .. } => &["list", "archivelog"],
            Command::ListIncarnation { .. } => &["list", "incarnation"],
            Command::ListCopy { .. } => &["list", "copy"],
            Command::ArchivePush(_) => &["archive-push"],
            Command::ArchiveGet(_) => &["archive-get"],
            Command::ArchivePrefetch(_) => &["archive-prefetch"],
            Command::ArchivePushAhead(_) => &["archive-push-ahead"],
            Command::Receive(_) => &["receive"],
            Command::Configure(_) => &["configure"],
            Command::Show(_) => &["show"],
            Command::Report(_) => &["report"],
            Command::Delete(_) => &["delete"],
            Command::Crosscheck(_) => &["crosscheck"],
            Command::Catalog(_) => &["catalog"],
            Command::Run { .. } => &["run"],
            Command::Calibrate { .. } => &["calibrate"],
            Command::Advise { .. } => &["advise"],
            Command::ListCalibration { .. } => &["list", "calibration"],
            Command::Metrics => &["metrics"],
            Command::Check { .. } => &["check"],
            Command::Failure(FailureWhat::List(_)) => &["failure", "list"],
            Command::Failure(FailureWhat::Advise { .. }) => &["failure", "advise"],
            Command::Failure(FailureWhat::Repair { .. }) => &["failure", "repair"],
            Command::Server { .. } => &["server"],
            Command::Completions { .. } => &["completions"],
            Command::Man => &["man"],
        }
    }
}

/// What a failure command does.
#[derive(Debug, Clone, PartialEq)]
pub enum FailureWhat {
    List(FailureList),
    /// The repair options of the open failures (`ids`, or all), the automatic ones written
    /// as a script to `script` (default: the repository's `repair/` directory).
    Advise {
        ids: Vec<i64>,
        script: Option<PathBuf>,
        json: bool,
    },
    /// Run the advised script (PREVIEW: print it, write nothing), then check again.
    Repair {
        preview: bool,
        script: Option<PathBuf>,
    },
}

/// What `failure list` (LIST FAILURE) shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FailureList {
    /// Closed failures too.
    pub all: bool,
    /// Only these ids (open or closed).
    pub ids: Vec<i64>,
    /// Each failure's message and repair options in full.
    pub detail: bool,
    pub json: bool,
}

/// Options of the I/O engine, shared by every command that moves data. Sizes stay as typed
/// (`1M`); the engine parses them.
#[derive(Debug, Clone, PartialEq)]
pub struct IoOptions {
    /// auto, uring, threads or sync.
    pub io_mode: String,
    pub io_slaves: usize,
    pub input_buffers: Option<usize>,
    pub input_buffer_size: Option<String>,
    /// None: the device type's configured BLKSIZE, else 1M.
    pub blksize: Option<String>,
    pub output_buffers: usize,
    pub rate: Option<String>,
    /// Every file through the page cache.
    pub buffered_reads: bool,
    /// Every file directly, cached or not (the default reads each file the cheaper way).
    pub direct_reads: bool,
}

impl Default for IoOptions {
    fn default() -> Self {
        IoOptions {
            io_mode: "auto".into(),
            io_slaves: 4,
            input_buffers: None,
            input_buffer_size: None,
            blksize: None,
            output_buffers: 4,
            rate: None,
            buffered_reads: false,
            direct_reads: false,
        }
    }
}

/// `backup database`. `None` means "resolve by precedence" (config file, catalog, default).
#[derive(Debug, Clone, PartialEq)]
pub struct BackupDatabase {
    pub channels: Option<u32>,
    pub filesperset: Option<u32>,
    pub maxopenfiles: Option<u32>,
    pub compress: Option<String>,
    pub tag: Option<String>,
    pub maxcorrupt: u32,
    pub force: bool,
    /// libpq conninfo of a streaming standby whose data directory the channels read.
    pub standby: Option<String>,
    /// The agent (`https://HOST:PORT`) serving that standby's data directory.
    pub standby_agent: Option<String>,
    pub device_type: Option<String>,
    pub archive_timeout: u64,
    pub plus_archivelog: bool,
    pub section_size: Option<String>,
    pub incremental_level: Option<u8>,
    pub cumulative: bool,
    pub as_copy: bool,
    pub for_recover_of_copy: bool,
    /// RMAN's FORMAT with a location (`/srv/backup/ora_%U.rbf`): the pieces are written there.
    pub format: Option<String>,
    pub io: IoOptions,
    /// RMAN's KEEP FOREVER: retention never removes the backup nor its WAL.
    pub keep_forever: bool,
    /// RMAN's KEEP UNTIL TIME: as KEEP FOREVER until then.
    pub keep_until: Option<String>,
    /// RMAN's DURATION, as H:MM[:SS].
    pub duration: Option<String>,
    /// DURATION … PARTIAL: keep what finished in the window.
    pub partial: bool,
    /// DURATION … MINIMIZE TIME or LOAD (`time`, `load`); None: TIME, RMAN's default.
    pub minimize: Option<String>,
    /// RMAN's NOT BACKED UP SINCE TIME, as a time `restore --until-time` accepts.
    pub not_backed_up_since: Option<String>,
    /// `--tune auto|off`; None: `configure tuning`.
    pub tune: Option<String>,
    /// RMAN's CHECK LOGICAL: heap and B-tree page structure checked beyond the checksum.
    pub check_logical: bool,
    /// RMAN's MAXSETSIZE (a size such as `1G`): the most bytes in one backup set.
    pub maxsetsize: Option<String>,
    /// The values of the options whose flag the option table makes (`OptionDef::
    /// flag_from_table`), by their row's name, as typed; absent when not given.
    pub table: std::collections::BTreeMap<&'static str, String>,
    /// RMAN's COPIES n: every piece written n times; None or 1: once.
    pub copies: Option<u32>,
    /// Where copies 2, 3, … go (FORMAT templates with a location, one per further copy).
    pub copy_format: Vec<String>,
}

impl Default for BackupDatabase {
    fn default() -> Self {
        BackupDatabase {
            channels: None,
            filesperset: None,
            maxopenfiles: None,
            compress: None,
            tag: None,
            maxcorrupt: 0,
            force: false,
            standby: None,
            standby_agent: None,
            device_type: None,
            archive_timeout: DEFAULT_ARCHIVE_TIMEOUT,
            plus_archivelog: false,
            section_size: None,
            incremental_level: None,
            cumulative: false,
            as_copy: false,
            for_recover_of_copy: false,
            format: None,
            io: IoOptions::default(),
            keep_forever: false,
            keep_until: None,
            duration: None,
            partial: false,
            minimize: None,
            not_backed_up_since: None,
            tune: None,
            check_logical: false,
            maxsetsize: None,
            table: Default::default(),
            copies: None,
            copy_format: Vec::new(),
        }
    }
}

/// `change backup ID|TAG` with one of its changes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChangeBackup {
    pub which: String,
    pub keep_forever: bool,
    /// As `keep_forever` until this time (RMAN's KEEP UNTIL TIME); parsed when run, as the
    /// backup's `--keep-until` is.
    pub keep_until: Option<String>,
    pub nokeep: bool,
    pub unavailable: bool,
    pub available: bool,
}

/// `backup archivelog all`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BackupArchivelog {
    /// Always `all` today.
    pub which: String,
    pub not_backed_up: Option<u32>,
    pub delete_input: bool,
    pub compress: Option<String>,
    pub filesperset: Option<u32>,
    pub tag: Option<String>,
    /// RMAN's FORMAT with a location: the sets' pieces are written there.
    pub format: Option<String>,
}

/// `restore database`: the restore, or with `preview`/`validate` its plan or the reading of
/// everything the plan names (neither writes, so neither needs `to`).
#[derive(Debug, Clone, PartialEq)]
pub struct RestoreDatabase {
    pub to: Option<PathBuf>,
    /// Print the plan, write nothing (RMAN's RESTORE … PREVIEW).
    pub preview: bool,
    /// Read and verify what the plan names, write nothing (RMAN's RESTORE … VALIDATE).
    pub validate: bool,
    /// The plan or the validation as JSON.
    pub json: bool,
    /// Restore although the archived WAL has a gap before the target.
    pub allow_wal_gap: bool,
    /// Clear a target directory that an interrupted restore left (known by its marker).
    pub force: bool,
    /// auto, direct or buffered.
    pub write_mode: String,
    pub until_time: Option<String>,
    pub until_lsn: Option<String>,
    pub until_xid: Option<String>,
    /// A named restore point made by `create restore-point`.
    pub until_restore_point: Option<String>,
    pub from_tag: Option<String>,
    pub channels: u32,
    /// OLD=NEW pairs.
    pub tablespace_map: Vec<String>,
    /// off or preserve.
    pub archive_mode: String,
    pub from_copy: Option<String>,
    pub switch_to_copy: bool,
    pub timeline: Option<String>,
    /// Restore only these databases (with the cluster-wide files and the system databases);
    /// empty: all.
    pub include_db: Vec<String>,
}

impl RestoreDatabase {
    /// A restore into `to` (None: a preview or validation) with every other option at its
    /// default.
    pub fn into(to: Option<PathBuf>) -> Self {
        RestoreDatabase {
            to,
            preview: false,
            validate: false,
            json: false,
            allow_wal_gap: false,
            force: false,
            write_mode: "auto".into(),
            until_time: None,
            until_lsn: None,
            until_xid: None,
            until_restore_point: None,
            from_tag: None,
            channels: 1,
            tablespace_map: Vec::new(),
            archive_mode: "off".into(),
            from_copy: None,
            switch_to_copy: false,
            timeline: None,
            include_db: Vec::new(),
        }
    }
}

/// DRILL and DUPLICATE DATABASE are each a restore (`RestoreDatabase`'s target and source
/// options) plus what happens to the restored directory after it.
/// `drill`: restore into a scratch directory, start, recover, check, remove, record.
#[derive(Debug, Clone, PartialEq)]
pub struct Drill {
    /// The target (`until_*`), `from_tag` and `channels`; `to` is unused.
    pub restore: RestoreDatabase,
    /// SQL checks, each run in database postgres; a check passes when it returns a row whose
    /// first value is not false.
    pub check_sql: Vec<String>,
    /// Leave the instance running and its directory in place.
    pub keep: bool,
    /// The scratch directory (absent or empty); None: one in the system's temp dir.
    pub dir: Option<PathBuf>,
}

impl Drill {
    pub fn new() -> Self {
        Drill {
            restore: RestoreDatabase::into(None),
            check_sql: Vec::new(),
            keep: false,
            dir: None,
        }
    }
}

impl Default for Drill {
    fn default() -> Self {
        Drill::new()
    }
}

/// `duplicate database`: a standby (or a clone) restored into `restore.to`.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateDatabase {
    pub restore: RestoreDatabase,
    pub for_standby: bool,
    pub primary_conninfo: Option<String>,
    pub slot: Option<String>,
    pub port: Option<u16>,
}

/// `recover table`: SCHEMA.TABLE at a past time, loaded as `remap` or dumped to `dump`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecoverTable {
    /// SCHEMA.TABLE (no schema: public).
    pub table: String,
    /// The database holding it (default: postgres).
    pub database: Option<String>,
    pub until_time: Option<String>,
    pub until_lsn: Option<String>,
    pub until_xid: Option<String>,
    /// The name it comes back as: NAME (same schema) or SCHEMA.NAME.
    pub remap_table: Option<String>,
    /// Write the table's dump here and load nothing (RMAN's DUMP FILE with NOTABLEIMPORT).
    pub dump: Option<PathBuf>,
    /// Where the auxiliary instance goes (RMAN's AUXILIARY DESTINATION); default: a new
    /// directory under the system's temporary directory.
    pub auxiliary_dir: Option<PathBuf>,
    pub channels: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArchivePush {
    pub path: PathBuf,
    pub compress: String,
    pub batch: u32,
    pub parallel: Option<u32>,
    /// Send the file to the repository host's server at this URL (docs/fleet.md).
    pub repo_host: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveGet {
    pub name: String,
    pub dest: PathBuf,
    pub prefetch: u32,
    pub spool: Option<PathBuf>,
    /// Set by restore when it writes a recovery target: a file that cannot be delivered is
    /// answered "not archived", since PostgreSQL fails recovery itself if it needed the file
    /// before its target.
    pub with_recovery_target: bool,
    /// Fetch the file from the repository host's server at this URL (docs/fleet.md).
    pub repo_host: Option<String>,
}

/// The background pusher archive-push starts on a backlog (engine: `archive::ahead`).
#[derive(Debug, Clone, PartialEq)]
pub struct ArchivePushAhead {
    /// pg_wal: the segments and their archive_status.
    pub wal_dir: PathBuf,
    /// Push the ready segments after this one.
    pub after: String,
    pub compress: String,
    pub parallel: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArchivePrefetch {
    pub spool: PathBuf,
    pub after: String,
    pub count: usize,
    pub parallel: Option<usize>,
    pub spawned_at: Option<u64>,
}

/// The receiver's flush interval when none is given: the recorded position is then at most
/// about half a second old (docs/wal.md).
pub const DEFAULT_FLUSH_INTERVAL_MS: u64 = 500;

/// `receive`: the WAL receiver (engine: `archive::receive`).
#[derive(Debug, Clone, PartialEq)]
pub struct Receive {
    /// `sync` or `async`.
    pub mode: String,
    /// The physical replication slot.
    pub slot: String,
    pub create_slot: bool,
    /// Async mode's flush bound, in milliseconds.
    pub flush_interval_ms: u64,
    /// None: `recman_<db>`.
    pub application_name: Option<String>,
    pub compress: String,
}
