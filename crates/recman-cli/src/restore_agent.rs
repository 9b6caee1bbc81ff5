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
    let h = recman_remote::serve(
        listen,
        &tls,
        recman_remote::Allow::from_list(allow),
        std::sync::Arc::new(WithRestore {
            backup: None,
            restore,
        }),
        recman_remote::stderr_log(),
    )?;
    eprintln!(
        "recman server: database host agent (restores only) listening on {}",
        h.local_addr
    );
    h.wait();
    Ok(())
}
