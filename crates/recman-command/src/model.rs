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

// What the CLI's printers name: the records, reports and plans of the outcomes they lay out.
pub use recman_catalog::crypt::{KeyInfo, KeySource};
pub use recman_catalog::repo::Immutable;
pub use recman_catalog::{
    BackupStatus, CalibrationRecord, CostScope, DrillRecord, FailureRecord, IoSample, LockMode,
    MediaStatus, TuningEvent, WalRecord,
};
pub use recman_engine::blockrecover::BlockRecoverReport;
pub use recman_engine::controlfile::ControlfileReport;
pub use recman_engine::drill::{DrillCheck, DrillReport};
pub use recman_engine::duplicate::DuplicateReport;
pub use recman_engine::immutable::HeldObject;
/// The backup type of what CATALOG IMPORT recorded: another tool's backup, read where it lies.
pub use recman_engine::import::FOREIGN;
pub use recman_engine::import::{CopiedBackup, ImportReport};
pub use recman_engine::recover_table::RecoverTableReport;
pub use recman_engine::tuning::advise::Advice;
pub use recman_engine::tuning::calibrate::Calibration;
pub use recman_engine::{
    ArchivelogReport, BackupCheck, BackupReport, CopyReport, DeleteReport, Incarnation,
    ObjectCheck, PlannedCopy, RebuildReport, RestorePlan, RestoreReport, RestoreValidateReport,
    Resync, ValidateBackupReport, ValidateDatabaseReport,
};
// The engine's progress trait a front end implements, and the hints' remedies it spells.
pub use recman_engine::{Action, ErrorKind, Hint, Progress, Spell};

// Opening the repository, the CLI's flag defaults, the fleet's restore through an agent.
pub use recman_engine::Through;
pub use recman_engine::{DEFAULT_PREFETCH, DEFAULT_PUSH_BATCH};
pub use recman_remote::{Render, ServiceError, TlsFiles};

// What a front end prints of PostgreSQL's values: positions in the WAL, connection strings
// without their passwords.
pub use recman_pg::{Lsn, conninfo_has_password, redact_conninfo};
