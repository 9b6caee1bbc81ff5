use crate::error::PgError;
use crate::version;
use std::path::{Path, PathBuf};

/// What recman can learn about a data directory without a running server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataDirFacts {
    pub pgdata: PathBuf,
    /// Major version from PG_VERSION, e.g. 15.
    pub major: u32,
    /// pg_control's first field; stable across every supported major.
    pub system_identifier: u64,
    /// From pg_controldata when it can be found; None when unknown.
    pub checksums_enabled: Option<bool>,
    pub wal_segment_size: Option<u64>,
    /// "in production", "shut down", ... as pg_controldata prints it.
    pub state: Option<String>,
    /// Redo point of the latest checkpoint: a page changed after it has a full-page image in
    /// WAL, so crash recovery repairs it even if a reader saw it torn.
    pub checkpoint_redo: Option<crate::lsn::Lsn>,
}

/// Reads PG_VERSION and pg_control of `pgdata`, the fields where the version table says this
/// major keeps them: no pg_controldata of the matching major is needed.
pub fn read_data_dir_facts(pgdata: &Path) -> Result<DataDirFacts, PgError> {
    let not = |reason: &str| PgError::NotDataDir {
        path: pgdata.to_path_buf(),
        reason: reason.into(),
    };
    if !pgdata.is_dir() {
        return Err(not("no such directory"));
    }
    let version = std::fs::read_to_string(pgdata.join("PG_VERSION"))
        .map_err(|_| not("PG_VERSION is missing"))?;
    let major: u32 = version
        .trim()
        .parse()
        .map_err(|_| not("PG_VERSION is not a version number"))?;
    let Some(table) = version::for_major(major) else {
        return Err(PgError::Unsupported {
            version: version.trim().to_string(),
            at: format!("data directory {} (PG_VERSION)", pgdata.display()),
        });
    };
    let control_path = pgdata.join("global/pg_control");
    let read = || {
        std::fs::read(&control_path).map_err(|e| PgError::Io {
            path: control_path.clone(),
            source: e,
        })
    };
    let mut control = read()?;
    if control.len() < 16 {
        return Err(not("global/pg_control is truncated"));
    }
    let layout = table.control;
    // The server rewrites pg_control in place at every checkpoint; a read that races it
    // fails the CRC, and a second read sees the finished write.
    for _ in 0..3 {
        if crc_ok(&control, &layout) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        control = read()?;
    }
    let mut facts = DataDirFacts {
        pgdata: pgdata.to_path_buf(),
        major,
        system_identifier: u64_at(&control, 0).expect("16 bytes checked"),
        checksums_enabled: None,
        wal_segment_size: None,
        state: None,
        checkpoint_redo: None,
    };
    let control_version = u32_at(&control, 8);
    if control_version != Some(layout.control_version) {
        return Err(not(&format!(
            "global/pg_control has version {}, not the {} PostgreSQL {major} writes (PG_VERSION and pg_control disagree)",
            control_version.unwrap_or(0),
            layout.control_version
        )));
    }
    // A CRC that still fails leaves the fields unknown, as a missing pg_controldata did:
    // callers fall back to the server or to the safe choice.
    if crc_ok(&control, &layout) {
        facts.checksums_enabled = u32_at(&control, layout.data_checksum_version).map(|v| v != 0);
        facts.wal_segment_size = u32_at(&control, layout.wal_segment_size).map(u64::from);
        facts.state = u32_at(&control, layout.state).map(|s| state_name(s).to_string());
        facts.checkpoint_redo = u64_at(&control, layout.checkpoint_redo).map(crate::lsn::Lsn);
    }
    Ok(facts)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn crc_ok(control: &[u8], layout: &version::ControlLayout) -> bool {
    match (control.get(..layout.crc), u32_at(control, layout.crc)) {
        (Some(body), Some(stored)) => crc32c::crc32c(body) == stored,
        _ => false,
    }
}

/// DBState as pg_controldata prints it (the enum is the same in 13 to 18).
fn state_name(state: u32) -> &'static str {
    match state {
        0 => "starting up",
        1 => "shut down",
        2 => "shut down in recovery",
        3 => "shutting down",
        4 => "in crash recovery",
        5 => "in archive recovery",
        6 => "in production",
        _ => "unrecognized status code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pg_control as `major` lays it out, with the fields recman reads and a valid CRC.
    fn control(major: u32, state: u32, checksums: u32) -> Vec<u8> {
        let l = version::for_major(major).unwrap().control;
        let mut b = vec![0u8; 8192];
        b[0..8].copy_from_slice(&7_000_000_000_000_000_042u64.to_le_bytes());
        b[8..12].copy_from_slice(&l.control_version.to_le_bytes());
        b[l.state..l.state + 4].copy_from_slice(&state.to_le_bytes());
        b[l.checkpoint_redo..l.checkpoint_redo + 8].copy_from_slice(&0x1_7414F8u64.to_le_bytes());
        b[l.wal_segment_size..l.wal_segment_size + 4].copy_from_slice(&(16u32 << 20).to_le_bytes());
        b[l.data_checksum_version..l.data_checksum_version + 4]
            .copy_from_slice(&checksums.to_le_bytes());
        let crc = crc32c::crc32c(&b[..l.crc]);
        b[l.crc..l.crc + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn data_dir(major: &str, control: &[u8]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("PG_VERSION"), format!("{major}\n")).unwrap();
        std::fs::create_dir(d.path().join("global")).unwrap();
        std::fs::write(d.path().join("global/pg_control"), control).unwrap();
        d
    }

    #[test]
    fn reads_the_fields_of_every_major() {
        for f in version::TABLE {
            let d = data_dir(&f.major.to_string(), &control(f.major, 6, 1));
            let got = read_data_dir_facts(d.path()).unwrap();
            assert_eq!(got.system_identifier, 7_000_000_000_000_000_042);
            assert_eq!(got.checksums_enabled, Some(true), "{}", f.major);
            assert_eq!(got.wal_segment_size, Some(16 << 20));
            assert_eq!(got.state.as_deref(), Some("in production"));
            assert_eq!(got.checkpoint_redo, Some(crate::lsn::Lsn(0x1_7414F8)));
        }
    }

    #[test]
    fn a_bad_crc_leaves_the_fields_unknown() {
        let mut b = control(17, 1, 0);
        b[100] ^= 1;
        let d = data_dir("17", &b);
        let got = read_data_dir_facts(d.path()).unwrap();
        assert_eq!(got.checksums_enabled, None);
        assert_eq!(got.state, None);
    }

    #[test]
    fn refuses_unknown_majors_and_a_mismatched_pg_control() {
        let d = data_dir("19", &control(18, 1, 1));
        let e = read_data_dir_facts(d.path()).unwrap_err().to_string();
        assert!(e.contains("PostgreSQL 19") && e.contains("13 to 18"), "{e}");
        let d = data_dir("12", &control(13, 1, 1));
        assert!(read_data_dir_facts(d.path()).is_err());
        let d = data_dir("16", &control(17, 1, 1));
        let e = read_data_dir_facts(d.path()).unwrap_err().to_string();
        assert!(e.contains("version 1700"), "{e}");
    }
}
