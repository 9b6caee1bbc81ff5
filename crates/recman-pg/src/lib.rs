//! The PostgreSQL side of recman: the libpq-style connection, the backup start/stop protocol,
//! facts read from the server or from a data directory offline, and WAL naming.
//!
//! What differs between PostgreSQL majors lives in [`version`], so that the rest of recman
//! never compares version numbers itself.

mod conn;
mod conninfo;
mod control;
mod error;
mod lsn;
mod pgfiles;
mod replication;
mod session;
mod tls;
pub mod version;
pub mod walrecord;
pub mod walsummary;

pub use conn::{ConnTarget, resolve_conninfo};
pub use conninfo::{has_password as conninfo_has_password, redact as redact_conninfo};
pub use control::{DataDirFacts, read_data_dir_facts};
pub use error::{ConnectCause, PgError};
pub use lsn::{Lsn, WalName, wal_segments_between};
pub use replication::{CopyMessage, ReplicationConn, SystemIdentity};
pub use session::{
    BackupStart, BackupStop, ServerFacts, ServerLink, Session, Tablespace, label_timeline,
};
pub use tls::TlsSettings;
