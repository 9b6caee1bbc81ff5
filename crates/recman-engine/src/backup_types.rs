//! The `backup_type` values the catalog records that the engine gives a meaning of its own:
//! named once, below everything that writes or reads them.

/// `backup_type` of a backup of archived WAL.
pub const ARCHIVELOG: &str = "ARCHIVELOG";

/// `backup_type` of a backup cut short by its DURATION window with PARTIAL: the sets finished
/// in the window, never a base for restore by itself.
pub const PARTIAL: &str = "PARTIAL";

/// `backup_type` of every imported backup: never a parent or base for recman's own.
pub const FOREIGN: &str = "FOREIGN";
