//! The repository host's service: archive-push and archive-get for the database hosts it
//! knows. The repository and its catalog stay on this host; a database host sends only WAL,
//! under its client certificate, for the databases `--allow` gives it.

use recman_catalog::{DbRecord, Repository};
use recman_engine::{EngineError, archive_host};
use recman_remote::{Call, ResponseWriter, Service, ServiceError};
use serde_json::json;
use std::path::PathBuf;

/// Opens the repository for one call, as the front end's options name it (with the
/// repository list's fallback); its error already says why, with its kind.
pub type Opener = Box<dyn Fn() -> Result<Repository, ServiceError> + Send + Sync>;

/// The repository host's service.
pub struct RepoHost {
    open: Opener,
    allow: Vec<String>,
    spool: PathBuf,
}

fn engine(e: EngineError) -> ServiceError {
    ServiceError::new(e.kind(), e.to_string())
}

/// The CNs the transport lets in at all: each `--allow` entry's CN.
pub fn transport_allow(allow: &[String]) -> recman_remote::Allow {
    let cns: Vec<String> = allow
        .iter()
        .map(|a| a.split_once(':').map_or(a.as_str(), |(_, c)| c).to_string())
        .collect();
    recman_remote::Allow::from_list(&cns)
}

impl RepoHost {
    /// `allow`: the `--allow` entries (`DB:CN` or `CN`); `spool`: a private directory of
    /// this host for the WAL being received.
    pub fn new(open: Opener, allow: &[String], spool: PathBuf) -> RepoHost {
        RepoHost {
            open,
            allow: allow.to_vec(),
            spool,
        }
    }

    fn open(&self, call: &Call<'_>) -> Result<(Repository, DbRecord, String), ServiceError> {
        let field = |k: &str| {
            call.meta[k].as_str().map(str::to_string).ok_or_else(|| {
                ServiceError::invalid(format!(
                    "a {} request lacks its {k:?}; hint: use the same recman version on both hosts",
                    call.method
                ))
            })
        };
        let name = field("name")?;
        archive_host::check_wal_name(&name).map_err(engine)?;
        let repo = (self.open)()?;
        // A client without --db gets the one database its certificate may archive for.
        let db = match call.meta["db"].as_str() {
            Some(db) => db.to_string(),
            None => {
                let names: Vec<String> = repo
                    .catalog()
                    .databases()
                    .map_err(|e| engine(e.into()))?
                    .into_iter()
                    .map(|d| d.name)
                    .collect();
                archive_host::choose_database(&names, &self.allow, &call.peer.cn).map_err(engine)?
            }
        };
        if !archive_host::allowed(&self.allow, &db, &call.peer.cn) && !self.allow.is_empty() {
            return Err(engine(archive_host::not_allowed(&db, &call.peer.cn)));
        }
        let rec = recman_engine::resolve_database(&repo, Some(&db), None).map_err(engine)?;
        Ok((repo, rec, name))
    }
}

impl Service for RepoHost {
    fn call(&self, call: Call<'_>, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        match call.method {
            "archive-push" => {
                let (repo, db, name) = self.open(&call)?;
                let mut data = Vec::with_capacity(16 << 20);
                call.body
                    .read_to_end(&mut data)
                    .map_err(|e| ServiceError::io("read the pushed wal file", &e))?;
                let opts = recman_engine::PushOptions::new(recman_format::Compression::Lz4);
                let o = archive_host::push_from_host(&repo, &db, &name, &data, &self.spool, &opts)
                    .map_err(engine)?;
                let already =
                    matches!(o, recman_engine::ArchivePushOutcome::AlreadyArchived { .. });
                out.meta(&json!({"already": already}))
                    .map_err(|e| ServiceError::io("reply", &e))
            }
            "archive-get" => {
                let (repo, db, name) = self.open(&call)?;
                match archive_host::get_for_host(&repo, &db, &name).map_err(engine)? {
                    Some(data) => {
                        out.meta(&json!({"found": true}))
                            .map_err(|e| ServiceError::io("reply", &e))?;
                        std::io::Write::write_all(out, &data)
                            .map_err(|e| ServiceError::io("send the wal file", &e))
                    }
                    None => out
                        .meta(&json!({"found": false}))
                        .map_err(|e| ServiceError::io("reply", &e)),
                }
            }
            other => Err(ServiceError::invalid(format!(
                "the repository host's server has no method {other:?}; hint: archive-push and archive-get go to the repository host (--repo-host), backups and restores to a database host's agent"
            ))),
        }
    }
}
