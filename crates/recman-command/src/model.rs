//! The engine's and the catalog's types that the command crate's API hands to a front end:
//! the repository and context a command runs against, the records its outcomes carry, the
//! errors it may return. A front end names them here, so that it depends on this crate
//! alone and never calls the engine or the catalog past [`crate::execute`] and the
//! functions this crate exports.
//!
//! Only names are re-exported here; what may be done with them is this crate's functions.

pub use recman_catalog::{BackupRecord, DbRecord, IoStatRow, Repository};
pub use recman_engine::{Context, EngineError};
// Opening the repository, the CLI's flag defaults, the fleet's restore through an agent.
pub use recman_catalog::LockMode;
pub use recman_catalog::repo::Immutable;
pub use recman_engine::{DEFAULT_PREFETCH, DEFAULT_PUSH_BATCH};
pub use recman_engine::{Progress, Through};
pub use recman_remote::{ServiceError, TlsFiles};
