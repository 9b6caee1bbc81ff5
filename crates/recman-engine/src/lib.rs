//! recman's engine: plans and runs backups through channels, restores and validates them,
//! and moves WAL in and out of the repository. The CLI and the command language both call in
//! here with plain option values; nothing in this crate prints.

mod action;
mod adapt;
mod agent_sql;
mod aligned;
mod archive;
mod archivelog;
pub mod auxiliary;
mod backup;
mod backup_reads;
mod backup_types;
pub mod blockrecover;
mod channel;
mod channel_shared;
mod context;
pub mod controlfile;
pub mod copy;
mod cpu;
mod crosscheck;
pub mod devices;
pub mod drill;
pub mod duplex;
pub mod duplicate;
mod error;
pub mod fault;
mod foreign;
pub mod forever;
pub mod immutable;
pub mod import;
mod incremental;
pub mod io;
pub mod keep;
mod manifest_io;
mod pacer;
mod pagecheck;
mod piece_check;
pub mod piece_format;
mod pieces;
mod pipeline;
pub mod plan;
pub mod plan_cap;
mod progress;
mod read_at;
mod read_mode;
mod rebuild;
pub mod recover_table;
mod recovery_target;
pub mod refusal;
mod register;
pub mod residency;
mod restore;
pub mod restore_point;
pub mod retention;
mod retention_policy;
mod scan;
mod secondtier;
mod select;
pub mod source;
pub mod stop;
mod synthetic;
#[cfg(feature = "test-api")]
pub mod test_api;
mod tracked_read;
pub mod tracking;
mod tracking_path;
pub mod tune;
pub mod tuning;
mod util;
mod validate;
mod validate_backup;
mod wal_prefetch;
pub mod window;

pub use crate::backup_types::ARCHIVELOG;
pub use crate::retention_policy::{Obsolete, RetentionPolicy};
pub use action::{Action, Hint, HintPart, Remedy, Spell, Words};
pub use archive::host as archive_host;
pub use archive::receive;
pub use archive::summary::segment_lsn;
pub use archive::{
    Ahead, ArchiveGetOutcome, ArchivePushOutcome, DEFAULT_PUSH_BATCH, PUSH_DIR_NAME,
    PushAheadReport, PushBatchReport, PushLock, PushOptions, PushSpool, archive_current,
    archive_get, archive_push, archive_push_batch, default_parallel, is_segment_name, push_ahead,
};
pub use archivelog::{ArchivelogOptions, ArchivelogReport, backup_archivelog};
pub use backup::{BackupOptions, BackupReport, backup_database};
pub use context::{Context, open_repository, resolve_database};
pub use crosscheck::{
    BackupCheck, ObjectCheck, Resync, crosscheck_backups, crosscheck_wal, resync_backups,
};
pub use error::{EngineError, ErrorKind};
pub use progress::{NoProgress, Progress, current_channel};
pub use rebuild::{Incarnation, RebuildReport, incarnations, rebuild_catalog};
pub use refusal::Refusal;
pub use register::{register_database, register_database_agent};
pub use restore::{
    Estimate, PlannedBackup, PlannedCopy, PlannedPiece, PlannedSegment, RecoveryTarget,
    RestoreOptions, RestorePlan, RestoreReport, RestoreValidateReport, TimelineSpan, Verified,
    WalPlan, WalSource, plan_restore, restore_database, validate_restore,
};
pub use restore::{
    FIRST_NORMAL_OBJECT_ID, Partial, SYSTEM_DATABASES, Selection, filenode_of,
    restore_database_selected,
};
pub use restore::{
    Through, dest as restore_dest, dest_remote as restore_dest_remote,
    dest_serve as restore_dest_serve, quote_shell, restore_database_on,
};
pub use retention::{DeleteReport, Imported};
pub use scan::{Scan, ScannedFile, scan_data_dir};
pub use secondtier::{CopyReport, backup_backupsets, backup_recovery_area, copy_backup_between};
pub use select::select_backup;
pub use synthetic::{SyntheticOptions, synthetic_full};
pub use validate::{
    CorruptReport, ValidateBackupReport, ValidateDatabaseReport, ValidateRead, find_backup,
    validate_database, validate_source,
};
pub use validate_backup::validate_backup;
pub use wal_prefetch::{
    DEFAULT_PREFETCH, PrefetchReport, SPOOL_DIR_NAME, Spool, SpoolLock, Take,
    default_prefetch_parallel, prefetch_into_spool, unix_nanos,
};
