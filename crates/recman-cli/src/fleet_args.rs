//! The fleet's TLS files as the commands of this side of the fleet pass them on (docs/fleet.md).

use crate::cli::Global;
use std::path::PathBuf;

/// This host's side of the fleet's mutual TLS (the global --tls-cert, --tls-key, --tls-ca).
#[derive(Debug, Clone, Default)]
pub struct TlsArgs {
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_ca: Option<PathBuf>,
}

impl TlsArgs {
    pub fn of(g: &Global) -> TlsArgs {
        TlsArgs {
            tls_cert: g.tls_cert.clone(),
            tls_key: g.tls_key.clone(),
            tls_ca: g.tls_ca.clone(),
        }
    }

    pub fn files(&self, what: &str) -> anyhow::Result<recman_command::model::TlsFiles> {
        match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (Some(cert), Some(key), Some(ca)) => Ok(recman_command::model::TlsFiles {
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

/// The fleet's TLS files when all three are given; an error when only some are.
pub fn tls_files(g: &Global) -> anyhow::Result<Option<recman_command::model::TlsFiles>> {
    match (&g.tls_cert, &g.tls_key, &g.tls_ca) {
        (None, None, None) => Ok(None),
        (Some(cert), Some(key), Some(ca)) => Ok(Some(recman_command::model::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            ca: ca.clone(),
        })),
        _ => anyhow::bail!(
            "the fleet transport needs all of --tls-cert, --tls-key and --tls-ca, and only some were given; hint: give the three (or cert, key and ca in the config file's [tls] section)"
        ),
    }
}
