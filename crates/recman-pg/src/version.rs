//! The one place that knows what changed between PostgreSQL majors.

/// Facts recman needs about one PostgreSQL major version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionFacts {
    pub major: u32,
    /// SQL that starts a non-exclusive backup; `$1` is the label, `$2` asks for a fast checkpoint.
    pub backup_start_sql: &'static str,
    /// SQL that stops it, returning (lsn, labelfile, spcmapfile); does not wait for archiving,
    /// recman waits for its own repository instead.
    pub backup_stop_sql: &'static str,
}

const PG15: VersionFacts = VersionFacts {
    major: 15,
    backup_start_sql: "select pg_backup_start($1, $2)::text",
    backup_stop_sql: "select lsn::text, labelfile, spcmapfile from pg_backup_stop(false)",
};

const PG13: VersionFacts = VersionFacts {
    major: 13,
    backup_start_sql: "select pg_start_backup($1, $2, false)::text",
    backup_stop_sql: "select lsn::text, labelfile, spcmapfile from pg_stop_backup(false, false)",
};

/// The `xlp_magic` of a WAL page header written by `major`: archive-push checks a segment's
/// first page against it. None for a major this table does not know.
pub fn wal_page_magic(major: u32) -> Option<u16> {
    Some(match major {
        13 => 0xD106,
        14 => 0xD10D,
        15 => 0xD110,
        16 => 0xD113,
        17 => 0xD116,
        18 => 0xD118,
        _ => return None,
    })
}

/// Facts for a server_version_num (e.g. 150018), or None when older than 13.
pub fn facts(version_num: u32) -> Option<VersionFacts> {
    let major = version_num / 10000;
    match major {
        0..=12 => None,
        13 | 14 => Some(VersionFacts { major, ..PG13 }),
        _ => Some(VersionFacts { major, ..PG15 }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn picks_function_names_by_major() {
        assert!(super::facts(120_000).is_none());
        assert!(
            super::facts(140_005)
                .unwrap()
                .backup_start_sql
                .contains("pg_start_backup")
        );
        assert!(
            super::facts(150_018)
                .unwrap()
                .backup_start_sql
                .contains("pg_backup_start")
        );
        assert_eq!(super::facts(170_002).unwrap().major, 17);
    }
}
