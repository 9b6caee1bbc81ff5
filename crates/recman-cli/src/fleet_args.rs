//! The options of the fleet's commands (docs/fleet.md): the mutual-TLS files, and the
//! `recman server` of a repository host or a database host.

use clap::Args;
use std::path::PathBuf;

/// This host's side of the fleet's mutual TLS.
#[derive(Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// This host's certificate (PEM), signed by the fleet's CA (docs/fleet.md).
    #[arg(long, global = true)]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM, mode 0600).
    #[arg(long, global = true)]
    pub tls_key: Option<PathBuf>,
    /// The fleet's CA certificate: peers must show a certificate it signed.
    #[arg(long, global = true)]
    pub tls_ca: Option<PathBuf>,
}

impl TlsArgs {
    pub fn files(&self, what: &str) -> anyhow::Result<recman_remote::TlsFiles> {
        match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (Some(cert), Some(key), Some(ca)) => Ok(recman_remote::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                ca: ca.clone(),
            }),
            _ => anyhow::bail!(
                "{what} needs this host's certificate, key and the fleet's CA; hint: give --tls-cert, --tls-key and --tls-ca (docs/fleet.md, \"Certificates\")"
            ),
        }
    }

    /// The options again, for a command line recman writes (a restore_command).
    pub fn args(&self) -> Vec<(String, PathBuf)> {
        [
            ("--tls-cert", &self.tls_cert),
            ("--tls-key", &self.tls_key),
            ("--tls-ca", &self.tls_ca),
        ]
        .into_iter()
        .filter_map(|(o, p)| p.clone().map(|p| (o.to_string(), p)))
        .collect()
    }
}

/// `recman server`: with --repo, the repository host's server (archive-push and archive-get
/// for the database hosts); otherwise a database host's agent.
#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// The address to listen on, HOST:PORT (e.g. 0.0.0.0:8472).
    #[arg(long)]
    pub listen: String,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// A client certificate CN to accept; on a repository host `DB:CN` accepts CN for that
    /// database only (repeatable; none: any certificate the CA signed).
    #[arg(long)]
    pub allow: Vec<String>,
    /// Database host: a directory (or tablespace location) a restore through this agent may
    /// write into; every other path is refused (repeatable).
    #[arg(long)]
    pub restore_dir: Vec<PathBuf>,
    /// Database host: the repository host's server a cluster restored here fetches its WAL
    /// from (the restore_command's archive-get --repo-host).
    #[arg(long)]
    pub repo_host: Option<String>,
}
