//! The one place that knows what changed between PostgreSQL majors.
//!
//! Every difference recman relies on is a field of [`VersionFacts`], one entry per supported
//! major in [`TABLE`]. A major outside the table is refused (see [`facts`] and
//! [`for_major`]) rather than treated like a known one: its pg_control, WAL or backup
//! functions may differ in ways recman would silently get wrong.

/// Oldest and newest majors recman supports.
pub const OLDEST: u32 = 13;
pub const NEWEST: u32 = 18;

/// Where recman finds the fields it reads in `global/pg_control` (ControlFileData, little
/// endian on the platforms recman runs on). Measured on a fresh initdb of every major: the
/// offsets up to the data checksum version have not moved from 13 to 18; 18 inserts
/// `default_char_signedness` before the nonce, which moves the CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlLayout {
    /// `pg_control_version` (offset 8) a server of this major writes.
    pub control_version: u32,
    /// `state` (DBState, 4 bytes).
    pub state: usize,
    /// `checkPointCopy.redo`.
    pub checkpoint_redo: usize,
    /// `xlog_seg_size`.
    pub wal_segment_size: usize,
    /// `data_checksum_version` (0 when checksums are off).
    pub data_checksum_version: usize,
    /// The CRC-32C of every byte before it.
    pub crc: usize,
}

/// Facts recman needs about one PostgreSQL major version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionFacts {
    pub major: u32,
    /// SQL that starts a non-exclusive backup; `$1` is the label, `$2` asks for a fast checkpoint.
    pub backup_start_sql: &'static str,
    /// SQL that stops it, returning (lsn, labelfile, spcmapfile); does not wait for archiving,
    /// recman waits for its own repository instead.
    pub backup_stop_sql: &'static str,
    /// Switches to a new WAL segment and names the segment the switch completed (on an idle
    /// server, which has nothing to switch, the last completed one). pg_switch_wal returns the
    /// segment boundary; up to 16 pg_walfile_name maps a boundary to the segment before it,
    /// from 17 on to the one starting there, so 17+ step back one byte.
    pub switch_wal_sql: &'static str,
    /// `xlp_magic` of the WAL pages this major writes (the WAL format changes with it).
    pub wal_page_magic: u16,
    pub control: ControlLayout,
    /// initdb enables data checksums unless told `--no-data-checksums` (18 on).
    pub checksums_by_default: bool,
    /// The server may keep WAL summaries in `pg_wal/summaries` (17 on, `summarize_wal`);
    /// a backup keeps the directory, empty, as it keeps `pg_wal` itself.
    pub wal_summaries_dir: Option<&'static str>,
    /// Prefix of the files `pg_basebackup --incremental` writes in place of a relation file
    /// (17 on). They are never in a live cluster: a data directory holding one is an
    /// incremental backup that pg_combinebackup has not combined, and recman refuses it.
    pub incremental_file_prefix: Option<&'static str>,
}

const CONTROL_13: ControlLayout = ControlLayout {
    control_version: 1300,
    state: 16,
    checkpoint_redo: 40,
    wal_segment_size: 228,
    data_checksum_version: 252,
    crc: 288,
};

const PG13: VersionFacts = VersionFacts {
    major: 13,
    backup_start_sql: "select pg_start_backup($1, $2, false)::text",
    backup_stop_sql: "select lsn::text, labelfile, spcmapfile from pg_stop_backup(false, false)",
    switch_wal_sql: "select pg_walfile_name(pg_switch_wal())",
    wal_page_magic: 0xD106,
    control: CONTROL_13,
    checksums_by_default: false,
    wal_summaries_dir: None,
    incremental_file_prefix: None,
};

const PG14: VersionFacts = VersionFacts {
    major: 14,
    wal_page_magic: 0xD10D,
    ..PG13
};

/// 15 renamed the backup functions and dropped exclusive backups.
const PG15: VersionFacts = VersionFacts {
    major: 15,
    backup_start_sql: "select pg_backup_start($1, $2)::text",
    backup_stop_sql: "select lsn::text, labelfile, spcmapfile from pg_backup_stop(false)",
    wal_page_magic: 0xD110,
    ..PG13
};

const PG16: VersionFacts = VersionFacts {
    major: 16,
    wal_page_magic: 0xD113,
    ..PG15
};

/// 17 added WAL summaries and incremental backups, bumped pg_control's version, and changed
/// what pg_walfile_name says for a segment boundary.
const PG17: VersionFacts = VersionFacts {
    major: 17,
    switch_wal_sql: "select pg_walfile_name(pg_switch_wal() - 1)",
    wal_page_magic: 0xD116,
    control: ControlLayout {
        control_version: 1700,
        ..CONTROL_13
    },
    wal_summaries_dir: Some("pg_wal/summaries"),
    incremental_file_prefix: Some("INCREMENTAL."),
    ..PG16
};

/// 18 turned data checksums on by default and added `default_char_signedness` to pg_control.
const PG18: VersionFacts = VersionFacts {
    major: 18,
    wal_page_magic: 0xD118,
    control: ControlLayout {
        control_version: 1800,
        crc: 292,
        ..CONTROL_13
    },
    checksums_by_default: true,
    ..PG17
};

/// Every supported major, oldest first.
pub const TABLE: [VersionFacts; 6] = [PG13, PG14, PG15, PG16, PG17, PG18];

/// Facts for a major (e.g. 17), or None when recman does not support it.
pub fn for_major(major: u32) -> Option<&'static VersionFacts> {
    TABLE.iter().find(|f| f.major == major)
}

/// The `xlp_magic` of a WAL page header written by `major`: archive-push checks a segment's
/// first page against it. None for a major this table does not know.
pub fn wal_page_magic(major: u32) -> Option<u16> {
    for_major(major).map(|f| f.wal_page_magic)
}

/// Facts for a server_version_num (e.g. 150018), or None for a major outside 13 to 18.
pub fn facts(version_num: u32) -> Option<VersionFacts> {
    for_major(version_num / 10000).copied()
}

/// "17.2" for 170002, "9.6.24" for 90624: how a refusal names the version.
pub fn display_version(version_num: u32) -> String {
    let major = version_num / 10000;
    if major >= 10 {
        format!("{major}.{}", version_num % 10000)
    } else {
        format!("{major}.{}.{}", version_num / 100 % 100, version_num % 100)
    }
}

/// The hint of every refusal of an unsupported major.
pub fn supported_hint() -> String {
    format!(
        "recman supports PostgreSQL {OLDEST} to {NEWEST}; use a recman release that knows this major, or pg_basebackup for it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_function_names_by_major() {
        assert!(facts(120_000).is_none());
        assert!(
            facts(140_005)
                .unwrap()
                .backup_start_sql
                .contains("pg_start_backup")
        );
        assert!(
            facts(150_018)
                .unwrap()
                .backup_start_sql
                .contains("pg_backup_start")
        );
        assert_eq!(facts(170_002).unwrap().major, 17);
        assert!(
            facts(180_004)
                .unwrap()
                .backup_stop_sql
                .contains("pg_backup_stop")
        );
    }

    #[test]
    fn refuses_majors_outside_the_table() {
        assert!(facts(190_000).is_none());
        assert!(for_major(12).is_none());
        assert!(wal_page_magic(19).is_none());
        assert_eq!(display_version(190_001), "19.1");
        assert_eq!(display_version(90_624), "9.6.24");
    }

    #[test]
    fn one_row_per_supported_major_with_distinct_wal_magic() {
        let majors: Vec<u32> = TABLE.iter().map(|f| f.major).collect();
        assert_eq!(majors, (OLDEST..=NEWEST).collect::<Vec<_>>());
        let mut magics: Vec<u16> = TABLE.iter().map(|f| f.wal_page_magic).collect();
        magics.dedup();
        assert_eq!(magics.len(), TABLE.len());
        assert!(for_major(18).unwrap().checksums_by_default);
        assert!(!for_major(17).unwrap().checksums_by_default);
        assert!(for_major(16).unwrap().incremental_file_prefix.is_none());
        assert_eq!(for_major(17).unwrap().control.control_version, 1700);
        assert!(
            for_major(16)
                .unwrap()
                .switch_wal_sql
                .ends_with("pg_switch_wal())")
        );
        assert!(for_major(18).unwrap().switch_wal_sql.contains("- 1"));
    }
}
