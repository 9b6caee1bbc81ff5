//! The values a piece carries: compression, header, records, index.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{FormatError, Result};

/// Compression of a piece's chunks. Serialized as `"none"`, `"lz4"` or
/// `{"zstd":{"level":N}}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Lz4,
    Zstd { level: i32 },
}

impl Compression {
    /// The zstd level used by `"zstd"`.
    pub const ZSTD_DEFAULT_LEVEL: i32 = 3;
}

impl FromStr for Compression {
    type Err = FormatError;

    /// Accepts `none`, `lz4`, `zstd` (level 3) and `zstd:N` with `N` in
    /// `1..=19` (ASCII case-insensitive).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || FormatError::InvalidCompression {
            input: s.to_string(),
        };
        let lower = s.to_ascii_lowercase();
        match lower.as_str() {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd {
                level: Self::ZSTD_DEFAULT_LEVEL,
            }),
            other => {
                let level = other.strip_prefix("zstd:").ok_or_else(bad)?;
                if level.is_empty() || !level.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                match level.parse::<i32>() {
                    Ok(level @ 1..=19) => Ok(Compression::Zstd { level }),
                    _ => Err(bad()),
                }
            }
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Lz4 => f.write_str("lz4"),
            Compression::Zstd { level } => write!(f, "zstd:{level}"),
        }
    }
}

/// The self-describing header of a piece (stored as JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PieceHeader {
    pub backup_id: String,
    pub db_name: String,
    pub system_identifier: u64,
    pub set_no: u32,
    pub piece_no: u32,
    pub compression: Compression,
    pub created_unix: i64,
    /// The files whose data this piece may carry; chunks name them by
    /// `index`.
    pub files: Vec<SetFile>,
    /// In a repository with a MAC key, an archived WAL file's MAC: HMAC-SHA-256 of its content
    /// under that key, bound to the object's name (`seal::MacKey::content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// One file of a backup set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetFile {
    pub index: u32,
    /// Path relative to the data directory, `/` separators.
    pub path: String,
}

/// Totals of a piece, returned by [`PieceWriter::finish`] and
/// [`PieceReader::finish`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PieceSummary {
    /// Size of the piece in bytes, footer included.
    pub size: u64,
    /// CRC-32C of every byte before the footer (also stored in the footer).
    pub crc32c: u32,
    /// Number of chunk records.
    pub chunks: u64,
    /// Sum of the raw (uncompressed) chunk lengths.
    pub raw_bytes: u64,
}

/// A record read by [`PieceReader::next`].
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// Raw (decompressed, verified) bytes of `file_index` at `file_offset`.
    Chunk {
        file_index: u32,
        file_offset: u64,
        data: Vec<u8>,
    },
    /// The file is complete in this piece: its final size and the CRC-32C of
    /// its whole content.
    FileEnd {
        file_index: u32,
        size: u64,
        crc32c: u32,
    },
}

/// Like [`Record`], borrowing the chunk data from the reader's buffer
/// ([`PieceReader::next_ref`]).
#[derive(Debug, PartialEq)]
pub enum RecordRef<'a> {
    Chunk {
        file_index: u32,
        file_offset: u64,
        data: &'a [u8],
    },
    FileEnd {
        file_index: u32,
        size: u64,
        crc32c: u32,
    },
}

impl RecordRef<'_> {
    pub fn to_owned(&self) -> Record {
        match *self {
            RecordRef::Chunk {
                file_index,
                file_offset,
                data,
            } => Record::Chunk {
                file_index,
                file_offset,
                data: data.to_vec(),
            },
            RecordRef::FileEnd {
                file_index,
                size,
                crc32c,
            } => Record::FileEnd {
                file_index,
                size,
                crc32c,
            },
        }
    }
}

/// The index of a piece, from [`read_index`].
#[derive(Clone, Debug, PartialEq)]
pub struct PieceIndex {
    /// One entry per file of the header, in header order.
    pub files: Vec<IndexedFile>,
}

impl PieceIndex {
    /// The entry of `file_index`.
    pub fn file(&self, file_index: u32) -> Option<&IndexedFile> {
        self.files.iter().find(|f| f.index == file_index)
    }

    /// The entry of the file with this path.
    pub fn file_by_path(&self, path: &str) -> Option<&IndexedFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// Where one file's chunks are in a piece.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexedFile {
    pub index: u32,
    pub path: String,
    /// Final size, if the file ended in this piece.
    pub size: Option<u64>,
    /// CRC-32C of the whole file, if the file ended in this piece.
    pub crc32c: Option<u32>,
    /// In the order they were written.
    pub chunks: Vec<ChunkLoc>,
}

/// Location of one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkLoc {
    /// Offset of the chunk's record header within the piece.
    pub piece_offset: u64,
    pub file_offset: u64,
    pub raw_len: u32,
    /// Bytes of payload after the 32-byte record header.
    pub stored_len: u32,
    /// Sequence number of the chunk in the piece (0-based, all files).
    pub chunk_no: u64,
}
