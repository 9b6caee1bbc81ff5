use crate::PgError;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    pub checkpoint_redo: Option<crate::Lsn>,
}

/// Reads PG_VERSION and pg_control of `pgdata`. The rest of pg_control's layout changes
/// between majors, so the fields beyond the identifier come from the matching pg_controldata.
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
    if major < 13 {
        return Err(PgError::Unsupported {
            version: version.trim().to_string(),
        });
    }
    let control_path = pgdata.join("global/pg_control");
    let control = std::fs::read(&control_path).map_err(|e| PgError::Io {
        path: control_path.clone(),
        source: e,
    })?;
    if control.len() < 16 {
        return Err(not("global/pg_control is truncated"));
    }
    let system_identifier = u64::from_le_bytes(control[0..8].try_into().expect("8 bytes"));
    let mut facts = DataDirFacts {
        pgdata: pgdata.to_path_buf(),
        major,
        system_identifier,
        checksums_enabled: None,
        wal_segment_size: None,
        state: None,
        checkpoint_redo: None,
    };
    if let Some(out) = run_controldata(major, pgdata) {
        for line in out.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "Data page checksum version" => {
                    facts.checksums_enabled = v.parse::<u32>().ok().map(|n| n != 0)
                }
                "Bytes per WAL segment" => facts.wal_segment_size = v.parse().ok(),
                "Database cluster state" => facts.state = Some(v.to_string()),
                "Latest checkpoint's REDO location" => facts.checkpoint_redo = v.parse().ok(),
                _ => {}
            }
        }
    }
    Ok(facts)
}

fn run_controldata(major: u32, pgdata: &Path) -> Option<String> {
    let candidates = [
        PathBuf::from(format!("/usr/lib/postgresql/{major}/bin/pg_controldata")),
        PathBuf::from(format!("/usr/pgsql-{major}/bin/pg_controldata")),
        PathBuf::from("pg_controldata"),
    ];
    for bin in candidates {
        let out = Command::new(&bin)
            .arg("-D")
            .arg(pgdata)
            .env("LC_ALL", "C")
            .output();
        if let Ok(out) = out
            && out.status.success()
        {
            return Some(String::from_utf8_lossy(&out.stdout).into_owned());
        }
    }
    None
}
