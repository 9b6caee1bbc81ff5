//! The option table: every repository-wide setting and every backup tunable with a range,
//! each written once — its name, kind and range, default, unit, environment variable, config
//! file key, catalog key, RMAN keyword and help. The settings list CONFIGURE and SHOW ALL use
//! ([`crate::precedence::SPECS`]), the config file's keys, the ranges of [`crate::ranges`], the
//! generic checks of CONFIGURE values and the CLI's value parsers and help all derive from it,
//! so a new option is one row here plus the code that uses its value.

mod def;
mod settings;
mod tunables;

pub use def::{Kind, OptionDef, Range};
pub use settings::*;
pub use tunables::*;

/// Every option, the settings first in the order `show all` prints them.
pub const TABLE: &[OptionDef] = &[
    RETENTION_POLICY,
    CHANNELS,
    COMPRESSION,
    FILESPERSET,
    MAXOPENFILES,
    BACKUP_OPTIMIZATION,
    SECTION_SIZE,
    ARCHIVELOG_DELETION_POLICY,
    BACKUP_COPIES,
    TUNING,
    INCREMENTAL_FOREVER,
    IMPORTED_RETENTION,
    RPO_TARGET,
    RTO_TARGET,
    DRILL_INTERVAL,
    SLOT_RETENTION_LIMIT,
    REPOSITORY_MIN_FREE,
    REPOSITORY_LOCK_LIMIT,
    CERTIFICATE_EXPIRY_WARNING,
    BACKUP_WINDOW,
    MAXPIECESIZE,
    MAXSETSIZE,
    MAXCORRUPT,
    ARCHIVE_TIMEOUT,
    INCREMENTAL_LEVEL,
    IO_SLAVES,
    INPUT_BUFFERS,
    INPUT_BUFFER_SIZE,
    OUTPUT_BUFFERS,
    BLKSIZE,
    RATE,
];

/// The rows whose backup flag is made from the table.
pub fn backup_flags() -> impl Iterator<Item = &'static OptionDef> {
    TABLE.iter().filter(|d| d.flag_from_table)
}

/// The row of option `name`.
pub fn get(name: &str) -> Option<&'static OptionDef> {
    TABLE.iter().find(|d| d.name == name)
}
