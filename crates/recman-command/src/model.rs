//! The engine's and the catalog's types that the command crate's API hands to a front end:
//! the repository and context a command runs against, the records its outcomes carry, the
//! errors it may return. A front end names them here, so that it depends on this crate
//! alone and never calls the engine or the catalog past [`crate::execute`] and the
//! functions this crate exports.
//!
//! Only names are re-exported here; what may be done with them is this crate's functions.

pub use recman_catalog::{BackupRecord, DbRecord, IoStatRow, Repository};
pub use recman_engine::ArchivePushOutcome;
pub use recman_engine::receive::RpoRow;
pub use recman_engine::{Context, EngineError};
