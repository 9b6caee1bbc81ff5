//! A database host's agent, restore side: the file operations a restore on the backup host
//! sends (recman_engine's `dest_serve`, which confines every path to `--restore-dir`), and the
//! restore_command a cluster restored here uses (archive-get through the repository host's
//! server, with this host's certificate). The backup side of the agent routes its other
//! methods elsewhere; [`RestoreAgent::handles`] says which are these.

use crate::fleet_args::{ServerArgs, TlsArgs};
use recman_engine::restore_dest_serve;
use recman_remote::{Call, ResponseWriter, ServiceError};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

pub struct RestoreAgent {
    roots: Vec<PathBuf>,
    repo_host: Option<String>,
    tls: TlsArgs,
}

fn quote_shell(v: &str) -> String {
    format!(
        "\"{}\"",
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$")
            .replace('`', "\\`")
    )
}

impl RestoreAgent {
    pub fn new(a: &ServerArgs) -> RestoreAgent {
        RestoreAgent {
            roots: a.restore_dir.clone(),
            repo_host: a.repo_host.clone(),
            tls: a.tls.clone(),
        }
    }

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
        for (o, p) in self.tls.args() {
            let p = p.canonicalize().unwrap_or(p);
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
        let mut body = Vec::new();
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

/// The agent's service while it serves restores only.
struct Agent(RestoreAgent);

impl recman_remote::Service for Agent {
    fn call(&self, call: Call<'_>, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        if RestoreAgent::handles(call.method) {
            return self.0.call(call, out);
        }
        Err(ServiceError::invalid(format!(
            "this agent has no method {:?}; hint: use the same recman version on both hosts",
            call.method
        )))
    }
}

/// `recman server` on a database host.
pub fn serve(_g: &crate::cli::Global, a: &ServerArgs) -> anyhow::Result<()> {
    let tls = a.tls.files("recman server")?;
    let h = recman_remote::serve(
        &a.listen,
        &tls,
        recman_remote::Allow::from_list(&a.allow),
        std::sync::Arc::new(Agent(RestoreAgent::new(a))),
        recman_remote::stderr_log(),
    )?;
    eprintln!(
        "recman server: database host agent listening on {}",
        h.local_addr
    );
    h.wait();
    Ok(())
}
