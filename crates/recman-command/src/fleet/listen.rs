//! The fleet's servers started: the repository host's and a database host's agent, each on
//! its address under mutual TLS, logging to stderr.

use crate::fleet::agent::WithRestore;
use crate::fleet::repo_host::{Opener, RepoHost, transport_allow};
use recman_remote::{Allow, RemoteError, ServerHandle, TlsFiles};
use std::path::PathBuf;
use std::sync::Arc;

/// The repository host's server on `listen`, for the certificates `allow` names (`DB:CN` or
/// `CN`; none: any the CA signed); `spool`: a private directory for the WAL received.
pub fn serve_repo_host(
    listen: &str,
    tls: &TlsFiles,
    allow: &[String],
    open: Opener,
    spool: PathBuf,
) -> Result<ServerHandle, RemoteError> {
    let service = Arc::new(RepoHost::new(open, allow, spool));
    recman_remote::serve(
        listen,
        tls,
        transport_allow(allow),
        service,
        recman_remote::stderr_log(),
    )
}

/// A database host's agent on `listen`, for the certificate CNs `allow` names.
pub fn serve_agent(
    listen: &str,
    tls: &TlsFiles,
    allow: &[String],
    agent: WithRestore,
) -> Result<ServerHandle, RemoteError> {
    recman_remote::serve(
        listen,
        tls,
        Allow::from_list(allow),
        Arc::new(agent),
        recman_remote::stderr_log(),
    )
}

/// The fleet page on `addr` for the certificate CNs `allow` names (none: any the CA signed),
/// and to a browser holding `token`; `render` draws the page for each request.
pub fn serve_page(
    addr: &str,
    tls: &TlsFiles,
    allow: &[String],
    token: Option<String>,
    render: recman_remote::Render,
) -> Result<ServerHandle, RemoteError> {
    let access = recman_remote::PageAccess {
        allow: Allow::from_list(allow),
        token,
    };
    recman_remote::serve_page(addr, tls, access, render, recman_remote::stderr_log())
}
