//! The backup manifest: one JSON document per backup, written last and atomically, that
//! describes everything a restore needs. The repository's manifests are the truth; the catalog
//! is an index that can be rebuilt from them.

use serde::{Deserialize, Serialize};

pub const MANIFEST_FORMAT: &str = "recman-backup-manifest";
/// 2: the manifest ends with its own checksum member (see [`crate::seal`]).
pub const MANIFEST_VERSION: u32 = 2;

/// A manifest as read back: every entry in memory.
pub type BackupManifest = BackupManifestOf<Vec<ManifestEntry>>;

/// The manifest, generic over how its entries are held: a writer may produce them lazily (a
/// cluster of a million files must not hold a million entries in memory to write them); the
/// JSON is the same either way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackupManifestOf<E> {
    pub format: String,
    pub version: u32,
    pub backup_id: String,
    pub db_name: String,
    pub system_identifier: u64,
    pub pg_version: u32,
    pub tag: String,
    pub backup_type: String,
    /// LSNs as PostgreSQL prints them (X/Y).
    pub start_lsn: String,
    pub stop_lsn: String,
    pub timeline: u32,
    pub start_wal: String,
    pub stop_wal: String,
    /// RFC 3339 times.
    pub start_time: String,
    pub stop_time: String,
    pub stop_next_xid: u64,
    pub wal_segment_size: u64,
    pub compression: String,
    pub channels: u32,
    pub filesperset: u32,
    pub maxopenfiles: u32,
    pub checksums_enabled: bool,
    /// Contents PostgreSQL returned from the backup-stop call; restore writes them back.
    pub backup_label: String,
    pub tablespace_map: String,
    /// RMAN's incremental level: None for a plain full backup, 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incremental_level: Option<u8>,
    /// A level 1 taken against the last level 0 rather than the last level 0 or 1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cumulative: bool,
    /// The backup a level 1 is relative to, and the LSN its blocks are newer than.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_start_lsn: Option<String>,
    /// What the backup read from the cluster, and how much of it change tracking chose: kept
    /// here so that a catalog rebuilt from the repository lists the same figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ManifestRead>,
    /// A backup another tool made, imported to be read where it lies (`catalog import`): it
    /// has no sets; restore and validate read its files through the origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<ManifestOrigin>,
    pub tablespaces: Vec<ManifestTablespace>,
    pub entries: E,
    pub sets: Vec<ManifestSet>,
    pub corrupt_blocks: Vec<ManifestCorruptBlock>,
}

/// Bytes a backup read from the cluster; of them, bytes and relation files read through
/// change tracking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestRead {
    pub read_bytes: u64,
    pub tracked_bytes: u64,
    pub tracked_files: u64,
}

/// Where an imported backup lies and how its origin names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestOrigin {
    /// `pgbackrest` or `pg_basebackup`.
    pub tool: String,
    /// The pgBackRest repository, or the pg_basebackup backup's directory.
    pub location: String,
    /// pgBackRest's configuration file its passphrase is read from (never the secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// pgBackRest's stanza.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stanza: Option<String>,
    /// The origin's own name of the backup (pgBackRest's label, the directory's name).
    pub label: String,
    /// The origin's own type: `full`, `diff` or `incr`.
    pub origin_type: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestTablespace {
    pub oid: u32,
    pub name: String,
    pub location: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

/// One path of the data directory (tablespace contents appear under `pg_tblspc/<oid>/...`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub path: String,
    pub kind: EntryKind,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: i64,
    /// Bytes backed up (files only); the size when the file was read, not when it was listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<u32>,
    /// Backup set holding the file's contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_no: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_target: Option<String>,
    /// Blocks whose checksum failed while PostgreSQL was writing them (torn reads, or pages
    /// newer than the backup start): WAL replay rewrites them, so validation skips them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volatile_blocks: Vec<u32>,
    /// In a level 1: only blocks changed since the parent are in the pieces (the rest come
    /// from the parent chain); `crc32c` then covers the bytes that were written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incremental: bool,
    /// For a file backed up in sections (SECTION SIZE): one piece of its set per byte range.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<ManifestSection>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSection {
    pub piece_no: u32,
    pub offset: u64,
    pub len: u64,
    /// CRC-32C of the section's bytes.
    pub crc32c: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSet {
    pub set_no: u32,
    pub channel: u32,
    pub pieces: Vec<ManifestPiece>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestPiece {
    pub piece_no: u32,
    /// Relative to the repository root.
    pub path: String,
    pub size: u64,
    pub crc32c: u32,
    /// The device type the piece was written to when not the repository (`--device-type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestCorruptBlock {
    pub path: String,
    pub block: u32,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    pub detail: String,
}
