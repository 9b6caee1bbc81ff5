//! A database host's agent, restore side: started without --pgdata, it takes only the file
//! operations a restore on the backup host sends and gives the restore_command a cluster
//! restored here uses. What each call does is the command crate's
//! (`recman_command::fleet::RestoreAgent`); here it listens.

use crate::fleet_args::TlsArgs;
use recman_command::fleet::{RestoreAgent, WithRestore};

/// `recman server` on a database host without a cluster yet: restores only.
pub fn serve(
    g: &crate::cli::Global,
    listen: &str,
    allow: &[String],
    restore: RestoreAgent,
) -> anyhow::Result<()> {
    let tls = TlsArgs::of(g).files("recman server")?;
    let agent = WithRestore {
        backup: None,
        restore,
    };
    let h = recman_command::fleet::serve_agent(listen, &tls, allow, agent)?;
    eprintln!(
        "recman server: database host agent (restores only) listening on {}",
        h.local_addr
    );
    h.wait();
    Ok(())
}
