//! The option table: every repository-wide setting and every backup tunable with a range,
//! each written once — its name, kind and range, default, unit, environment variable, config
//! file key, catalog key, RMAN keyword and help. The settings list CONFIGURE and SHOW ALL use
//! ([`crate::precedence::SPECS`]), the config file's keys, the ranges of [`crate::ranges`], the
//! generic checks of CONFIGURE values and the CLI's value parsers and help all derive from it,
//! so a new option is one row here plus the code that uses its value.

use crate::check::Range;

/// What values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number in the range.
    Count(Range),
    /// A size (512K, 1M, 2G; bytes without a suffix) in the range of bytes.
    Size(Range),
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A whole number with s, m, h or d.
    Duration,
    /// Free text checked by the setting's own parser (a retention policy, a compression).
    Text,
    /// A flag without a value.
    Switch,
}

/// One option, written once.
#[derive(Debug, Clone, Copy)]
pub struct OptionDef {
    /// The flag's name without dashes, and the name `configure` and `show all` use.
    pub name: &'static str,
    pub kind: Kind,
    /// The built-in default as `show all` prints it; None: unset (`show all` prints none).
    pub default: Option<&'static str>,
    /// What a number counts, for help and documents.
    pub unit: Option<&'static str>,
    /// The environment variable the flag reads when not given.
    pub env: Option<&'static str>,
    /// Its key in the --config file; None when the file may not set it.
    pub config_key: Option<&'static str>,
    /// Its key in the catalog; Some makes it a setting CONFIGURE stores and SHOW ALL prints.
    pub catalog_key: Option<&'static str>,
    /// RMAN's keyword for it, where RMAN has one.
    pub rman: Option<&'static str>,
    /// The backup command's `--NAME` is made from this row (the CLI's `table_args`) and its
    /// value carried by name in `BackupDatabase::table`, so the option needs no field of its
    /// own anywhere between the flag and the code that uses it.
    pub flag_from_table: bool,
    /// The flag's help as `--help` prints it (it states the range of a number or a size; no
    /// final period, as clap prints a one-paragraph doc comment).
    pub help: &'static str,
}

impl OptionDef {
    /// The range of a count or a size; a const fn so that [`crate::ranges`] can name it.
    pub const fn range(&self) -> Range {
        match self.kind {
            Kind::Count(r) | Kind::Size(r) => r,
            _ => panic!("only counts and sizes have a range"),
        }
    }

    /// Whether CONFIGURE stores it and SHOW ALL prints it.
    pub const fn configurable(&self) -> bool {
        self.catalog_key.is_some()
    }

    /// The default as `show all` and `configure … clear` print it.
    pub fn default_text(&self) -> &'static str {
        self.default.unwrap_or("none")
    }
}

/// A row with nothing but its name, kind and help; the rows below fill in the rest.
const fn row(name: &'static str, kind: Kind, help: &'static str) -> OptionDef {
    OptionDef {
        name,
        kind,
        default: None,
        unit: None,
        env: None,
        config_key: None,
        catalog_key: None,
        rman: None,
        flag_from_table: false,
        help,
    }
}

const ON_OFF: &[&str] = &["on", "off"];
const MIB: u64 = 1 << 20;

pub const RETENTION_POLICY: OptionDef = OptionDef {
    default: Some("redundancy 1"),
    config_key: Some("retention_policy"),
    catalog_key: Some("retention_policy"),
    rman: Some("RETENTION POLICY"),
    ..row(
        "retention-policy",
        Kind::Text,
        "Which backups retention keeps: redundancy N, recovery window of N days, or none",
    )
};
/// Parallel streams: each channel is a thread with tens of MiB of buffers, so beyond a few
/// hundred the machine runs out before the storage does.
pub const CHANNELS: OptionDef = OptionDef {
    default: Some("1"),
    unit: Some("channels"),
    config_key: Some("channels"),
    catalog_key: Some("channels"),
    rman: Some("PARALLELISM"),
    ..row(
        "channels",
        Kind::Count((1, 256)),
        "Parallel streams, each writing its own backup sets. Default: `configure channels` in the catalog, else built in. Range: 1 to 256",
    )
};
pub const COMPRESSION: OptionDef = OptionDef {
    default: Some("none"),
    config_key: Some("compression"),
    catalog_key: Some("compression"),
    rman: Some("COMPRESSION ALGORITHM"),
    ..row(
        "compression",
        Kind::Text,
        "none, lz4, zstd or zstd:LEVEL. Default: `configure compression` in the catalog, else none",
    )
};
pub const FILESPERSET: OptionDef = OptionDef {
    default: Some("64"),
    unit: Some("files"),
    config_key: Some("filesperset"),
    catalog_key: Some("filesperset"),
    rman: Some("FILESPERSET"),
    ..row(
        "filesperset",
        Kind::Count((1, 1_000_000)),
        "Most files in one backup set. Default: `configure filesperset` in the catalog, else built in. Range: 1 to 1000000",
    )
};
pub const MAXOPENFILES: OptionDef = OptionDef {
    default: Some("8"),
    unit: Some("files"),
    config_key: Some("maxopenfiles"),
    catalog_key: Some("maxopenfiles"),
    rman: Some("MAXOPENFILES"),
    ..row(
        "maxopenfiles",
        Kind::Count((1, 1024)),
        "Files read at once and interleaved into one piece. Default: `configure maxopenfiles` in the catalog, else built in. Range: 1 to 1024",
    )
};
pub const BACKUP_OPTIMIZATION: OptionDef = OptionDef {
    default: Some("off"),
    config_key: Some("backup_optimization"),
    catalog_key: Some("backup_optimization"),
    rman: Some("BACKUP OPTIMIZATION"),
    ..row(
        "backup-optimization",
        Kind::Choice(ON_OFF),
        "Skip files whose identical copy is already backed up",
    )
};
/// At most 256 sections a file, so small sections only help small files.
pub const SECTION_SIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    config_key: Some("section_size"),
    catalog_key: Some("section_size"),
    rman: Some("SECTION SIZE"),
    ..row(
        "section-size",
        Kind::Size((MIB, 1 << 40)),
        "Split files larger than this into sections backed up in parallel as pieces of one set, e.g. 256M (RMAN's SECTION SIZE; at most 256 sections a file). Range: 1M to 1T",
    )
};
pub const ARCHIVELOG_DELETION_POLICY: OptionDef = OptionDef {
    config_key: Some("archivelog_deletion_policy"),
    catalog_key: Some("archivelog_deletion_policy"),
    rman: Some("ARCHIVELOG DELETION POLICY"),
    ..row(
        "archivelog-deletion-policy",
        Kind::Text,
        "What must hold before DELETE ARCHIVELOG removes a segment: none, backed-up N times, applied-on-all-standby",
    )
};
/// Copies of each piece (RMAN's COPIES), the engine's limit.
pub const BACKUP_COPIES: OptionDef = OptionDef {
    default: Some("1"),
    unit: Some("copies"),
    config_key: Some("backup_copies"),
    catalog_key: Some("backup_copies"),
    rman: Some("BACKUP COPIES"),
    ..row(
        "backup-copies",
        Kind::Count((1, recman_engine::duplex::MAX_COPIES as u64)),
        "Write every piece N times (RMAN's COPIES, duplexed backup sets): the first copy as usual, each further one at its --copy-format location. Range: 1 to 4",
    )
};
pub const TUNING: OptionDef = OptionDef {
    default: Some("off"),
    config_key: Some("tuning"),
    catalog_key: Some("tuning"),
    ..row(
        "tuning",
        Kind::Choice(&["auto", "off"]),
        "auto: backups tune channels, multiplexing and buffers as they run",
    )
};
/// The config file may not set it: it decides what the whole repository keeps, so one host's
/// file must not change it for every other host.
pub const INCREMENTAL_FOREVER: OptionDef = OptionDef {
    default: Some("off"),
    catalog_key: Some(recman_engine::forever::KEY),
    ..row(
        "incremental-forever",
        Kind::Text,
        "The incremental-forever schedule: synthetic-full-every N days, or off",
    )
};
/// Whether retention counts imported backups (`catalog import`); catalog only, as above.
pub const IMPORTED_RETENTION: OptionDef = OptionDef {
    default: Some("off"),
    catalog_key: Some("imported_retention"),
    ..row(
        "imported-retention",
        Kind::Choice(ON_OFF),
        "on: retention counts imported backups",
    )
};
/// The age past which the newest backup is a failure (`recman check`).
pub const RPO_TARGET: OptionDef = duration_setting(
    "rpo-target",
    "rpo_target",
    "RPO TARGET",
    None,
    "The age past which the newest backup is a failure",
);
/// The restore time past which a drill or the predicted restore is a failure.
pub const RTO_TARGET: OptionDef = duration_setting(
    "rto-target",
    "rto_target",
    "RTO TARGET",
    None,
    "The restore time past which a drill or the predicted restore is a failure",
);
/// How old the newest drill may grow before `recman check` asks for another.
pub const DRILL_INTERVAL: OptionDef = duration_setting(
    "drill-interval",
    "drill_interval",
    "DRILL INTERVAL",
    None,
    "How old the newest drill may grow before `recman check` asks for another",
);
/// Thresholds of retained WAL and repository free space: 1M to 1P.
const THRESHOLD: Kind = Kind::Size((MIB, 1 << 50));
/// 1G is enough for a standby that is a few minutes behind, and small beside the disks a
/// primary runs on.
pub const SLOT_RETENTION_LIMIT: OptionDef = OptionDef {
    default: Some("1G"),
    unit: Some("bytes"),
    config_key: Some("slot_retention_limit"),
    catalog_key: Some("slot_retention_limit"),
    rman: Some("SLOT RETENTION LIMIT"),
    ..row(
        "slot-retention-limit",
        THRESHOLD,
        "A replication slot holding more WAL than this is a failure",
    )
};
/// none: only room for one more full backup.
pub const REPOSITORY_MIN_FREE: OptionDef = OptionDef {
    unit: Some("bytes"),
    config_key: Some("repository_min_free"),
    catalog_key: Some("repository_min_free"),
    rman: Some("REPOSITORY MIN FREE"),
    ..row(
        "repository-min-free",
        THRESHOLD,
        "Free space the repository's file system must keep, besides room for one more full backup",
    )
};
/// A day is longer than any backup window, so a healthy backup never trips it.
pub const REPOSITORY_LOCK_LIMIT: OptionDef = duration_setting(
    "repository-lock-limit",
    "repository_lock_limit",
    "REPOSITORY LOCK LIMIT",
    Some("24h"),
    "A command holding the repository lock this long is stuck or far slower than planned",
);
/// A month leaves time to issue and roll out a new certificate.
pub const CERTIFICATE_EXPIRY_WARNING: OptionDef = duration_setting(
    "certificate-expiry-warning",
    "certificate_expiry_warning",
    "CERTIFICATE EXPIRY WARNING",
    Some("30d"),
    "A fleet certificate ending within this is a failure",
);
pub const BACKUP_WINDOW: OptionDef = duration_setting(
    "backup-window",
    "backup_window",
    "BACKUP WINDOW",
    None,
    "The time a full backup must fit in; none: no prediction is checked",
);

/// A duration setting: the same key in the catalog and the config file.
const fn duration_setting(
    name: &'static str,
    key: &'static str,
    rman: &'static str,
    default: Option<&'static str>,
    help: &'static str,
) -> OptionDef {
    OptionDef {
        default,
        config_key: Some(key),
        catalog_key: Some(key),
        rman: Some(rman),
        ..row(name, Kind::Duration, help)
    }
}

/// RMAN's MAXPIECESIZE, as MAXSETSIZE's range.
pub const MAXPIECESIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    env: Some("RECMAN_MAXPIECESIZE"),
    config_key: Some("maxpiecesize"),
    catalog_key: Some("maxpiecesize"),
    rman: Some("MAXPIECESIZE"),
    flag_from_table: true,
    ..row(
        "maxpiecesize",
        Kind::Size((MIB, 1 << 40)),
        "The most bytes of files in one backup piece (RMAN's MAXPIECESIZE), e.g. 2G: larger sets are split, a larger file is backed up in sections of at most this size (at most 256 a file). Default: `configure maxpiecesize`, else none. Range: 1M to 1T",
    )
};

// The backup tunables that are flags only.

/// RMAN's MAXSETSIZE.
pub const MAXSETSIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    rman: Some("MAXSETSIZE"),
    ..row(
        "maxsetsize",
        Kind::Size((MIB, 1 << 40)),
        "The most bytes in one backup set (RMAN's MAXSETSIZE), e.g. 1G: larger sets are split; a file larger than this is refused unless --section-size cuts it. Range: 1M to 1T",
    )
};
pub const MAXCORRUPT: OptionDef = OptionDef {
    default: Some("0"),
    unit: Some("blocks"),
    rman: Some("MAXCORRUPT"),
    ..row(
        "maxcorrupt",
        Kind::Count((0, u32::MAX as u64)),
        "Corrupt blocks tolerated per file. Range: 0 to 4294967295",
    )
};
pub const ARCHIVE_TIMEOUT: OptionDef = OptionDef {
    default: Some("120"),
    unit: Some("seconds"),
    ..row(
        "archive-timeout",
        Kind::Count((1, 86_400)),
        "Seconds to wait for the backup's WAL to be archived. Range: 1 to 86400",
    )
};
pub const INCREMENTAL_LEVEL: OptionDef = OptionDef {
    rman: Some("INCREMENTAL LEVEL"),
    ..row(
        "incremental-level",
        Kind::Count((0, 1)),
        "RMAN's INCREMENTAL LEVEL: 0 (a base for level 1s) or 1 (blocks changed since the last level 0 or 1). Without it the backup is a plain full backup. Range: 0 to 1",
    )
};
pub const IO_SLAVES: OptionDef = OptionDef {
    default: Some("4"),
    unit: Some("threads"),
    ..row(
        "io-slaves",
        Kind::Count((1, 64)),
        "Helper i/o threads per channel in threads mode (RMAN's I/O slaves). Range: 1 to 64",
    )
};
pub const INPUT_BUFFERS: OptionDef = OptionDef {
    unit: Some("buffers"),
    ..row(
        "input-buffers",
        Kind::Count((1, 256)),
        "Input buffers per open file (default: RMAN's rule by multiplexing level). Range: 1 to 256",
    )
};
pub const INPUT_BUFFER_SIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    ..row(
        "input-buffer-size",
        Kind::Size((8 << 10, 4 << 20)),
        "Size of each input buffer, e.g. 1M (a multiple of 8K). Range: 8K to 4M",
    )
};
pub const OUTPUT_BUFFERS: OptionDef = OptionDef {
    default: Some("4"),
    unit: Some("buffers"),
    ..row(
        "output-buffers",
        Kind::Count((1, 256)),
        "Output buffers per channel. Range: 1 to 256",
    )
};
pub const BLKSIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    rman: Some("BLKSIZE"),
    ..row(
        "blksize",
        Kind::Size((4 << 10, 64 << 20)),
        "Output block size: the size of each write to the media (RMAN's BLKSIZE). Default: the device type's configured blksize, else 1M. Range: 4K to 64M",
    )
};
pub const RATE: OptionDef = OptionDef {
    unit: Some("bytes per second"),
    rman: Some("RATE"),
    ..row(
        "rate",
        Kind::Size((1 << 10, 1 << 40)),
        "Most bytes per second each channel reads, e.g. 50M (RMAN's RATE). Range: 1K to 1T",
    )
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::human;

    #[test]
    fn every_row_is_consistent() {
        for d in TABLE {
            assert_eq!(TABLE.iter().filter(|o| o.name == d.name).count(), 1);
            // A config key names a setting of the catalog, spelled as its name with `_`.
            if let Some(k) = d.config_key {
                assert!(d.configurable(), "{}", d.name);
                assert_eq!(k, d.name.replace('-', "_"), "{}", d.name);
            }
            if let Some(e) = d.env {
                assert_eq!(
                    e,
                    format!("RECMAN_{}", d.name.replace('-', "_").to_uppercase())
                );
            }
            // The help states the range as users write it, so --help never drifts from it:
            // every flag's help does; a setting without a flag may leave it to its docs.
            let range = match d.kind {
                Kind::Count((lo, hi)) => Some(format!("Range: {lo} to {hi}")),
                Kind::Size((lo, hi)) => Some(format!("Range: {} to {}", human(lo), human(hi))),
                _ => None,
            };
            if let Some(r) = range
                && (!d.configurable() || d.help.contains("Range:"))
            {
                assert!(d.help.contains(&r), "{}: {} lacks {r}", d.name, d.help);
            }
            if let Some(v) = d.default {
                match d.kind {
                    Kind::Count((lo, hi)) => {
                        crate::check::check_count(v, lo, hi).unwrap();
                    }
                    Kind::Choice(words) => assert!(words.contains(&v), "{}", d.name),
                    _ => {}
                }
            }
        }
        // The settings come first, so `show all` prints them in the table's order.
        let first_flag_only = TABLE.iter().position(|d| !d.configurable()).unwrap();
        assert!(TABLE[first_flag_only..].iter().all(|d| !d.configurable()));
    }
}
