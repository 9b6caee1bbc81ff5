//! REGISTER DATABASE: the target cluster recorded in the catalog, after checking that the
//! data directory and the server are the same cluster.

use crate::agent_sql::PING_SQL;
use crate::error::EngineError;
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
            return Err(crate::refusal::Cluster::DataDirOfOtherServer {
                dir: p.display().to_string(),
                dir_sysid: facts.system_identifier,
                server: session.target().to_string(),
                server_sysid: session.system_identifier,
            }
            .into());
        }
    }
    let dir = pgdata
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| session.data_directory.clone());
    let _ = session.simple_query(PING_SQL)?;
    Ok(repo.catalog().register_database(
        name,
        session.system_identifier,
        session.version_num,
        &dir,
    )?)
}

/// Registers the server at `conninfo` (or, when None, the one the agent connects to) under
/// `name`, its files read through the agent at `agent` (`recman server --pgdata` on the database host): the agent's pg_control must carry
/// the server's system identifier, and the catalog records the URL for backup and validate.
pub fn register_database_agent(
    repo: &Repository,
    name: &str,
    conninfo: Option<&str>,
    agent: &str,
    tls: Option<&recman_remote::TlsFiles>,
) -> Result<DbRecord, EngineError> {
    use crate::source::DataSource;
    let tls = tls.ok_or_else(|| {
        EngineError::from(crate::refusal::Fleet::NoTls {
            who: format!("register database --agent {agent}"),
        })
    })?;
    let source = crate::source::remote::RemoteSource::connect(agent, tls)?;
    let facts = source.facts()?;
    // Without --target the agent's own session to its cluster answers.
    let mut session = match conninfo {
        None => super::source::remote_pg::open(source.client())?,
        Some(c) => recman_pg::Session::connect(&recman_pg::resolve_conninfo(Some(c))?)?,
    };
    if facts.system_identifier != session.system_identifier {
        return Err(crate::refusal::Cluster::AgentOfOtherServer {
            agent: agent.to_string(),
            agent_sysid: facts.system_identifier,
            server: session.target().to_string(),
            server_sysid: session.system_identifier,
        }
        .into());
    }
    let _ = session.simple_query(PING_SQL)?;
    let db = repo.catalog().register_database(
        name,
        session.system_identifier,
        session.version_num,
        &facts.pgdata.display().to_string(),
    )?;
    repo.catalog().set_db_agent(db.id, Some(agent))?;
    Ok(db)
}
