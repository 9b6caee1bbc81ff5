//! Errors of the piece writer and reader.

use crate::layout::{FORMAT_VERSION, MAX_CHUNK};
use std::io;

pub(crate) type Result<T> = std::result::Result<T, FormatError>;

/// Errors of the piece writer and reader. Offsets are byte offsets within
/// the piece; the caller adds the piece's path.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("not a recman backup piece: bad {what} magic at offset {piece_offset}")]
    BadMagic {
        what: &'static str,
        piece_offset: u64,
    },
    #[error(
        "unsupported piece format version {major}.{minor} at offset {piece_offset}: this recman reads version {FORMAT_VERSION}.x only (a newer recman wrote this piece?)"
    )]
    UnsupportedVersion {
        major: u16,
        minor: u16,
        piece_offset: u64,
    },
    #[error("piece header at offset 0: {reason}")]
    BadHeader { reason: String },
    #[error("piece header CRC-32C mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    HeaderChecksum { stored: u32, computed: u32 },
    #[error("chunk #{chunk_no} at offset {piece_offset}: CRC-32C mismatch")]
    ChunkChecksum { chunk_no: u64, piece_offset: u64 },
    #[error("file-end record at offset {piece_offset}: CRC-32C mismatch")]
    RecordChecksum { piece_offset: u64 },
    #[error("bad record at offset {piece_offset}: {reason}")]
    BadRecord { piece_offset: u64, reason: String },
    #[error("piece truncated at offset {piece_offset}")]
    Truncated { piece_offset: u64 },
    #[error("chunk #{chunk_no} at offset {piece_offset}: decompression failed: {reason}")]
    Decompress {
        chunk_no: u64,
        piece_offset: u64,
        reason: String,
    },
    #[error("index at offset {piece_offset}: {reason}")]
    BadIndex { piece_offset: u64, reason: String },
    #[error("index at offset {piece_offset}: CRC-32C mismatch")]
    IndexChecksum { piece_offset: u64 },
    #[error("footer at offset {piece_offset}: {reason}")]
    BadFooter { piece_offset: u64, reason: String },
    #[error(
        "whole-piece CRC-32C mismatch: footer says {stored:#010x}, data gives {computed:#010x}"
    )]
    PieceChecksum { stored: u32, computed: u32 },
    #[error("unexpected data after the footer at offset {piece_offset}")]
    TrailingData { piece_offset: u64 },
    #[error("chunk of {len} bytes exceeds the maximum of {MAX_CHUNK}")]
    ChunkTooLarge { len: usize },
    #[error("file index {file_index} is not listed in the piece header")]
    UnknownFile { file_index: u32 },
    #[error("file index {file_index} is listed twice in the piece header")]
    DuplicateFile { file_index: u32 },
    #[error("file index {file_index} was already ended in this piece")]
    FileAlreadyEnded { file_index: u32 },
    #[error("compressor: {0}")]
    Compressor(String),
    #[error(
        "invalid compression '{input}': expected none, lz4, zstd (level 3) or zstd:N with N in 1..=19"
    )]
    InvalidCompression { input: String },
}

impl FormatError {
    /// The error's kind (see recman-error): anything found wrong in a piece read back is
    /// Corrupt; an I/O error keeps the kind the system gave it (the engine looks inside for a media
    /// error first).
    pub fn kind(&self) -> recman_error::ErrorKind {
        use recman_error::ErrorKind as K;
        match self {
            FormatError::Io(e) => K::of_io(e),
            FormatError::InvalidCompression { .. } => K::InvalidInput,
            // Raised while writing: the writer was misused or the compressor failed.
            FormatError::ChunkTooLarge { .. }
            | FormatError::FileAlreadyEnded { .. }
            | FormatError::Compressor(_) => K::Internal,
            _ => K::Corrupt,
        }
    }
}
