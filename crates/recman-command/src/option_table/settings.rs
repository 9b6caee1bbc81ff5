//! The rows of the repository-wide settings: CONFIGURE stores them, SHOW ALL prints them in
//! this order.

use super::def::{Kind, OptionDef, row};

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
