//! A database host's agent: the data directory's reads for a backup host (the engine's
//! `AgentService`), and the restore side, the file operations a restore on the backup host
//! sends (the engine's `dest_serve`, which confines every path to `--restore-dir`) and the
//! restore_command a cluster restored here uses (archive-get through the repository host's
//! server, with this host's certificate).

use recman_engine::{EngineError, quote_shell, restore_dest_serve};
use recman_remote::{Call, ResponseWriter, Service, ServiceError};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The agent's service for a backup host's reads of the data directory `pgdata` (and its
/// server sessions through `conninfo`).
pub fn agent_service(
    pgdata: &Path,
    conninfo: Option<String>,
) -> Result<Box<dyn Service>, EngineError> {
    Ok(Box::new(recman_engine::source::agent::AgentService::new(
        pgdata, conninfo,
    )?))
}

/// The restore side of an agent.
pub struct RestoreAgent {
    roots: Vec<PathBuf>,
    repo_host: Option<String>,
    /// This host's TLS options as the restore_command passes them (`--tls-cert`, path).
    tls_args: Vec<(String, PathBuf)>,
}

impl RestoreAgent {
    /// `roots`: the directories a restore may write into (--restore-dir); `repo_host`: the
    /// repository host's server a restored cluster fetches its WAL from.
    pub fn new(
        roots: &[PathBuf],
        repo_host: Option<&str>,
        tls_args: Vec<(String, PathBuf)>,
    ) -> RestoreAgent {
        RestoreAgent {
            roots: roots.to_vec(),
            repo_host: repo_host.map(str::to_string),
            tls_args,
        }
    }

    pub fn takes_restores(&self) -> bool {
        !self.roots.is_empty()
    }

    /// Whether `method` is the restore side's (the others go to the backup side).
    pub fn handles(method: &str) -> bool {
        method == "restore-command" || restore_dest_serve::METHODS.contains(&method)
    }

    /// The restore_command up to `archive-get`, for database `db`; None without --repo-host.
    fn restore_command(&self, db: &str) -> Option<String> {
        let url = self.repo_host.as_ref()?;
        let exe = std::env::current_exe().ok()?;
        let mut c = format!(
            "{} --db {} archive-get --repo-host {}",
            quote_shell(&exe.display().to_string()),
            quote_shell(db),
            quote_shell(url)
        );
        for (o, p) in &self.tls_args {
            let p = p.canonicalize().unwrap_or_else(|_| p.clone());
            c.push_str(&format!(" {o} {}", quote_shell(&p.display().to_string())));
        }
        Some(c)
    }

    pub fn call(&self, call: Call<'_>, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        if call.method == "restore-command" {
            let db = call.meta["db"].as_str().unwrap_or_default();
            return out
                .meta(&json!({"command": self.restore_command(db)}))
                .map_err(|e| ServiceError::io("reply", &e));
        }
        if self.roots.is_empty() {
            return Err(ServiceError::invalid(
                "this agent takes no restores: it was started without --restore-dir; nothing was written; hint: start recman server with --restore-dir DIR for each directory a restore may write into",
            ));
        }
        // A write says its length: the body is read into one buffer of that size.
        let hint = call.meta["len"].as_u64().unwrap_or(0).min(8 << 20) as usize;
        let mut body = Vec::with_capacity(hint);
        call.body
            .read_to_end(&mut body)
            .map_err(|e| ServiceError::io("read the request", &e))?;
        let (meta, data) = restore_dest_serve::serve(&self.roots, call.method, &call.meta, &body)
            .map_err(|e| ServiceError::new(e.kind(), e.to_string()))?;
        out.meta(&meta).map_err(|e| ServiceError::io("reply", &e))?;
        out.write_all(&data)
            .map_err(|e| ServiceError::io("send the reply", &e))
    }
}

/// A database host's agent: the restore methods here, every other one to `backup` (the
/// data directory's reads, when the agent was started with --pgdata).
pub struct WithRestore {
    pub backup: Option<Box<dyn Service>>,
    pub restore: RestoreAgent,
}

impl Service for WithRestore {
    fn call(&self, call: Call<'_>, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        if RestoreAgent::handles(call.method) {
            return self.restore.call(call, out);
        }
        match &self.backup {
            Some(b) => b.call(call, out),
            None => Err(ServiceError::invalid(format!(
                "this agent serves restores only (it was started without --pgdata), not {:?}; hint: start recman server with --pgdata on a host whose cluster is backed up",
                call.method
            ))),
        }
    }
}
