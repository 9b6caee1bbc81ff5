//! CATALOG IMPORT, as the other crates call it: importing a pgBackRest repository or a
//! pg_basebackup backup, copying an imported backup into recman's own format, and validating
//! one. The readers of the foreign formats and the recording of their backups live in
//! `foreign`, below the archive and the restore, which read imported WAL and files through
//! them; copying and validating stay here, above the archive push and the validation they use.

mod copy;
mod validate;

pub use crate::foreign::{
    EntryKind, FOREIGN, ForeignEntry, ForeignWal, ImportError, ImportOptions, ImportReport,
    ImportedBackup, PG_BASEBACKUP, PGBACKREST, basebackup, decode, describe_origin, import,
    pgbackrest,
};
pub use copy::{CopiedBackup, copy_imported};
pub(crate) use validate::validate_foreign;
