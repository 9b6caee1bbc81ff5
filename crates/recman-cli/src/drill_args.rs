//! clap arguments of `drill` and `duplicate database`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct DrillArgs {
    /// Recover to this time (local time unless a zone is given); default: the end of the
    /// archived WAL.
    #[arg(long, conflicts_with = "until_lsn")]
    pub until_time: Option<String>,
    /// Recover to this LSN.
    #[arg(long)]
    pub until_lsn: Option<String>,
    /// A check run in database postgres once recovery has ended; it fails when the statement
    /// errors or returns no row, or a row whose first value is false. Repeatable.
    #[arg(long = "check-sql", value_name = "SQL")]
    pub check_sql: Vec<String>,
    /// Leave the instance running and its directory in place (to look at it).
    #[arg(long)]
    pub keep: bool,
    /// The scratch directory (absent or empty; default: a new one in the temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Restore from the newest backup with this tag.
    #[arg(long, value_parser = crate::input::Name)]
    pub from_tag: Option<String>,
    /// Parallel restore streams. Range: 1 to 256.
    #[arg(long, default_value_t = 1,
          value_parser = crate::input::count::<u32>(crate::input::CHANNELS))]
    pub channels: u32,
}

#[derive(Subcommand, Debug)]
pub enum DuplicateWhat {
    /// Restore the newest backup into a new cluster: a standby that recovers from the
    /// archive then streams (--for-standby), or a clone that opens for writes.
    Database(Box<DuplicateArgs>),
}

#[derive(Args, Debug)]
pub struct DuplicateArgs {
    /// New (or empty) data directory.
    #[arg(long)]
    pub to: PathBuf,
    /// Configure a standby: standby.signal, primary_conninfo, restore_command.
    #[arg(long)]
    pub for_standby: bool,
    /// The primary's libpq connection string (with --for-standby).
    #[arg(long)]
    pub primary_conninfo: Option<String>,
    /// The replication slot on the primary (with --for-standby).
    #[arg(long, value_parser = crate::input::Name)]
    pub slot: Option<String>,
    /// The port the new cluster listens on (refused when taken; default: a free one).
    /// Range: 1 to 65535.
    #[arg(long, value_parser = crate::input::count::<u16>(recman_command::ranges::PORT))]
    pub port: Option<u16>,
    /// Recover the clone to this time instead of the end of the archived WAL.
    #[arg(long, conflicts_with = "for_standby")]
    pub until_time: Option<String>,
    /// Parallel restore streams. Range: 1 to 256.
    #[arg(long, default_value_t = 1,
          value_parser = crate::input::count::<u32>(crate::input::CHANNELS))]
    pub channels: u32,
}

impl From<DrillArgs> for recman_command::Drill {
    fn from(a: DrillArgs) -> Self {
        let mut d = recman_command::Drill::new();
        d.restore.until_time = a.until_time;
        d.restore.until_lsn = a.until_lsn;
        d.restore.from_tag = a.from_tag;
        d.restore.channels = a.channels;
        d.check_sql = a.check_sql;
        d.keep = a.keep;
        d.dir = a.dir;
        d
    }
}

impl From<DuplicateArgs> for recman_command::DuplicateDatabase {
    fn from(a: DuplicateArgs) -> Self {
        let mut r = recman_command::RestoreDatabase::into(Some(a.to));
        r.until_time = a.until_time;
        r.channels = a.channels;
        recman_command::DuplicateDatabase {
            restore: r,
            for_standby: a.for_standby,
            primary_conninfo: a.primary_conninfo,
            slot: a.slot,
            port: a.port,
        }
    }
}
