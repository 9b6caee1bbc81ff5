//! The piece format's versions, magics and fixed sizes, as docs/format.md specifies them.

/// Major version of the piece format. Readers refuse other major versions.
pub const FORMAT_VERSION: u16 = 1;
/// Minor version written by this implementation. Readers accept any minor
/// version of a major version they know (see `docs/format.md`).
pub const FORMAT_MINOR_VERSION: u16 = 0;

/// Largest raw (uncompressed) chunk.
pub const MAX_CHUNK: usize = 4 << 20;

/// First 8 bytes of every piece.
pub const PIECE_MAGIC: [u8; 8] = *b"RECMANPC";
/// Last 8 bytes of every complete piece.
pub const FOOTER_MAGIC: [u8; 8] = *b"RECMANFT";

pub(crate) const CHUNK_MAGIC: [u8; 4] = *b"RMCK";
pub(crate) const FILE_END_MAGIC: [u8; 4] = *b"RMFE";
pub(crate) const INDEX_MAGIC: [u8; 4] = *b"RMIX";

/// Size of the fixed part of the piece header.
pub const HEADER_FIXED_LEN: usize = 24;
/// Size of every record header (chunk, file end, index).
pub const RECORD_HEADER_LEN: usize = 32;
/// Size of the footer.
pub const FOOTER_LEN: usize = 40;

/// Largest header JSON a reader accepts (protects against corrupt lengths).
pub(crate) const MAX_HEADER_JSON: u32 = 256 << 20;
/// Size of one file entry in the index body.
pub(crate) const INDEX_FILE_LEN: usize = 32;
/// Size of one chunk entry in the index body.
pub(crate) const INDEX_CHUNK_LEN: usize = 32;
/// Chunks shorter than this are stored raw without trying to compress.
pub(crate) const MIN_COMPRESS: usize = 64;

pub(crate) const CODEC_NONE: u8 = 0;
pub(crate) const CODEC_LZ4: u8 = 1;
pub(crate) const CODEC_ZSTD: u8 = 2;
