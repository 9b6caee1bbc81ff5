//! The repository host's server (`recman --repo R server`): archive-push and archive-get for
//! the database hosts it knows. The repository and its catalog stay on this host; a database
//! host sends only WAL, under its client certificate, for the databases `--allow` gives it.
//! The service is the command crate's (`recman_command::fleet`); here it is given
//! the command line's repository and listens.

use crate::cli::Global;
use crate::fleet_args::TlsArgs;
use anyhow::Result;
use recman_command::model::ErrorKind;
use recman_command::model::{EngineError, ServiceError};

fn any(e: anyhow::Error) -> ServiceError {
    let kind = e
        .downcast_ref::<EngineError>()
        .map(|e| e.kind())
        .unwrap_or(ErrorKind::InvalidInput);
    ServiceError::new(kind, format!("{e:#}"))
}

pub fn serve(g: &Global, listen: &str, allow: &[String], metrics: Option<&str>) -> Result<()> {
    let repo = crate::open::open_repo(g)?;
    if let Some(addr) = metrics {
        crate::metrics_http::spawn(g, addr)?;
    }
    // The spool sits in the repository host's own private space, never in the repository.
    let spool = std::env::temp_dir().join(format!("recman-server-spool-{}", std::process::id()));
    drop(repo);
    let gi = g.clone();
    let open = Box::new(move || crate::open::open_repo(&gi).map_err(any));
    let tls = TlsArgs::of(g).files("recman server")?;
    let h = recman_command::fleet::serve_repo_host(listen, &tls, allow, open, spool)?;
    eprintln!(
        "recman server: repository host for {} listening on {}",
        g.repo
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        h.local_addr
    );
    h.wait();
    Ok(())
}
