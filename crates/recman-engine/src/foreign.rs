//! CATALOG IMPORT: backups other tools made, kept where they lie and used by recman as its
//! own (DESIGN.md, invariant 13: recman never deletes what it did not write). A pgBackRest
//! repository (a stanza's full, differential and incremental backups and its WAL archive) or
//! a pg_basebackup backup is read in place, read-only; each backup gets a catalog row and a
//! recman manifest in the repository that names its origin (`origin`, docs/format.md) but
//! holds no set. `restore database` picks such a backup like any other and reads its files
//! through the origin, each checked against the origin's own checksum; archive-get falls back
//! to the imported WAL archive for a segment recman's own archive does not hold, so recovery
//! runs from an old backup through the old archive into recman's without a gap.
//!
//! The readers of each format live in their own module: [`pgbackrest`] and [`basebackup`].

pub mod basebackup;
pub mod decode;
mod entry;
mod error;
pub mod pgbackrest;
mod record;
mod wal;

pub use crate::backup_types::FOREIGN;
pub use entry::import;
pub use error::ImportError;
pub use recman_format::manifest::EntryKind;
pub use record::{ImportOptions, ImportReport, ImportedBackup};
pub(crate) use wal::{ForeignKnown, read_foreign_wal};

use decode::Checksum;
use recman_format::manifest::{BackupManifest, ManifestOrigin};
use std::io::Read;

pub const PGBACKREST: &str = "pgbackrest";
pub const PG_BASEBACKUP: &str = "pg_basebackup";

/// One path of a foreign backup's data directory, as its origin describes it.
#[derive(Clone, Debug)]
pub struct ForeignEntry {
    /// Relative to the data directory; tablespaces' files under `pg_tblspc/<oid>/`.
    pub path: String,
    pub kind: EntryKind,
    pub mode: u32,
    /// Owner names as the origin recorded them; None: the origin's files' own owner.
    pub user: Option<String>,
    pub group: Option<String>,
    pub mtime: i64,
    pub size: u64,
    pub link_target: Option<String>,
    /// The origin's checksum of the content.
    pub checksum: Option<Checksum>,
    /// Whether the origin checked the file's page checksums (pgBackRest), and the blocks
    /// it found failing.
    pub page_checked: Option<bool>,
    pub page_errors: Vec<u32>,
}

impl Default for ForeignEntry {
    fn default() -> Self {
        ForeignEntry {
            path: String::new(),
            kind: EntryKind::File,
            mode: 0o600,
            user: None,
            group: None,
            mtime: 0,
            size: 0,
            link_target: None,
            checksum: None,
            page_checked: None,
            page_errors: Vec::new(),
        }
    }
}

/// One file of a foreign WAL archive.
#[derive(Clone, Debug)]
pub struct ForeignWal {
    pub name: String,
    /// Relative to the archive's location.
    pub path: String,
    pub stored_size: u64,
    pub archived_at: i64,
    /// The content's checksum as the origin recorded it (hex).
    pub checksum: Option<String>,
}

/// A foreign backup opened for reading: its entries, and each file's content checked
/// against the origin's checksum as it is read (an `InvalidData` error at the end of a file
/// that fails). Implementations are shared by the threads of a restore or validation.
pub(crate) trait Opened: Sync {
    fn describe(&self) -> String;
    fn entries(&self) -> &[ForeignEntry];
    fn open(&self, e: &ForeignEntry) -> Result<Box<dyn Read + Send + '_>, ImportError>;
    /// Whether the backup holds the WAL that makes it consistent (pg_basebackup's pg_wal).
    fn holds_its_wal(&self) -> bool {
        false
    }
    /// How many streams the backup is stored in that are read cheaply only from start to
    /// end (pg_basebackup's tar files, compressed ones above all); 0 when each file opens
    /// on its own. Restore and validation then read each stream once, with [`Opened::visit`].
    fn streams(&self) -> usize {
        0
    }
    /// Hands each file of stream `k` that [`Opened::entries`] lists to `each`, in stored
    /// order, its content checked as [`Opened::open`] checks it.
    fn visit(&self, k: usize, each: &mut Visit<'_>) -> Result<(), crate::error::EngineError> {
        let _ = (k, each);
        Err(crate::refusal::Import::NotInStreams {
            what: self.describe(),
        }
        .into())
    }
}

/// What [`Opened::visit`] calls for each file, with a reader of its checked content.
pub(crate) type Visit<'a> =
    dyn FnMut(&ForeignEntry, &mut dyn Read) -> Result<(), crate::error::EngineError> + 'a;

/// Opens the origin of the newest backup of `chain` (a chain of imported backups, oldest
/// first, as the restore plan gives it).
pub(crate) fn open_origin(chain: &[BackupManifest]) -> Result<Box<dyn Opened>, ImportError> {
    let m = chain.last().expect("a chain has at least one backup");
    let o = origin_of(m)?;
    match o.tool.as_str() {
        PGBACKREST => Ok(Box::new(record::PgbrOpened::open(o)?)),
        PG_BASEBACKUP => Ok(Box::new(basebackup::Opened::open_chain(chain)?)),
        t => Err(crate::refusal::Import::UnknownOrigin {
            backup_id: m.backup_id.to_string(),
            origin: t.to_string(),
        }
        .into()),
    }
}

fn origin_of(m: &BackupManifest) -> Result<&ManifestOrigin, ImportError> {
    m.origin.as_ref().ok_or_else(|| {
        ImportError::from(crate::refusal::Import::NotImported {
            backup_id: m.backup_id.to_string(),
        })
    })
}

/// How a restore plan shows an imported backup's origin.
pub fn describe_origin(o: &ManifestOrigin) -> String {
    match &o.stanza {
        Some(s) => format!("{} {} stanza {s}, backup {}", o.tool, o.location, o.label),
        None => format!("{} {}", o.tool, o.location),
    }
}

/// The words for a file of an imported backup that failed: its path, what failed and the
/// checksum the origin recorded for it.
pub(crate) fn file_failure(o: &dyn Opened, f: &ForeignEntry, why: &str) -> String {
    let recorded = f
        .checksum
        .as_ref()
        .map(|c| format!("; the origin recorded {c} for it"))
        .unwrap_or_default();
    format!("file {} of {}: {why}{recorded}", f.path, o.describe())
}

/// Fills `buf` as far as a foreign file's checked stream goes: short only at its end, 0 once
/// the stream is done (its check passed). Restore, copy and validate of imported backups read
/// through it.
pub(crate) fn read_full(r: &mut dyn std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
