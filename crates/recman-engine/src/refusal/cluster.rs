//! Refusals about which cluster a data directory, server, agent or standby is, and about the
//! state a cluster is in.

/// A data directory, server or agent that is not the cluster the command is for, or a
/// cluster whose state forbids the command.
#[derive(Debug, thiserror::Error)]
pub enum Cluster {
    /// `--pgdata` and `--target` name different clusters (system identifiers differ).
    #[error(
        "data directory {dir} (system identifier {dir_sysid}) does not belong to the server at {server} (system identifier {server_sysid}); hint: point --pgdata and --target at the same cluster"
    )]
    DataDirOfOtherServer {
        dir: String,
        dir_sysid: u64,
        server: String,
        server_sysid: u64,
    },
    /// `--pgdata` is a copy of the server's cluster, not its own data directory.
    #[error(
        "--pgdata {dir} is not the data directory of the server at {server} ({server_dir}); hint: a copy of the cluster shares its identifier, point --pgdata at {server_dir}"
    )]
    CopyOfServerDataDir {
        dir: String,
        server: String,
        server_dir: String,
    },
    /// `--agent` and `--target` name different clusters.
    #[error(
        "the data directory served by the agent at {agent} (system identifier {agent_sysid}) does not belong to the server at {server} (system identifier {server_sysid}); hint: point --agent and --target at the same cluster"
    )]
    AgentOfOtherServer {
        agent: String,
        agent_sysid: u64,
        server: String,
        server_sysid: u64,
    },
    /// A data directory that is not the registered database's cluster.
    #[error(
        "data directory {dir} belongs to cluster {sysid}, not to database {db:?} ({db_sysid}); hint: give the --pgdata of the registered cluster"
    )]
    DataDirOfOtherDatabase {
        dir: String,
        sysid: u64,
        db: String,
        db_sysid: u64,
    },
    /// A server to back up that is not the registered database's cluster.
    #[error(
        "the server at {server} (system identifier {sysid}) is not database {db:?} registered in this repository (system identifier {db_sysid}); hint: register it under another name with `recman register database --name NAME`"
    )]
    ServerOfOtherDatabase {
        server: String,
        sysid: u64,
        db: String,
        db_sysid: u64,
    },
    /// A server to receive WAL from that is not the registered database's cluster (`target`
    /// as the connection names itself, without its password).
    #[error(
        "the server at {target} has system identifier {sysid}, not database {db:?}'s {db_sysid}; nothing was received; hint: --target must name the registered cluster's primary"
    )]
    ReceiveFromOtherDatabase {
        target: String,
        sysid: u64,
        db: String,
        db_sysid: u64,
    },
    /// Backups to import that belong to another cluster than the database named.
    #[error(
        "the backups belong to system identifier {sysid}, but database {db:?} is registered with {db_sysid}; hint: import them under another --db name"
    )]
    ImportOfOtherDatabase {
        sysid: u64,
        db: String,
        db_sysid: u64,
    },
    /// A standby of another cluster than the target.
    #[error(
        "server {who} has system identifier {sysid}, the target has {target_sysid}: it is not a standby of the target; hint: give --standby a streaming standby of the cluster being backed up"
    )]
    StandbyOfOtherCluster {
        who: String,
        sysid: u64,
        target_sysid: u64,
    },
    /// A standby whose data directory is another cluster's.
    #[error(
        "data directory {dir} belongs to another cluster (system identifier {sysid}); hint: the standby's data directory must be the one on this host (or its agent's)"
    )]
    StandbyDataDirOfOtherCluster { dir: String, sysid: u64 },
    /// A standby whose data directory cannot be read from here.
    #[error(
        "the data directory {dir} of standby {who} cannot be read: {why}; hint: a standby channel reads the standby's files, so the standby must run on this host, or give --standby-agent with the agent on its host"
    )]
    StandbyDataDirUnreadable {
        dir: String,
        who: String,
        why: String,
    },
    /// A backup from a standby without a standby named.
    #[error("a backup from a standby needs --standby CONNINFO or --standby-agent URL")]
    NoStandbyNamed,
    /// `--standby` names a primary.
    #[error(
        "server {who} is not in recovery: it is a primary, not a standby; hint: give --standby a streaming standby, or leave it out to read the primary"
    )]
    StandbyIsPrimary { who: String },
    /// `--target` of a backup names a standby.
    #[error(
        "the server at {server} is a standby; hint: back up the primary (backups from a standby come with channels connected to it)"
    )]
    TargetIsStandby { server: String },
    /// A server that does not archive its WAL, so an online backup of it cannot recover.
    #[error(
        "cannot back up the server at {server}: archive_mode is {archive_mode} and wal_level is {wal_level}; an online backup needs its WAL archived; hint: set wal_level = replica, archive_mode = on and archive_command = 'recman --repo {repo} archive-push %p', then restart PostgreSQL"
    )]
    NotArchiving {
        server: String,
        archive_mode: String,
        wal_level: String,
        repo: String,
    },
    /// A command that reads the cluster's files was given neither a data directory nor an
    /// agent (`agent_ok`: whether registering an agent would do instead).
    #[error("{what} needs the cluster's data directory; hint: {}", needs_data_dir_hint(.agent_ok))]
    NeedsDataDir { what: String, agent_ok: bool },
    /// Block recovery writes pages of a stopped cluster only.
    #[error(
        "the cluster at {pgdata} is running (postmaster.pid names live process {pid}): blocks {blocks} were left as they are; hint: stop it first (pg_ctl -D {pgdata} stop -m fast): block recovery writes pages of a stopped cluster only"
    )]
    Running {
        pgdata: String,
        pid: i32,
        blocks: String,
    },
    /// Block recovery needs the pages as a clean shutdown left them.
    #[error(
        "the cluster at {pgdata} was not shut down cleanly (state: {state}): blocks {blocks} were left as they are; hint: start it so crash recovery completes, stop it with pg_ctl -D {pgdata} stop -m fast, then recover the blocks"
    )]
    NotShutDownCleanly {
        pgdata: String,
        state: String,
        blocks: String,
    },
    /// A pg_control whose checkpoint cannot be read, so blocks cannot be recovered.
    #[error(
        "cannot read the last checkpoint of {pgdata} (global/pg_control fails its check); hint: the blocks {blocks} need a full restore"
    )]
    NoCheckpoint { pgdata: String, blocks: String },
    /// A directory without PG_VERSION.
    #[error("{file} does not hold a PostgreSQL major version; hint: is {pgdata} a data directory?")]
    NoMajorVersion { file: String, pgdata: String },
    /// PostgreSQL does not start on a data directory owned by root.
    #[error(
        "data directory {pgdata} belongs to root and PostgreSQL refuses to run as root; hint: run recman as the PostgreSQL OS user (e.g. sudo -u postgres recman ...)"
    )]
    OwnedByRoot { pgdata: String },
    /// An incremental pg_basebackup not yet combined, given as a data directory.
    #[error(
        "{file} is a file of an incremental pg_basebackup ({prefix}*), so {dir} is not a cluster's data directory but a backup pg_combinebackup has not combined; hint: run pg_combinebackup and start PostgreSQL on its output before backing it up with recman"
    )]
    UncombinedIncremental {
        file: String,
        prefix: String,
        dir: String,
    },
    /// pg_switch_wal() answered nothing.
    #[error(
        "the server at {server} returned no wal file name for pg_switch_wal(); hint: check that the target is a primary, not a standby"
    )]
    NoSwitchedWal { server: String },
    /// pg_create_restore_point answered nothing.
    #[error(
        "the server at {server} returned no lsn for pg_create_restore_point; hint: check that the target is a primary with wal_level replica or logical"
    )]
    NoRestorePointLsn { server: String },
}

fn needs_data_dir_hint(agent_ok: &bool) -> &'static str {
    if *agent_ok {
        "pass --pgdata DIR or set RECMAN_PGDATA, or register the database with --agent URL to read it through its agent"
    } else {
        "give --pgdata DIR"
    }
}
