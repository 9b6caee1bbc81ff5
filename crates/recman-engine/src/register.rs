//! REGISTER DATABASE: the target cluster recorded in the catalog, after checking that the
//! data directory and the server are the same cluster.

use crate::EngineError;
use recman_catalog::{DbRecord, Repository};
use std::path::Path;

/// Registers the server at `conninfo` (libpq's defaults when None) under `name`. With
/// `pgdata`, its pg_control must carry the server's system identifier: a data directory of
/// another cluster would be backed up under this one's name.
pub fn register_database(
    repo: &Repository,
    name: &str,
    pgdata: Option<&Path>,
    conninfo: Option<&str>,
) -> Result<DbRecord, EngineError> {
    let target = recman_pg::resolve_conninfo(conninfo)?;
    let mut session = recman_pg::Session::connect(&target)?;
    if let Some(p) = pgdata {
        let facts = recman_pg::read_data_dir_facts(p)?;
        if facts.system_identifier != session.system_identifier {
            return Err(EngineError::Invalid(format!(
                "data directory {} (system identifier {}) does not belong to the server at {} (system identifier {}); hint: point --pgdata and --target at the same cluster",
                p.display(),
                facts.system_identifier,
                session.target(),
                session.system_identifier
            )));
        }
    }
    let dir = pgdata
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| session.data_directory.clone());
    let _ = session.simple_query("select 1")?;
    Ok(repo.catalog().register_database(
        name,
        session.system_identifier,
        session.version_num,
        &dir,
    )?)
}
