//! `recman server`: the database-host agent, and the fleet's TLS files from the options or
//! the config file's [tls] section.

use crate::cli::Global;
use anyhow::{Result, bail};
use recman_command::fleet::{RestoreAgent, WithRestore, agent_service, serve_agent};

/// Serves the data directory at --pgdata until the process is stopped.
pub fn serve(g: &Global, listen: &str, allow: &[String]) -> Result<()> {
    let none = RestoreAgent::new(&[], None, Vec::new());
    serve_with(g, listen, allow, none)
}

/// [`serve`], also writing restores as `restore` allows (restores only, without --pgdata).
pub fn serve_with(g: &Global, listen: &str, allow: &[String], restore: RestoreAgent) -> Result<()> {
    if g.pgdata.is_none() && restore.takes_restores() {
        return crate::restore_agent::serve(g, listen, allow, restore);
    }
    let Some(pgdata) = &g.pgdata else {
        bail!(
            "recman server needs the cluster's data directory; hint: pass --pgdata DIR (or RECMAN_PGDATA) and run it as the cluster's OS user"
        );
    };
    let Some(tls) = crate::fleet_args::tls_files(g)? else {
        bail!(
            "recman server needs its certificate, key and the fleet's CA; hint: give --tls-cert, --tls-key and --tls-ca (or the config file's [tls] section)"
        );
    };
    let service = WithRestore {
        backup: Some(agent_service(pgdata, g.target.clone())?),
        restore,
    };
    let handle = serve_agent(listen, &tls, allow, service)?;
    let who = if allow.is_empty() {
        "any certificate the CA signed".to_string()
    } else {
        format!("certificate CNs {}", allow.join(", "))
    };
    if !g.quiet {
        println!(
            "recman server: serving data directory {} on {} to {who}",
            pgdata.display(),
            handle.local_addr
        );
    }
    handle.wait();
    Ok(())
}
