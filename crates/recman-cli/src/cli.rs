//! The command-line surface. Names follow RMAN's verbs and objects (`backup database`,
//! `list backup`); later the RMAN-style language produces the same option values.

use clap::{Args, Parser, Subcommand};
use recman_command::option_table as T;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "recman",
    version,
    about = "A recovery manager for PostgreSQL in the spirit of Oracle RMAN"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    /// Without one, a terminal gets the RECMAN> prompt.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command takes. Shown under their own heading in each command's `--help`, after
/// the command's own options, so that a command's few options are not lost among them.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Repository: a directory, s3://BUCKET/PREFIX, azure://CONTAINER/PREFIX or gs://BUCKET/PREFIX
    /// (RECMAN_REPO).
    #[arg(long, global = true, env = "RECMAN_REPO")]
    pub repo: Option<PathBuf>,
    /// Another repository for the same databases, after --repo in the fallback order; repeat
    /// it for more (RECMAN_ALSO_REPO, comma-separated). archive-push stores each WAL file in
    /// every one, a backup is copied to each, `create catalog` and `register database` apply
    /// to each, and a command that reads falls back along the list (docs/repositories.md).
    #[arg(
        long,
        global = true,
        env = "RECMAN_ALSO_REPO",
        value_delimiter = ',',
        value_name = "REPO"
    )]
    pub also_repo: Vec<PathBuf>,
    /// Read an S3 repository as it was at TIME: each object's newest version written before
    /// then, ignoring later versions and delete markers (docs/immutable.md). Nothing is
    /// written to the repository, and the catalog is rebuilt into a cache of its own.
    #[arg(long, global = true, value_name = "TIME")]
    pub repo_as_of: Option<String>,
    /// Where the catalog of a remote (S3) repository is cached (RECMAN_REPO_CACHE);
    /// default: ~/.cache/recman/<bucket>/<prefix>.
    #[arg(long, global = true, env = "RECMAN_REPO_CACHE")]
    pub repo_cache: Option<PathBuf>,
    /// A shared recovery catalog in PostgreSQL, postgresql://USER@HOST:PORT/DATABASE, instead
    /// of the repository's own catalog.db (RECMAN_CATALOG).
    #[arg(long, global = true, env = "RECMAN_CATALOG")]
    pub catalog: Option<String>,
    /// The cluster's data directory (RECMAN_PGDATA).
    #[arg(long, global = true, env = "RECMAN_PGDATA")]
    pub pgdata: Option<PathBuf>,
    /// libpq connection string of the target server; PGHOST, PGPORT, PGUSER, PGDATABASE apply when absent.
    #[arg(long, global = true)]
    pub target: Option<String>,
    /// TOML file with the same settings (repo, pgdata, target, db) (RECMAN_CONFIG).
    #[arg(long, global = true, env = "RECMAN_CONFIG")]
    pub config: Option<PathBuf>,
    /// Name of the registered database, when the repository holds several.
    #[arg(long, global = true, value_parser = crate::input::Name)]
    pub db: Option<String>,
    /// A file holding the key of an encrypted repository: 64 hex digits, or a passphrase
    /// (RECMAN_KEY_FILE; else RECMAN_PASSPHRASE).
    #[arg(long, global = true, env = "RECMAN_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// A command (run by sh -c) that prints the key of an encrypted repository, for a KMS or
    /// a vault (RECMAN_KEY_COMMAND).
    #[arg(long, global = true, env = "RECMAN_KEY_COMMAND")]
    pub key_command: Option<String>,
    /// A file holding the key that authenticates the repository's manifests (HMAC-SHA-256):
    /// 64 hex digits, kept outside the repository. Given at `create catalog`, the repository
    /// requires it from then on (RECMAN_MAC_KEY_FILE; else RECMAN_MAC_KEY).
    #[arg(long, global = true, env = "RECMAN_MAC_KEY_FILE")]
    pub mac_key_file: Option<PathBuf>,
    /// A command (run by sh -c) that prints the manifest MAC key (RECMAN_MAC_KEY_COMMAND).
    #[arg(long, global = true, env = "RECMAN_MAC_KEY_COMMAND")]
    pub mac_key_command: Option<String>,
    /// `key rotate`: a file holding the new key (else RECMAN_NEW_PASSPHRASE).
    #[arg(long, global = true)]
    pub new_key_file: Option<PathBuf>,
    /// `key rotate`: a command that prints the new key.
    #[arg(long, global = true)]
    pub new_key_command: Option<String>,
    /// The fleet transport: this host's certificate (PEM) for `recman server` and for reaching
    /// a database's agent (RECMAN_TLS_CERT; or `cert` in the config file's [tls]).
    #[arg(long, global = true, env = "RECMAN_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (RECMAN_TLS_KEY; or `key` in [tls]).
    #[arg(long, global = true, env = "RECMAN_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// The CA that signs the fleet's certificates; peers are checked against it
    /// (RECMAN_TLS_CA; or `ca` in [tls]).
    #[arg(long, global = true, env = "RECMAN_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Print only errors.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Print the plan and each step.
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// How long commands (backup, restore, validate) show progress on stderr: a bar on a
    /// terminal (auto), one JSON event per second for wrappers (json), or nothing (none).
    #[arg(long, global = true, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// `restore database`: write through this database host's agent, https://HOST:PORT
    /// (docs/fleet.md); the restore directory is then on that host. A database registered
    /// with `--agent` is restored through that agent without this; `local` restores here.
    #[arg(long, global = true)]
    pub agent: Option<String>,
}

/// What `--progress` selects.
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProgressMode {
    #[default]
    Auto,
    Json,
    None,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a repository and its catalog (RMAN's CREATE CATALOG).
    Create {
        #[command(subcommand)]
        what: CreateWhat,
    },
    /// Change a backup already taken (RMAN's CHANGE BACKUP).
    Change {
        #[command(subcommand)]
        what: ChangeWhat,
    },
    /// Record the target cluster in the catalog.
    Register {
        #[command(subcommand)]
        what: RegisterWhat,
    },
    /// Back up the running cluster.
    Backup {
        #[command(subcommand)]
        what: BackupWhat,
    },
    /// Restore a backup into a new directory, set up to recover to a target.
    Restore {
        #[command(subcommand)]
        what: RestoreWhat,
    },
    /// Test a restore for real: restore into a scratch directory, start PostgreSQL there,
    /// recover, run pg_amcheck and --check-sql, remove it, and record the outcome and the
    /// measured RTO in the catalog.
    Drill(Box<crate::drill_args::DrillArgs>),
    /// A standby or a writable clone from the newest backup (RMAN's DUPLICATE).
    Duplicate {
        #[command(subcommand)]
        what: crate::drill_args::DuplicateWhat,
    },
    /// Check pages of the cluster, or every piece of a backup, writing nothing.
    Validate {
        #[command(subcommand)]
        what: ValidateWhat,
    },
    /// Roll an image copy forward (RMAN's RECOVER COPY OF DATABASE), or repair damaged blocks
    /// of a stopped cluster (RECOVER … BLOCK, RECOVER CORRUPTION LIST).
    Recover {
        #[command(subcommand)]
        what: RecoverWhat,
    },
    /// List what the catalog knows.
    List {
        #[command(subcommand)]
        what: ListWhat,
    },
    /// Archive a WAL file, and the next ones PostgreSQL has marked ready (for
    /// archive_command = 'recman --repo R archive-push %p').
    ArchivePush {
        path: PathBuf,
        /// Compression of archived WAL.
        #[arg(long, default_value = "lz4")]
        compress: String,
        /// Segments archived per call, %p included: the oldest further segments with a
        /// `.ready` file in archive_status go along, so a backlog drains in batches and
        /// PostgreSQL's later calls for them return at once. 1: %p alone. Range: 1 to 1024.
        #[arg(long, default_value_t = recman_command::model::DEFAULT_PUSH_BATCH as u32,
              value_parser = crate::input::count::<u32>(recman_command::ranges::PUSH_BATCH))]
        batch: u32,
        /// Segments read, compressed and written at once (default: one per CPU core, at least
        /// 4, since each also waits for its fsyncs). Range: 1 to 256.
        #[arg(long, value_parser = crate::input::count::<u32>(recman_command::ranges::PUSH_PARALLEL))]
        parallel: Option<u32>,
        /// Send the file to the repository host's server, https://HOST:PORT, instead of
        /// writing the repository (with --db and this host's --tls-*; docs/fleet.md).
        #[arg(long)]
        repo_host: Option<String>,
    },
    /// Fetch an archived WAL file (for restore_command), with read-ahead of the next segments.
    ArchiveGet {
        name: String,
        dest: PathBuf,
        /// Segments kept fetched ahead of PostgreSQL in the spool by one background process;
        /// 0 turns read-ahead off. Range: 0 to 1024.
        #[arg(long, default_value_t = recman_command::model::DEFAULT_PREFETCH as u32,
              value_parser = crate::input::count::<u32>(recman_command::ranges::PREFETCH))]
        prefetch: u32,
        /// The read-ahead directory (default: recman-prefetch next to DEST, i.e. in pg_wal).
        /// One per cluster.
        #[arg(long)]
        spool: Option<PathBuf>,
        /// Written by restore when it sets a recovery target: a file that cannot be delivered
        /// is answered "not archived" (exit 1), since PostgreSQL then fails recovery itself if
        /// it needed the file before its target.
        #[arg(long, hide = true)]
        with_recovery_target: bool,
        /// Fetch the file from the repository host's server, https://HOST:PORT, instead of
        /// reading the repository (with --db and this host's --tls-*; docs/fleet.md).
        #[arg(long)]
        repo_host: Option<String>,
    },
    /// Stream the database's WAL into the repository as the primary writes it, until stopped
    /// (SIGINT/SIGTERM): a replication connection on a slot writes into a spool in the
    /// repository (an object store's: its local cache, with the open segment uploaded as part
    /// objects every --flush-interval), and each completed segment is archived as archive-push
    /// would (docs/wal.md).
    Receive {
        /// sync: a commit on a primary naming the receiver in synchronous_standby_names
        /// returns only once its WAL is durable in the repository (RPO zero); async: the spool
        /// is made durable every --flush-interval.
        #[arg(long, value_parser = ["sync", "async"], default_value = "async")]
        mode: String,
        /// The physical replication slot streamed from; it keeps the primary's WAL until the
        /// receiver has it, so drop a slot whose receiver is gone for good.
        #[arg(long, default_value = "recman")]
        slot: String,
        /// Create the slot when it is missing.
        #[arg(long)]
        create_slot: bool,
        /// How often received WAL is made durable and the position reported, in milliseconds
        /// (what a crash of the repository host may lose; in an object store, in either mode).
        /// Range: 1 to 3600000.
        #[arg(long, default_value_t = recman_command::DEFAULT_FLUSH_INTERVAL_MS,
              value_parser = crate::input::count::<u64>(recman_command::ranges::FLUSH_INTERVAL_MS))]
        flush_interval: u64,
        /// The name the primary sees in pg_stat_replication and synchronous_standby_names
        /// (default: recman_<db>).
        #[arg(long)]
        application_name: Option<String>,
        /// Compression of archived WAL.
        #[arg(long, default_value = "lz4")]
        compress: String,
    },
    /// Pushes a backlog of ready WAL segments; started by archive-push in the background.
    #[command(hide = true)]
    ArchivePushAhead {
        /// pg_wal: the segments and their archive_status.
        #[arg(long)]
        wal_dir: PathBuf,
        /// Push the segments marked ready after this one.
        #[arg(long)]
        after: String,
        /// Compression of archived WAL.
        #[arg(long, default_value = "lz4")]
        compress: String,
        /// Segments read, compressed and written at once. Range: 1 to 256.
        #[arg(long, value_parser = crate::input::count::<u32>(recman_command::ranges::PUSH_PARALLEL))]
        parallel: Option<u32>,
    },
    /// Fills archive-get's spool; started by archive-get in the background.
    #[command(hide = true)]
    ArchivePrefetch {
        /// The spool directory.
        #[arg(long)]
        spool: PathBuf,
        /// Fetch the archived segments after this one, on its timeline.
        #[arg(long)]
        after: String,
        /// How many. Range: 0 to 1024.
        #[arg(long, value_parser = crate::input::count::<usize>(recman_command::ranges::PREFETCH))]
        count: usize,
        /// Segments fetched at once (default: one per core but one, 1 to 8). Range: 1 to 64.
        #[arg(long, value_parser = crate::input::count::<usize>(recman_command::ranges::PREFETCH_PARALLEL))]
        parallel: Option<usize>,
        /// When archive-get started it (nanoseconds since the epoch): a spool clear after
        /// this time stops it. Range: 0 to 18446744073709551615.
        #[arg(long, value_parser = crate::input::count::<u64>((0, u64::MAX)))]
        spawned_at: Option<u64>,
    },
    /// Persistent settings in the catalog (RMAN's CONFIGURE).
    Configure {
        #[command(subcommand)]
        what: crate::catalog_cmds::ConfigureWhat,
    },
    /// Print settings with their values and sources (RMAN's SHOW).
    Show {
        #[command(subcommand)]
        what: crate::catalog_cmds::ShowWhat,
    },
    /// Reports on what retention would remove and what needs a backup.
    Report {
        #[command(subcommand)]
        what: crate::catalog_cmds::ReportWhat,
    },
    /// Remove backups and archived WAL, media first, then records.
    Delete {
        #[command(subcommand)]
        what: crate::catalog_cmds::DeleteWhat,
    },
    /// Check that the media still hold what the catalog lists.
    Crosscheck {
        #[command(subcommand)]
        what: crate::catalog_cmds::CrosscheckWhat,
    },
    /// The master key of an encrypted repository: show it, rotate it.
    Key {
        #[command(subcommand)]
        what: KeyWhat,
    },
    /// Catalog maintenance: rebuild it from the repository.
    Catalog {
        #[command(subcommand)]
        what: crate::catalog_cmds::CatalogWhat,
    },
    /// Run RMAN-style statements from a file (-f) or the command line (docs/language.md).
    Run(RunArgs),
    /// Measure, briefly and read-only, each tablespace device's read rate, each output
    /// device's write rate, the CPU's check and compression rates and the page cache
    /// (docs/tuning.md); stored in the catalog.
    Calibrate {
        #[arg(long)]
        json: bool,
    },
    /// The seeds' tuning steps from the newest calibration: channels, multiplexing, buffers,
    /// I/O mode, compression, the expected bottleneck and duration (docs/tuning.md).
    Advise {
        /// A backup window (H:MM[:SS]): whether the backup fits, and what would make it fit.
        #[arg(long)]
        window: Option<String>,
        #[arg(long)]
        json: bool,
        /// Store the settings as CONFIGURE does.
        #[arg(long)]
        apply: bool,
    },
    /// Print the repository's state in Prometheus text format, for monitoring: the last
    /// backups, WAL archiving, sizes, corrupt blocks, drills, the RPO and RTO targets, open
    /// failures, the last job's I/O (docs/monitoring.md).
    Metrics,
    /// Run the checks (archiving, WAL gaps, backups against the retention policy and the RPO
    /// target, missing pieces, corrupt blocks, drills against the interval and the RTO
    /// target, replication slots, the repository's free space), record the failures they
    /// find and close the ones gone; exits 1 while a CRITICAL or HIGH failure is open
    /// (docs/failures.md).
    Check {
        #[arg(long)]
        json: bool,
    },
    /// RMAN's Data Recovery Advisor: list the failures, advise their repairs, repair them.
    Failure {
        #[command(subcommand)]
        what: FailureWhat,
    },
    /// Run the database-host agent: serve the data directory at --pgdata to backup hosts over
    /// HTTP/2 with mutual TLS (--tls-cert, --tls-key, --tls-ca) until stopped, and write
    /// restores into --restore-dir. With --repo (and no --pgdata): the repository host's
    /// server, taking archive-push and archive-get from the database hosts (docs/fleet.md).
    Server {
        /// Address and port to listen on.
        #[arg(long, default_value = "0.0.0.0:8471")]
        listen: String,
        /// A client certificate CN that may connect (repeatable); without any, every
        /// certificate the CA signed may.
        #[arg(long)]
        allow: Vec<String>,
        /// Database host: a directory (or tablespace location) a restore through this agent
        /// may write into; every other path is refused (repeatable; docs/fleet.md).
        #[arg(long)]
        restore_dir: Vec<PathBuf>,
        /// Database host: the repository host's server that a cluster restored here fetches
        /// its WAL from (the restore_command's archive-get --repo-host).
        #[arg(long)]
        repo_host: Option<String>,
        /// Repository host: also run the WAL receiver for database DB (its name in the
        /// repository) streaming from the primary CONNINFO (a libpq conninfo), as `recman
        /// receive` does with its defaults: async, slot `recman`, created when missing
        /// (repeatable, one per database; docs/wal.md).
        #[arg(long, value_name = "DB=CONNINFO")]
        receive: Vec<String>,
        /// Repository host: also serve `recman metrics` (Prometheus text) over plain HTTP at
        /// this address, read from the catalog at each scrape (GET /metrics); bind it to an
        /// address only the monitoring system reaches (docs/monitoring.md).
        #[arg(long, value_name = "ADDR")]
        metrics_listen: Option<String>,
        /// Repository host: also serve the fleet page (each database's health, open
        /// failures, backups, RPO/RTO, drills and throughput) over HTTPS with the fleet's
        /// mutual TLS at this address: PORT alone binds 127.0.0.1 (docs/commands.md).
        #[arg(long, value_name = "ADDR")]
        page_listen: Option<String>,
        /// A file holding a read-only token the fleet page also asks for, as
        /// `Authorization: Bearer TOKEN`, besides the client certificate.
        #[arg(long, value_name = "FILE", requires = "page_listen")]
        page_token: Option<PathBuf>,
        /// A client certificate CN that may read the fleet page (repeatable); without any,
        /// every certificate the CA signed may. Separate from --allow, which lets a CN
        /// archive and fetch WAL.
        #[arg(long, value_name = "CN", requires = "page_listen")]
        page_allow: Vec<String>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print recman's manual page (roff), e.g. `recman man | man -l -`.
    Man,
}

#[derive(Subcommand, Debug)]
pub enum CreateWhat {
    /// The repository at --repo.
    Catalog {
        /// Encrypt every object of the repository (AES-256-GCM) under the key given by
        /// RECMAN_PASSPHRASE, --key-file or --key-command (docs/security.md).
        #[arg(long)]
        encrypt: bool,
        /// An immutable repository, in an S3 bucket with Object Lock: every object is written
        /// under a retention and never overwritten (docs/immutable.md).
        #[arg(long)]
        immutable: bool,
        /// The Object Lock mode of an immutable repository: compliance (default; nobody can
        /// shorten it) or governance (a user with s3:BypassGovernanceRetention can).
        #[arg(long, requires = "immutable", value_parser = crate::catalog_cmds::immutable::lock_mode)]
        lock_mode: Option<recman_command::model::LockMode>,
        /// The shortest retention of an object of an immutable repository, in days (fractions
        /// allowed; default 7; above 0); a longer recovery window lengthens it.
        /// Range: 0 to 36500.
        #[arg(long, requires = "immutable", value_parser = crate::input::Days)]
        lock_days: Option<f64>,
    },
    /// A named restore point on the target (pg_create_restore_point), recorded in the catalog
    /// for `restore database --until-restore-point`.
    RestorePoint {
        #[arg(value_parser = crate::input::Name)]
        name: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum ChangeWhat {
    /// The backups with this id or tag.
    Backup {
        which: String,
        /// Retention never removes it nor its WAL (RMAN's KEEP FOREVER).
        #[arg(long, group = "change")]
        keep_forever: bool,
        /// As --keep-forever until this time, then obsolete as any other backup (RMAN's KEEP
        /// UNTIL TIME).
        #[arg(long, group = "change", value_name = "TIME")]
        keep_until: Option<String>,
        /// Retention treats it as any other backup again (RMAN's NOKEEP).
        #[arg(long, group = "change")]
        nokeep: bool,
        /// Restore never chooses it (RMAN's UNAVAILABLE), e.g. while its tape is offsite.
        #[arg(long, group = "change")]
        unavailable: bool,
        /// Restore may choose it again (RMAN's AVAILABLE).
        #[arg(long, group = "change")]
        available: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum KeyWhat {
    /// Which master key of the encrypted repository is current (its fingerprint) and when it
    /// was set.
    Show,
    /// Re-wrap the repository's keys under a new key (RECMAN_NEW_PASSPHRASE, --new-key-file or
    /// --new-key-command); no data object is rewritten and the old key opens nothing after.
    Rotate,
}

#[derive(Subcommand, Debug)]
pub enum RegisterWhat {
    /// The cluster at --pgdata / --target.
    Database {
        /// Name for the cluster in this repository (clones share a system identifier).
        #[arg(long, default_value = "main", value_parser = crate::input::Name)]
        name: String,
        /// The database host's agent (`recman server --pgdata` there), https://HOST:PORT:
        /// backups and `validate database` read the cluster's files through it.
        #[arg(long)]
        agent: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum BackupWhat {
    Database(Box<BackupArgs>),
    /// Archived WAL from the repository's archive into backup sets.
    Archivelog(crate::catalog_cmds::ArchivelogBackupArgs),
    /// A new level 0 merged from a level 0 and its level 1s inside the repository, without
    /// reading the database.
    SyntheticFull {
        /// The backup (id or tag) whose chain to merge (default: the newest available).
        #[arg(long, value_parser = crate::input::Name)]
        from: Option<String>,
        #[arg(long, value_parser = crate::input::Name)]
        tag: Option<String>,
        /// none, lz4, zstd or zstd:LEVEL.
        #[arg(long, default_value = "lz4")]
        compress: String,
    },
    /// Copy backups already in the repository to another device (second tier).
    Backupset {
        /// `all` (every AVAILABLE backup), or a backup id or tag.
        #[arg(value_parser = crate::input::Name)]
        which: String,
        /// disk, s3 or sbt, as configured with `configure device-type`.
        #[arg(long)]
        device_type: String,
    },
    /// Copy every backup and all archived WAL to another device (RMAN's BACKUP RECOVERY AREA).
    RecoveryArea {
        #[arg(long)]
        device_type: String,
    },
    /// A consistent copy of the catalog, with the cluster's pg_control, as one piece (RMAN's
    /// BACKUP CURRENT CONTROLFILE); `restore controlfile --from` brings the catalog back.
    Controlfile {
        /// Where the piece goes: a directory and a name template with RMAN's substitution
        /// variables, e.g. /srv/backup/ctl_%U.rbf. Default: controlfile/ in the repository.
        #[arg(long, value_name = "TEMPLATE")]
        format: Option<String>,
    },
}

#[derive(Args, Debug)]
pub struct BackupArgs {
    #[arg(long, help = T::CHANNELS.help, value_parser = crate::input::count_of::<u32>(&T::CHANNELS))]
    pub channels: Option<u32>,
    #[arg(long, help = T::FILESPERSET.help, value_parser = crate::input::count_of::<u32>(&T::FILESPERSET))]
    pub filesperset: Option<u32>,
    #[arg(long, help = T::MAXOPENFILES.help, value_parser = crate::input::count_of::<u32>(&T::MAXOPENFILES))]
    pub maxopenfiles: Option<u32>,
    #[arg(long, help = T::COMPRESSION.help)]
    pub compress: Option<String>,
    #[arg(long, value_parser = crate::input::Name)]
    pub tag: Option<String>,
    #[arg(long, help = T::MAXCORRUPT.help, default_value_t = 0,
          value_parser = crate::input::count_of::<u32>(&T::MAXCORRUPT))]
    pub maxcorrupt: u32,
    /// Also check the structure inside heap and B-tree pages (line pointers, items), beyond
    /// checksum and header (RMAN's CHECK LOGICAL); a failing page counts against --maxcorrupt.
    #[arg(long)]
    pub check_logical: bool,
    /// Back up every file even when backup optimization is on (RMAN's FORCE).
    #[arg(long)]
    pub force: bool,
    /// A streaming standby of the target (libpq conninfo) on this host: the channels read
    /// relation files from its data directory, taking the read load off the primary.
    #[arg(long)]
    pub standby: Option<String>,
    /// The agent of a streaming standby (`recman server --pgdata` on its host),
    /// https://HOST:PORT: the channels read the standby's relation files through it, so the
    /// standby may run on another host; without --standby the agent's own session checks the
    /// standby (the language's ALLOCATE CHANNEL … CONNECT 'https://…').
    #[arg(long)]
    pub standby_agent: Option<String>,
    /// Where the pieces go: disk, s3 or sbt (`configure device-type`); one channel per
    /// device stream. Default: `configure default-device-type`, else the repository.
    #[arg(long)]
    pub device_type: Option<String>,
    #[arg(long, help = T::ARCHIVE_TIMEOUT.help, default_value_t = 120, value_parser = crate::input::count_of::<u64>(&T::ARCHIVE_TIMEOUT))]
    pub archive_timeout: u64,
    /// Also back up archived WAL: the WAL not yet backed up before the database, the WAL
    /// generated during it after (RMAN's PLUS ARCHIVELOG).
    #[arg(long)]
    pub plus_archivelog: bool,
    #[arg(long, help = T::SECTION_SIZE.help, value_name = "SIZE", value_parser = crate::input::size_of(&T::SECTION_SIZE))]
    pub section_size: Option<String>,
    #[arg(long, help = T::INCREMENTAL_LEVEL.help, value_parser = crate::input::count_of::<u8>(&T::INCREMENTAL_LEVEL))]
    pub incremental_level: Option<u8>,
    /// With --incremental-level 1: changes since the last level 0 rather than the last backup.
    #[arg(long, requires = "incremental_level")]
    pub cumulative: bool,
    /// Also keep this backup as an image copy named by --tag: a plain data directory in the
    /// repository that level 1s taken --for-recover-of-copy roll forward (RMAN's AS COPY).
    #[arg(long, requires = "tag", conflicts_with = "incremental_level")]
    pub as_copy: bool,
    /// With --incremental-level 1: relative to the image copy named by --tag (RMAN's FOR RECOVER
    /// OF COPY); makes the copy when it does not exist yet.
    #[arg(long, requires = "tag")]
    pub for_recover_of_copy: bool,
    /// Write the pieces in a directory of your own under names made from a template with
    /// RMAN's substitution variables, e.g. /srv/backup/ora_%U.rbf (RMAN's FORMAT); the
    /// catalog records where each piece is.
    #[arg(long, value_name = "TEMPLATE")]
    pub format: Option<String>,
    #[arg(long, help = T::MAXSETSIZE.help, value_name = "SIZE", value_parser = crate::input::size_of(&T::MAXSETSIZE))]
    pub maxsetsize: Option<String>,
    #[command(flatten)]
    pub table: crate::table_args::TableArgs,
    #[arg(long, help = T::BACKUP_COPIES.help, value_parser = crate::input::count_of::<u32>(&T::BACKUP_COPIES))]
    pub copies: Option<u32>,
    /// Where a further copy of each piece goes (a --format template in a directory of its
    /// own); once per copy after the first.
    #[arg(long, value_name = "TEMPLATE")]
    pub copy_format: Vec<String>,
    /// An archival backup: `delete obsolete` never removes it nor the WAL from its start to
    /// its stop (RMAN's KEEP FOREVER).
    #[arg(long, conflicts_with = "keep_until")]
    pub keep_forever: bool,
    /// As --keep-forever until this time (RMAN's KEEP UNTIL TIME).
    #[arg(long, value_name = "TIME")]
    pub keep_until: Option<String>,
    #[command(flatten)]
    pub io: crate::io_args::IoArgs,
    #[command(flatten)]
    pub window: crate::window_args::WindowArgs,
}

#[derive(Subcommand, Debug)]
pub enum RestoreWhat {
    Database(Box<RestoreArgs>),
    /// Put the catalog held by a piece of `backup controlfile` into the repository (RMAN's
    /// RESTORE CONTROLFILE FROM); a catalog already there is kept beside it, renamed.
    Controlfile {
        /// The piece file.
        #[arg(long)]
        from: std::path::PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// New (or empty) data directory.
    #[arg(long, required_unless_present_any = ["preview", "validate"])]
    pub to: Option<PathBuf>,
    /// Print the restore plan (backups, pieces and their copies, WAL segments and where each
    /// comes from, bytes, estimated duration) and write nothing (RMAN's RESTORE … PREVIEW).
    #[arg(long, conflicts_with = "validate")]
    pub preview: bool,
    /// Read and verify every piece and WAL segment the restore would use, writing nothing
    /// (RMAN's RESTORE … VALIDATE).
    #[arg(long)]
    pub validate: bool,
    /// With --preview or --validate: print the plan or the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Restore although the archived WAL has a gap between the backup's end and the target:
    /// recovery then ends before the first missing segment.
    #[arg(long)]
    pub allow_wal_gap: bool,
    /// Clear a target directory that an interrupted (failed or killed) restore wrote before
    /// restoring into it; recman knows it by the marker file that restore left, and refuses
    /// any other non-empty directory.
    #[arg(long)]
    pub force: bool,
    /// How restored files are written: auto (a restore of 256 MiB or more sends its writes
    /// both ways, measures what each costs, and keeps the cheaper while it writes; smaller ones
    /// write directly), direct (O_DIRECT) or buffered (through the page cache, its writeback
    /// started as it goes). Every file is durable before the restore reports done, whichever way.
    #[arg(long, default_value = "auto", value_parser = ["auto", "direct", "buffered"])]
    pub write_mode: String,
    /// Recover to this time (local time unless a zone is given).
    #[arg(long, group = "until")]
    pub until_time: Option<String>,
    /// Recover to this LSN.
    #[arg(long, group = "until")]
    pub until_lsn: Option<String>,
    /// Recover to the commit of this transaction.
    #[arg(long, group = "until")]
    pub until_xid: Option<String>,
    /// Recover to this named restore point (made by `create restore-point`).
    #[arg(long, group = "until", value_parser = crate::input::Name)]
    pub until_restore_point: Option<String>,
    /// Restore from the newest backup with this tag.
    #[arg(long, value_parser = crate::input::Name)]
    pub from_tag: Option<String>,
    /// Parallel streams. Range: 1 to 256.
    #[arg(long, default_value_t = 1,
          value_parser = crate::input::count::<u32>(crate::input::CHANNELS))]
    pub channels: u32,
    /// OLD=NEW: restore the tablespace at location (or name, or oid) OLD to NEW.
    #[arg(long, value_name = "OLD=NEW")]
    pub tablespace_map: Vec<String>,
    /// Archiving in the restored cluster: off (default; a copy must not archive into the
    /// source's WAL archive) or preserve (keep the source's settings, e.g. after losing it).
    #[arg(long, default_value = "off", value_parser = ["off", "preserve"])]
    pub archive_mode: String,
    /// Restore from the image copy with this tag instead of backup sets.
    #[arg(long, value_parser = crate::input::Name)]
    pub from_copy: Option<String>,
    /// With --from-copy: move the copy's files into place instead of copying them (the copy
    /// is used up; same file system only). The shortest recovery time.
    #[arg(long, requires = "from_copy")]
    pub switch_to_copy: bool,
    /// recovery_target_timeline (default: PostgreSQL's, latest).
    #[arg(long)]
    pub timeline: Option<String>,
    /// Restore only this database (repeatable), with the cluster-wide files and the system
    /// databases (template0, template1, postgres); the others are left out and refuse
    /// connections until dropped.
    #[arg(long, value_name = "NAME", value_parser = crate::input::Name)]
    pub include_db: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum ValidateWhat {
    /// Every page of the data directory at --pgdata.
    Database {
        /// Channels reading at once, each its own thread and I/O engine (default 1); a large
        /// file is shared among them in sections. Range: 1 to 256.
        #[arg(long, value_parser = crate::input::count::<u32>(crate::input::CHANNELS))]
        channels: Option<u32>,
        /// Files read at once per channel. Range: 1 to 1024.
        #[arg(long, default_value_t = 8,
              value_parser = crate::input::count::<u32>(crate::input::MAXOPENFILES))]
        maxopenfiles: u32,
        /// Also check the structure inside heap and B-tree pages (RMAN's CHECK LOGICAL).
        #[arg(long)]
        check_logical: bool,
        #[command(flatten)]
        io: crate::io_args::IoArgs,
    },
    /// Every piece of a backup (default: the newest).
    Backup {
        #[arg(value_parser = crate::input::Name)]
        which: Option<String>,
        /// Pieces read at once, each on its own thread (default: one per core).
        /// Range: 1 to 256.
        #[arg(long, value_parser = crate::input::count::<u32>(crate::input::CHANNELS))]
        channels: Option<u32>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ListWhat {
    Backup {
        #[arg(long)]
        json: bool,
        /// One line per backup (RMAN's LIST BACKUP SUMMARY).
        #[arg(long, conflicts_with = "by_file")]
        summary: bool,
        /// One line per backed-up file and backup (RMAN's LIST BACKUP BY FILE).
        #[arg(long)]
        by_file: bool,
    },
    /// Archived WAL files (`all`, the default: every one).
    Archivelog {
        #[arg(value_parser = ["all"])]
        which: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// PostgreSQL timelines, from archived history files.
    Incarnation {
        #[arg(long)]
        json: bool,
    },
    /// Image copies in the repository: plain data directories made by `backup database
    /// --as-copy` and rolled forward by level 1s taken --for-recover-of-copy, with the backup
    /// each is at (RMAN's LIST COPY).
    Copy {
        #[arg(long)]
        json: bool,
    },
    /// Measurements taken by `recman calibrate`, newest last.
    Calibration {
        #[arg(long)]
        json: bool,
    },
    /// Restore drills, oldest first: status, RTO, checks.
    Drill {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum FailureWhat {
    /// Run the checks, then list the open failures (RMAN's LIST FAILURE).
    List {
        /// Only these failures (open or closed).
        ids: Vec<i64>,
        /// Closed failures too.
        #[arg(long)]
        all: bool,
        /// Each failure's message and repair options.
        #[arg(long)]
        detail: bool,
        #[arg(long)]
        json: bool,
    },
    /// Run the checks, then give each open failure (or those named) its manual and automatic
    /// repairs; the automatic ones are written as a script in recman's language, whose path
    /// is printed (RMAN's ADVISE FAILURE).
    Advise {
        ids: Vec<i64>,
        /// Where to write the script (default: the repository's repair/ directory).
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Run the advised repair script as `recman run` would, then check again and say which
    /// failures closed (RMAN's REPAIR FAILURE).
    Repair {
        /// Print the script and change nothing (no catalog change, no file).
        #[arg(long)]
        preview: bool,
        /// Where to write the script before running it (default: the repository's repair/).
        #[arg(long, value_name = "FILE", conflicts_with = "preview")]
        script: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Script file of RMAN-style statements (RMAN's cmdfile); `-` reads standard input.
    #[arg(short = 'f', long = "file", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// Statements to run, e.g. 'BACKUP DATABASE;'.
    pub text: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum RecoverWhat {
    /// Apply the level 1 backups taken --for-recover-of-copy to the image copy.
    Copy {
        /// The copy's tag.
        #[arg(long, value_parser = crate::input::Name)]
        tag: String,
        /// Apply only level 1s that ended by this time (e.g. a day ago, to keep a copy that lags).
        #[arg(long)]
        until_time: Option<String>,
    },
    /// Bring one table back to a past time through an auxiliary instance (RMAN's RECOVER
    /// TABLE): only the cluster-wide files, the database's catalogs and the table's files are
    /// restored there; the table is dumped with pg_dump and loaded into the live cluster
    /// (--target) under --remap-table, or only written to --dump.
    Table {
        /// SCHEMA.TABLE (no schema: public).
        table: String,
        /// The database holding the table (default: postgres).
        #[arg(long)]
        database: Option<String>,
        /// The table as it was at this time.
        #[arg(long, group = "table_until")]
        until_time: Option<String>,
        /// The table as it was at this LSN.
        #[arg(long, group = "table_until")]
        until_lsn: Option<String>,
        /// The table as it was at the commit of this transaction.
        #[arg(long, group = "table_until")]
        until_xid: Option<String>,
        /// The name it comes back as: NAME (same schema) or SCHEMA.NAME; its indexes and
        /// owned sequences get NAME_ before their names.
        #[arg(long, value_name = "NEW")]
        remap_table: Option<String>,
        /// Only write the table's dump (pg_dump's plain SQL) to FILE; load nothing.
        #[arg(long, value_name = "FILE")]
        dump: Option<PathBuf>,
        /// Where the auxiliary instance is made and removed (new or empty; default: under the
        /// temporary directory).
        #[arg(long, value_name = "DIR")]
        auxiliary_dir: Option<PathBuf>,
        /// Parallel restore streams. Range: 1 to 256.
        #[arg(long, default_value_t = 1,
              value_parser = crate::input::count::<u32>(crate::input::CHANNELS))]
        channels: u32,
    },
    /// Repair blocks of the stopped cluster from the newest backup before its last checkpoint,
    /// brought forward with the WAL since (RMAN's RECOVER … BLOCK; docs/recovery.md).
    Block {
        /// FILE:BLOCK: FILE relative to the data directory (base/5/16384, or a segment
        /// base/5/16384.1), BLOCK as `validate database` prints it.
        #[arg(required = true, value_name = "FILE:BLOCK")]
        blocks: Vec<String>,
        /// Where the backup is restored and recovered (removed afterwards).
        /// Default: PGDATA.recman-aux beside the data directory.
        #[arg(long, value_name = "DIR")]
        auxiliary_dir: Option<PathBuf>,
    },
    /// Repair every block the last `validate database` recorded as corrupt (RMAN's RECOVER
    /// CORRUPTION LIST), as `recover block` does.
    CorruptionList {
        /// As for `recover block`.
        #[arg(long, value_name = "DIR")]
        auxiliary_dir: Option<PathBuf>,
    },
}
