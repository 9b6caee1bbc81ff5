//! Refusals of the fleet transport's rules: TLS files to reach an agent, which databases a
//! client certificate may archive for, and what an agent accepts from a backup host.

/// A fleet request the engine turns down.
#[derive(Debug, thiserror::Error)]
pub enum Fleet {
    /// An agent to reach without the fleet's TLS files (`who` is the option naming it).
    #[error(
        "{who} needs the fleet's TLS files; hint: give --tls-cert, --tls-key and --tls-ca (or the config file's [tls] section)"
    )]
    NoTls { who: String },
    /// A database registered with an agent, read without the fleet's TLS files.
    #[error(
        "database {db:?} is registered with the agent at {url}, which {what} reads the cluster through, and no TLS files were given; hint: give --tls-cert, --tls-key and --tls-ca (or the config file's [tls] section)"
    )]
    NoTlsForAgent {
        db: String,
        url: String,
        what: String,
    },
    #[error(
        "the repository host holds several databases client certificate {cn:?} may archive for ({names}); nothing was archived or read; hint: name one with --db NAME"
    )]
    SeveralDatabasesForCert { cn: String, names: String },
    #[error(
        "client certificate {cn:?} is not allowed to archive for database {db}; nothing was archived or read; hint: start the repository host's server with --allow {db}:{cn} (or --allow {cn} for every database)"
    )]
    CertNotAllowed { cn: String, db: String },
    /// A path an agent will not write: outside its restore directories, or through a link.
    #[error(
        "the agent refuses to write {path:?}, {why}; nothing was written; hint: restore into a directory the agent was started for (recman server --restore-dir DIR), and check the backup with `recman validate backup`"
    )]
    AgentRefusesPath { path: String, why: String },
    /// A restore request without a field it needs: the hosts run different versions.
    #[error(
        "a restore request lacks its {key:?}; hint: the backup host runs another recman version, use the same on both hosts"
    )]
    RequestLacks { key: String },
    #[error(
        "a restore request {method} lacks its \"ops\"; hint: the backup host runs another recman version, use the same on both hosts"
    )]
    RequestLacksOps { method: String },
    #[error(
        "the agent has no restore method {method:?}; hint: use the same recman version on the backup host and the database host"
    )]
    NoRestoreMethod { method: String },
}
