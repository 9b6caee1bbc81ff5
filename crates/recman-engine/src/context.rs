use crate::error::EngineError;
use recman_catalog::{DbRecord, Repository};
use std::path::{Path, PathBuf};

/// What every command works on: an open repository and the registered database in it, plus
/// where the cluster's files are and how to reach its server when the command needs them.
pub struct Context {
    pub repo: Repository,
    pub db: DbRecord,
    pub pgdata: Option<PathBuf>,
    pub conninfo: Option<String>,
    /// The certificate, key and CA for the fleet transport: reaching a database's agent.
    pub tls: Option<recman_remote::TlsFiles>,
}

pub fn open_repository(path: &Path) -> Result<Repository, EngineError> {
    Ok(Repository::open(path)?)
}

/// Finds the registered database a command means: by name when given, else the only one in
/// the repository, else the one whose system identifier matches `pgdata`.
pub fn resolve_database(
    repo: &Repository,
    name: Option<&str>,
    pgdata: Option<&Path>,
) -> Result<DbRecord, EngineError> {
    let root = repo.location().to_string();
    if let Some(name) = name {
        return repo.catalog().database(name)?.ok_or_else(|| {
            EngineError::NotFound(format!(
                "database {name:?} is not registered in repository {root}; hint: register it with `recman --repo {root} --pgdata DIR register database --name {name}`"
            ))
        });
    }
    let all = repo.catalog().databases()?;
    match all.len() {
        0 => Err(EngineError::NotFound(format!(
            "no database is registered in repository {root}; hint: register the cluster with `recman --repo {root} --pgdata DIR --target CONNINFO register database`"
        ))),
        1 => Ok(all.into_iter().next().expect("one")),
        _ => {
            if let Some(pgdata) = pgdata
                && let Ok(facts) = recman_pg::read_data_dir_facts(pgdata)
            {
                let mut m: Vec<_> = all
                    .iter()
                    .filter(|d| d.system_identifier == facts.system_identifier)
                    .cloned()
                    .collect();
                if m.len() == 1 {
                    return Ok(m.remove(0));
                }
            }
            let names: Vec<_> = all.iter().map(|d| d.name.as_str()).collect();
            Err(crate::refusal::Input::SeveralDatabases {
                repo: root.to_string(),
                names: crate::util::cut_list(&names, ", "),
            }
            .into())
        }
    }
}
