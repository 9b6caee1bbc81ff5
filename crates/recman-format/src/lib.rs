//! recman-format: the backup piece container (format v1) and the backup
//! manifest.
//!
//! A backup piece is one file (or tape file) of a backup set. It is written
//! front to back without seeking:
//!
//! ```text
//! piece header | record* | index record | footer
//! ```
//!
//! * the header names the backup, set and piece and lists the set's files;
//! * records are chunks of file data (up to [`MAX_CHUNK`] raw bytes each,
//!   compressed per chunk, CRC-32C per chunk) and file-end markers; chunks
//!   of several files interleave (multiplexing);
//! * the index lists, per file, where its chunks are, so one file can be
//!   restored without reading the rest of the piece;
//! * the fixed-size footer points at the index and holds the CRC-32C of the
//!   whole piece.
//!
//! The byte layout is specified in `docs/format.md`.

pub mod manifest;

mod crc;

pub use crc::{crc32c, crc32c_append, crc32c_combine};

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

const CHUNK_MAGIC: [u8; 4] = *b"RMCK";
const FILE_END_MAGIC: [u8; 4] = *b"RMFE";
const INDEX_MAGIC: [u8; 4] = *b"RMIX";

/// Size of the fixed part of the piece header.
pub const HEADER_FIXED_LEN: usize = 24;
/// Size of every record header (chunk, file end, index).
pub const RECORD_HEADER_LEN: usize = 32;
/// Size of the footer.
pub const FOOTER_LEN: usize = 40;

/// Largest header JSON a reader accepts (protects against corrupt lengths).
const MAX_HEADER_JSON: u32 = 256 << 20;
/// Size of one file entry in the index body.
const INDEX_FILE_LEN: usize = 32;
/// Size of one chunk entry in the index body.
const INDEX_CHUNK_LEN: usize = 32;
/// Chunks shorter than this are stored raw without trying to compress.
const MIN_COMPRESS: usize = 64;

const CODEC_NONE: u8 = 0;
const CODEC_LZ4: u8 = 1;
const CODEC_ZSTD: u8 = 2;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

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

type Result<T, E = FormatError> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------
// Compression
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Header, records, index
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Little-endian helpers
// ---------------------------------------------------------------------------

#[inline]
fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
#[inline]
fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(b[off..off + 2].try_into().unwrap())
}
#[inline]
fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
#[inline]
fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// CRC of a record: CRC-32C of header bytes 0..28 followed by the payload,
/// computed from the payload's own CRC.
#[inline]
fn record_crc(hdr: &[u8; RECORD_HEADER_LEN], payload_crc: u32, payload_len: usize) -> u32 {
    crc32c_combine(crc32c(&hdr[..28]), payload_crc, payload_len as u64)
}

fn encode_header(header: &PieceHeader) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(header).map_err(|e| FormatError::BadHeader {
        reason: e.to_string(),
    })?;
    if json.len() > MAX_HEADER_JSON as usize {
        return Err(FormatError::BadHeader {
            reason: format!("header JSON of {} bytes is too large", json.len()),
        });
    }
    let mut out = vec![0u8; HEADER_FIXED_LEN + json.len()];
    out[..8].copy_from_slice(&PIECE_MAGIC);
    put_u16(&mut out, 8, FORMAT_VERSION);
    put_u16(&mut out, 10, FORMAT_MINOR_VERSION);
    put_u32(&mut out, 12, json.len() as u32);
    put_u32(&mut out, 16, 0); // flags, reserved
    out[HEADER_FIXED_LEN..].copy_from_slice(&json);
    let crc = crc32c_append(crc32c(&out[..20]), &json);
    put_u32(&mut out, 20, crc);
    Ok(out)
}

fn check_version(major: u16, minor: u16, piece_offset: u64) -> Result<()> {
    if major != FORMAT_VERSION {
        return Err(FormatError::UnsupportedVersion {
            major,
            minor,
            piece_offset,
        });
    }
    Ok(())
}

/// Checks the fixed header part; returns the JSON length.
fn parse_header_fixed(fixed: &[u8; HEADER_FIXED_LEN]) -> Result<u32> {
    if fixed[..8] != PIECE_MAGIC {
        return Err(FormatError::BadMagic {
            what: "piece header",
            piece_offset: 0,
        });
    }
    check_version(get_u16(fixed, 8), get_u16(fixed, 10), 8)?;
    let json_len = get_u32(fixed, 12);
    if json_len > MAX_HEADER_JSON {
        return Err(FormatError::BadHeader {
            reason: format!("header length {json_len} is implausible"),
        });
    }
    Ok(json_len)
}

fn parse_header_json(fixed: &[u8; HEADER_FIXED_LEN], json: &[u8]) -> Result<PieceHeader> {
    let stored = get_u32(fixed, 20);
    let computed = crc32c_append(crc32c(&fixed[..20]), json);
    if stored != computed {
        return Err(FormatError::HeaderChecksum { stored, computed });
    }
    let header: PieceHeader = serde_json::from_slice(json).map_err(|e| FormatError::BadHeader {
        reason: format!("invalid JSON: {e}"),
    })?;
    check_unique_files(&header)?;
    Ok(header)
}

/// Maps file index -> position in `header.files`; refuses duplicates.
fn check_unique_files(header: &PieceHeader) -> Result<HashMap<u32, usize>> {
    let mut slots = HashMap::with_capacity(header.files.len());
    for (i, f) in header.files.iter().enumerate() {
        if slots.insert(f.index, i).is_some() {
            return Err(FormatError::DuplicateFile {
                file_index: f.index,
            });
        }
    }
    Ok(slots)
}

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------

struct WriterFile {
    index: u32,
    end: Option<(u64, u32)>,
    chunks: Vec<ChunkLoc>,
}

/// Writes one piece front to back, without seeking.
///
/// Each `write_chunk` issues one `write_all` for a compressed chunk (header
/// and payload assembled in the writer's buffer) or two for a raw one; wrap
/// unbuffered sinks that need fixed-size writes (tape) in a suitable
/// buffered writer.
///
/// After an error from `write_chunk`, `end_file` or `finish`, the piece is
/// incomplete: discard it.
pub struct PieceWriter<W: Write> {
    w: W,
    offset: u64,
    piece_crc: u32,
    compression: Compression,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// Record header + compressed payload; allocated once.
    cbuf: Vec<u8>,
    files: Vec<WriterFile>,
    slots: HashMap<u32, usize>,
    chunks: u64,
    raw_bytes: u64,
}

impl<W: Write> PieceWriter<W> {
    /// Writes the piece header. Fails if a file index appears twice.
    pub fn new(mut w: W, header: &PieceHeader) -> Result<Self> {
        let slots = check_unique_files(header)?;
        let zstd = match header.compression {
            Compression::Zstd { level } => Some(
                zstd::bulk::Compressor::new(level)
                    .map_err(|e| FormatError::Compressor(format!("zstd level {level}: {e}")))?,
            ),
            _ => None,
        };
        let cbuf_len = match header.compression {
            Compression::None => 0,
            Compression::Lz4 => {
                RECORD_HEADER_LEN + lz4_flex::block::get_maximum_output_size(MAX_CHUNK)
            }
            Compression::Zstd { .. } => RECORD_HEADER_LEN + MAX_CHUNK,
        };
        let bytes = encode_header(header)?;
        w.write_all(&bytes)?;
        let files = header
            .files
            .iter()
            .map(|f| WriterFile {
                index: f.index,
                end: None,
                chunks: Vec::new(),
            })
            .collect();
        Ok(PieceWriter {
            w,
            offset: bytes.len() as u64,
            piece_crc: crc32c(&bytes),
            compression: header.compression,
            zstd,
            cbuf: vec![0u8; cbuf_len],
            files,
            slots,
            chunks: 0,
            raw_bytes: 0,
        })
    }

    fn slot(&self, file_index: u32) -> Result<usize> {
        let slot = *self
            .slots
            .get(&file_index)
            .ok_or(FormatError::UnknownFile { file_index })?;
        if self.files[slot].end.is_some() {
            return Err(FormatError::FileAlreadyEnded { file_index });
        }
        Ok(slot)
    }

    /// Compresses `data` into `cbuf[RECORD_HEADER_LEN..]`; returns the codec
    /// and compressed length, or `None` when the chunk is to be stored raw
    /// (no compression, too short, or the compressed form is not smaller).
    fn compress(&mut self, data: &[u8]) -> Option<(u8, usize)> {
        if data.len() < MIN_COMPRESS || self.compression == Compression::None {
            return None;
        }
        let out = &mut self.cbuf[RECORD_HEADER_LEN..];
        let (codec, n) = match self.compression {
            Compression::None => return None,
            Compression::Lz4 => (CODEC_LZ4, lz4_flex::block::compress_into(data, out).ok()?),
            Compression::Zstd { .. } => {
                // Room for one byte less than the input: zstd gives up early
                // when the result would not be smaller.
                let out = &mut out[..data.len() - 1];
                (
                    CODEC_ZSTD,
                    self.zstd.as_mut()?.compress_to_buffer(data, out).ok()?,
                )
            }
        };
        (n < data.len()).then_some((codec, n))
    }

    /// Appends a chunk of `file_index`'s data at `file_offset`.
    /// `data.len()` must be at most [`MAX_CHUNK`]; empty chunks are ignored.
    pub fn write_chunk(&mut self, file_index: u32, file_offset: u64, data: &[u8]) -> Result<()> {
        if data.len() > MAX_CHUNK {
            return Err(FormatError::ChunkTooLarge { len: data.len() });
        }
        let slot = self.slot(file_index)?;
        if data.is_empty() {
            return Ok(());
        }
        let compressed = self.compress(data);
        let (codec, stored_len) = compressed.unwrap_or((CODEC_NONE, data.len()));
        let payload: &[u8] = match compressed {
            Some(_) => &self.cbuf[RECORD_HEADER_LEN..RECORD_HEADER_LEN + stored_len],
            None => data,
        };

        let mut hdr = [0u8; RECORD_HEADER_LEN];
        hdr[..4].copy_from_slice(&CHUNK_MAGIC);
        hdr[4] = codec;
        put_u32(&mut hdr, 8, file_index);
        put_u32(&mut hdr, 12, data.len() as u32);
        put_u64(&mut hdr, 16, file_offset);
        put_u32(&mut hdr, 24, stored_len as u32);
        let payload_crc = crc32c(payload);
        let rcrc = record_crc(&hdr, payload_crc, stored_len);
        put_u32(&mut hdr, 28, rcrc);

        if compressed.is_some() {
            self.cbuf[..RECORD_HEADER_LEN].copy_from_slice(&hdr);
            self.w
                .write_all(&self.cbuf[..RECORD_HEADER_LEN + stored_len])?;
        } else {
            self.w.write_all(&hdr)?;
            self.w.write_all(data)?;
        }
        self.piece_crc = crc32c_combine(
            crc32c_append(self.piece_crc, &hdr),
            payload_crc,
            stored_len as u64,
        );

        self.files[slot].chunks.push(ChunkLoc {
            piece_offset: self.offset,
            file_offset,
            raw_len: data.len() as u32,
            stored_len: stored_len as u32,
            chunk_no: self.chunks,
        });
        self.offset += (RECORD_HEADER_LEN + stored_len) as u64;
        self.chunks += 1;
        self.raw_bytes += data.len() as u64;
        Ok(())
    }

    /// Marks `file_index` complete in this piece: its final `size` and the
    /// CRC-32C of its whole content. No chunk of the file may follow.
    pub fn end_file(&mut self, file_index: u32, size: u64, crc32c_of_file: u32) -> Result<()> {
        let slot = self.slot(file_index)?;
        let mut hdr = [0u8; RECORD_HEADER_LEN];
        hdr[..4].copy_from_slice(&FILE_END_MAGIC);
        put_u32(&mut hdr, 8, file_index);
        put_u32(&mut hdr, 12, crc32c_of_file);
        put_u64(&mut hdr, 16, size);
        let rcrc = crc32c(&hdr[..28]);
        put_u32(&mut hdr, 28, rcrc);
        self.emit(&hdr)?;
        self.files[slot].end = Some((size, crc32c_of_file));
        Ok(())
    }

    fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        self.w.write_all(bytes)?;
        self.piece_crc = crc32c_append(self.piece_crc, bytes);
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Bytes written so far (header and records; the index and footer come
    /// with `finish`).
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    /// Number of chunks written so far.
    pub fn chunks_written(&self) -> u64 {
        self.chunks
    }

    /// Writes the index and the footer, flushes, and returns the sink.
    pub fn finish(mut self) -> Result<(W, PieceSummary)> {
        let index_offset = self.offset;
        let body_len = self.files.len() * INDEX_FILE_LEN + self.chunks as usize * INDEX_CHUNK_LEN;
        let mut rec = vec![0u8; RECORD_HEADER_LEN + body_len];
        rec[..4].copy_from_slice(&INDEX_MAGIC);
        put_u32(&mut rec, 4, self.files.len() as u32);
        put_u64(&mut rec, 8, self.chunks);
        put_u64(&mut rec, 16, body_len as u64);
        let mut p = RECORD_HEADER_LEN;
        for f in &self.files {
            put_u32(&mut rec, p, f.index);
            let (size, crc) = f.end.unwrap_or((0, 0));
            put_u32(&mut rec, p + 4, f.end.is_some() as u32);
            put_u64(&mut rec, p + 8, size);
            put_u32(&mut rec, p + 16, crc);
            put_u64(&mut rec, p + 24, f.chunks.len() as u64);
            p += INDEX_FILE_LEN;
            for c in &f.chunks {
                put_u64(&mut rec, p, c.piece_offset);
                put_u64(&mut rec, p + 8, c.file_offset);
                put_u64(&mut rec, p + 16, c.chunk_no);
                put_u32(&mut rec, p + 24, c.raw_len);
                put_u32(&mut rec, p + 28, c.stored_len);
                p += INDEX_CHUNK_LEN;
            }
        }
        debug_assert_eq!(p, rec.len());
        let crc = crc32c_append(crc32c(&rec[..28]), &rec[RECORD_HEADER_LEN..]);
        put_u32(&mut rec, 28, crc);
        self.emit(&rec)?;

        let mut footer = [0u8; FOOTER_LEN];
        put_u64(&mut footer, 0, index_offset);
        put_u64(&mut footer, 8, rec.len() as u64);
        put_u32(&mut footer, 16, self.piece_crc);
        put_u16(&mut footer, 20, FORMAT_VERSION);
        put_u16(&mut footer, 22, FORMAT_MINOR_VERSION);
        let fcrc = crc32c(&footer[..28]);
        put_u32(&mut footer, 28, fcrc);
        footer[32..].copy_from_slice(&FOOTER_MAGIC);
        self.w.write_all(&footer)?;
        self.w.flush()?;
        let summary = PieceSummary {
            size: self.offset + FOOTER_LEN as u64,
            crc32c: self.piece_crc,
            chunks: self.chunks,
            raw_bytes: self.raw_bytes,
        };
        Ok((self.w, summary))
    }
}

// ---------------------------------------------------------------------------
// Shared decoding
// ---------------------------------------------------------------------------

/// Decoder state shared by the streaming reader and random access.
struct Decoder {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Decoder {
    fn new() -> Self {
        Decoder { zstd: None }
    }

    /// Decompresses `stored` into `out` (exactly the raw length).
    fn decode(
        &mut self,
        codec: u8,
        stored: &[u8],
        out: &mut [u8],
        chunk_no: u64,
        piece_offset: u64,
    ) -> Result<()> {
        let err = |reason: String| FormatError::Decompress {
            chunk_no,
            piece_offset,
            reason,
        };
        let n = match codec {
            CODEC_NONE => {
                out.copy_from_slice(stored);
                out.len()
            }
            CODEC_LZ4 => {
                lz4_flex::block::decompress_into(stored, out).map_err(|e| err(e.to_string()))?
            }
            CODEC_ZSTD => {
                if self.zstd.is_none() {
                    self.zstd =
                        Some(zstd::bulk::Decompressor::new().map_err(|e| err(e.to_string()))?);
                }
                self.zstd
                    .as_mut()
                    .unwrap()
                    .decompress_to_buffer(stored, out)
                    .map_err(|e| err(e.to_string()))?
            }
            _ => unreachable!("codec checked when the record header was parsed"),
        };
        if n != out.len() {
            return Err(err(format!("{n} bytes instead of {}", out.len())));
        }
        Ok(())
    }
}

/// A parsed chunk record header.
struct ChunkHeader {
    codec: u8,
    file_index: u32,
    raw_len: u32,
    file_offset: u64,
    stored_len: u32,
    crc: u32,
}

fn parse_chunk_header(hdr: &[u8; RECORD_HEADER_LEN], piece_offset: u64) -> Result<ChunkHeader> {
    let bad = |reason: String| FormatError::BadRecord {
        piece_offset,
        reason,
    };
    let h = ChunkHeader {
        codec: hdr[4],
        file_index: get_u32(hdr, 8),
        raw_len: get_u32(hdr, 12),
        file_offset: get_u64(hdr, 16),
        stored_len: get_u32(hdr, 24),
        crc: get_u32(hdr, 28),
    };
    if h.raw_len as usize > MAX_CHUNK || h.raw_len == 0 {
        return Err(bad(format!("chunk raw length {} out of range", h.raw_len)));
    }
    match h.codec {
        CODEC_NONE if h.stored_len == h.raw_len => {}
        CODEC_LZ4 | CODEC_ZSTD if h.stored_len < h.raw_len => {}
        CODEC_NONE | CODEC_LZ4 | CODEC_ZSTD => {
            return Err(bad(format!(
                "chunk stored length {} does not fit raw length {} (codec {})",
                h.stored_len, h.raw_len, h.codec
            )));
        }
        other => return Err(bad(format!("unknown chunk codec {other}"))),
    }
    Ok(h)
}

fn magic_name(m: &[u8]) -> String {
    m.iter()
        .map(|&b| {
            if b.is_ascii_graphic() {
                (b as char).to_string()
            } else {
                format!("\\x{b:02x}")
            }
        })
        .collect()
}

/// Parses the index body (after its 32-byte header, CRC already checked).
fn parse_index(
    header: &PieceHeader,
    rec_hdr: &[u8; RECORD_HEADER_LEN],
    body: &[u8],
    piece_offset: u64,
) -> Result<PieceIndex> {
    let bad = |reason: String| FormatError::BadIndex {
        piece_offset,
        reason,
    };
    let file_count = get_u32(rec_hdr, 4) as usize;
    let chunk_count = get_u64(rec_hdr, 8);
    if file_count != header.files.len() {
        return Err(bad(format!(
            "{file_count} files, the header lists {}",
            header.files.len()
        )));
    }
    let mut files = Vec::with_capacity(file_count);
    let mut p = 0usize;
    let mut total = 0u64;
    for sf in &header.files {
        if body.len() - p < INDEX_FILE_LEN {
            return Err(bad("body too short".into()));
        }
        let index = get_u32(body, p);
        if index != sf.index {
            return Err(bad(format!(
                "file entry {index} where the header has {}",
                sf.index
            )));
        }
        let ended = get_u32(body, p + 4) & 1 != 0;
        let size = get_u64(body, p + 8);
        let crc = get_u32(body, p + 16);
        let n = get_u64(body, p + 24);
        p += INDEX_FILE_LEN;
        if n > ((body.len() - p) / INDEX_CHUNK_LEN) as u64 {
            return Err(bad(format!(
                "file {index}: {n} chunks do not fit in the index"
            )));
        }
        let mut chunks = Vec::with_capacity(n as usize);
        for _ in 0..n {
            chunks.push(ChunkLoc {
                piece_offset: get_u64(body, p),
                file_offset: get_u64(body, p + 8),
                chunk_no: get_u64(body, p + 16),
                raw_len: get_u32(body, p + 24),
                stored_len: get_u32(body, p + 28),
            });
            p += INDEX_CHUNK_LEN;
        }
        total += n;
        files.push(IndexedFile {
            index,
            path: sf.path.clone(),
            size: ended.then_some(size),
            crc32c: ended.then_some(crc),
            chunks,
        });
    }
    if p != body.len() {
        return Err(bad(format!(
            "{} unexpected bytes at the end",
            body.len() - p
        )));
    }
    if total != chunk_count {
        return Err(bad(format!(
            "{total} chunk entries, the index header says {chunk_count}"
        )));
    }
    Ok(PieceIndex { files })
}

/// A parsed footer.
struct Footer {
    index_offset: u64,
    index_len: u64,
    piece_crc: u32,
}

fn parse_footer(f: &[u8; FOOTER_LEN], piece_offset: u64) -> Result<Footer> {
    if f[32..] != FOOTER_MAGIC {
        return Err(FormatError::BadMagic {
            what: "footer",
            piece_offset: piece_offset + 32,
        });
    }
    let stored = get_u32(f, 28);
    if crc32c(&f[..28]) != stored {
        return Err(FormatError::BadFooter {
            piece_offset,
            reason: "CRC-32C mismatch".into(),
        });
    }
    check_version(get_u16(f, 20), get_u16(f, 22), piece_offset + 20)?;
    Ok(Footer {
        index_offset: get_u64(f, 0),
        index_len: get_u64(f, 8),
        piece_crc: get_u32(f, 16),
    })
}

// ---------------------------------------------------------------------------
// Streaming reader
// ---------------------------------------------------------------------------

enum ReadState {
    Records,
    /// The index was read; `next` returns `None`.
    AtIndex {
        index_offset: u64,
        index_len: u64,
    },
}

/// Reads a piece front to back (tape-friendly: no seeking), verifying every
/// chunk before returning it.
pub struct PieceReader<R: Read> {
    r: R,
    header: PieceHeader,
    slots: HashMap<u32, usize>,
    /// Per header file: its file-end record was seen.
    ended: Vec<bool>,
    offset: u64,
    piece_crc: u32,
    chunks: u64,
    raw_bytes: u64,
    state: ReadState,
    index: Option<PieceIndex>,
    decoder: Decoder,
    /// Stored (compressed) payload.
    sbuf: Vec<u8>,
    /// Raw data for `next_ref`.
    rbuf: Vec<u8>,
}

/// Reads exactly `buf.len()` bytes; EOF gives `Truncated` at the offset
/// where the data ran out.
fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8], start_offset: u64) -> Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(FormatError::Truncated {
                    piece_offset: start_offset + got as u64,
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Reads the fixed part of the piece header. A short input whose bytes do
/// not start like a piece is reported as `BadMagic`, not as truncated.
fn read_header_fixed<R: Read + ?Sized>(r: &mut R) -> Result<[u8; HEADER_FIXED_LEN]> {
    let mut fixed = [0u8; HEADER_FIXED_LEN];
    match read_full(r, &mut fixed, 0) {
        Ok(()) => Ok(fixed),
        Err(FormatError::Truncated { piece_offset }) => {
            let n = (piece_offset as usize).min(PIECE_MAGIC.len());
            if fixed[..n] != PIECE_MAGIC[..n] {
                Err(FormatError::BadMagic {
                    what: "piece header",
                    piece_offset: 0,
                })
            } else {
                Err(FormatError::Truncated { piece_offset })
            }
        }
        Err(e) => Err(e),
    }
}

/// Reads `len` bytes into a new vector that grows as data arrives (a
/// corrupt length cannot make it allocate more than the data present).
fn read_vec<R: Read + ?Sized>(r: &mut R, len: u64, start_offset: u64) -> Result<Vec<u8>> {
    let mut v = Vec::with_capacity(len.min(1 << 20) as usize);
    let n = r.take(len).read_to_end(&mut v)?;
    if (n as u64) < len {
        return Err(FormatError::Truncated {
            piece_offset: start_offset + n as u64,
        });
    }
    Ok(v)
}

/// What `next_ref` found, before the borrow of the reader's buffer.
enum Next {
    Chunk {
        file_index: u32,
        file_offset: u64,
        raw_len: usize,
    },
    FileEnd {
        file_index: u32,
        size: u64,
        crc32c: u32,
    },
    End,
}

impl<R: Read> PieceReader<R> {
    /// Reads and checks the piece header.
    pub fn open(mut r: R) -> Result<Self> {
        let fixed = read_header_fixed(&mut r)?;
        let json_len = parse_header_fixed(&fixed)?;
        let json = read_vec(&mut r, json_len as u64, HEADER_FIXED_LEN as u64)?;
        let header = parse_header_json(&fixed, &json)?;
        let slots = check_unique_files(&header)?;
        let piece_crc = crc32c_append(crc32c(&fixed), &json);
        Ok(PieceReader {
            r,
            header,
            ended: vec![false; slots.len()],
            slots,
            offset: (HEADER_FIXED_LEN + json.len()) as u64,
            piece_crc,
            chunks: 0,
            raw_bytes: 0,
            state: ReadState::Records,
            index: None,
            decoder: Decoder::new(),
            sbuf: Vec::new(),
            rbuf: Vec::new(),
        })
    }

    pub fn header(&self) -> &PieceHeader {
        &self.header
    }

    /// Offset of the next byte to read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The index, once `next` has returned `None`.
    pub fn index(&self) -> Option<&PieceIndex> {
        self.index.as_ref()
    }

    fn read_exact_tracked(&mut self, buf: &mut [u8]) -> Result<()> {
        read_full(&mut self.r, buf, self.offset)?;
        self.offset += buf.len() as u64;
        Ok(())
    }

    /// Reads the next record; the chunk data (if any) is left in `rbuf`
    /// (`into_vec == None`) or in the given vector.
    fn advance(&mut self, mut into_vec: Option<&mut Vec<u8>>) -> Result<Next> {
        if let ReadState::AtIndex { .. } = self.state {
            return Ok(Next::End);
        }
        let rec_offset = self.offset;
        let mut hdr = [0u8; RECORD_HEADER_LEN];
        self.read_exact_tracked(&mut hdr)?;
        let magic: [u8; 4] = hdr[..4].try_into().unwrap();
        match magic {
            CHUNK_MAGIC => {
                let h = parse_chunk_header(&hdr, rec_offset)?;
                match self.slots.get(&h.file_index) {
                    None => {
                        return Err(FormatError::BadRecord {
                            piece_offset: rec_offset,
                            reason: format!(
                                "chunk of file index {} not listed in the header",
                                h.file_index
                            ),
                        });
                    }
                    Some(&slot) if self.ended[slot] => {
                        return Err(FormatError::BadRecord {
                            piece_offset: rec_offset,
                            reason: format!(
                                "chunk of file index {} after its file-end record",
                                h.file_index
                            ),
                        });
                    }
                    Some(_) => {}
                }
                let chunk_no = self.chunks;
                let stored_len = h.stored_len as usize;
                let raw_len = h.raw_len as usize;
                let payload_offset = self.offset;
                // Read the stored payload: straight into the output when raw.
                let raw_direct = h.codec == CODEC_NONE;
                let payload: &mut [u8] = if raw_direct {
                    let out = match into_vec.as_deref_mut() {
                        Some(v) => v,
                        None => &mut self.rbuf,
                    };
                    // No zeroing of reused bytes: they are all overwritten.
                    out.resize(raw_len, 0);
                    read_full(&mut self.r, out, payload_offset)?;
                    out
                } else {
                    self.sbuf.resize(stored_len, 0);
                    read_full(&mut self.r, &mut self.sbuf, payload_offset)?;
                    &mut self.sbuf
                };
                self.offset += stored_len as u64;
                let payload_crc = crc32c(payload);
                if record_crc(&hdr, payload_crc, stored_len) != h.crc {
                    return Err(FormatError::ChunkChecksum {
                        chunk_no,
                        piece_offset: rec_offset,
                    });
                }
                self.piece_crc = crc32c_combine(
                    crc32c_append(self.piece_crc, &hdr),
                    payload_crc,
                    stored_len as u64,
                );
                if !raw_direct {
                    let out = match into_vec {
                        Some(v) => v,
                        None => &mut self.rbuf,
                    };
                    // No zeroing of reused bytes: they are all overwritten.
                    out.resize(raw_len, 0);
                    self.decoder
                        .decode(h.codec, &self.sbuf, out, chunk_no, rec_offset)?;
                }
                self.chunks += 1;
                self.raw_bytes += raw_len as u64;
                Ok(Next::Chunk {
                    file_index: h.file_index,
                    file_offset: h.file_offset,
                    raw_len,
                })
            }
            FILE_END_MAGIC => {
                if crc32c(&hdr[..28]) != get_u32(&hdr, 28) {
                    return Err(FormatError::RecordChecksum {
                        piece_offset: rec_offset,
                    });
                }
                let file_index = get_u32(&hdr, 8);
                let Some(&slot) = self.slots.get(&file_index) else {
                    return Err(FormatError::BadRecord {
                        piece_offset: rec_offset,
                        reason: format!(
                            "file end of file index {file_index} not listed in the header"
                        ),
                    });
                };
                if self.ended[slot] {
                    return Err(FormatError::BadRecord {
                        piece_offset: rec_offset,
                        reason: format!("second file-end record of file index {file_index}"),
                    });
                }
                self.ended[slot] = true;
                self.piece_crc = crc32c_append(self.piece_crc, &hdr);
                Ok(Next::FileEnd {
                    file_index,
                    size: get_u64(&hdr, 16),
                    crc32c: get_u32(&hdr, 12),
                })
            }
            INDEX_MAGIC => {
                let body_len = get_u64(&hdr, 16);
                let body = read_vec(&mut self.r, body_len, self.offset)?;
                self.offset += body_len;
                if crc32c_append(crc32c(&hdr[..28]), &body) != get_u32(&hdr, 28) {
                    return Err(FormatError::IndexChecksum {
                        piece_offset: rec_offset,
                    });
                }
                let index = parse_index(&self.header, &hdr, &body, rec_offset)?;
                if get_u64(&hdr, 8) != self.chunks {
                    return Err(FormatError::BadIndex {
                        piece_offset: rec_offset,
                        reason: format!(
                            "index lists {} chunks, the piece holds {}",
                            get_u64(&hdr, 8),
                            self.chunks
                        ),
                    });
                }
                self.piece_crc = crc32c_append(crc32c_append(self.piece_crc, &hdr), &body);
                self.index = Some(index);
                self.state = ReadState::AtIndex {
                    index_offset: rec_offset,
                    index_len: self.offset - rec_offset,
                };
                Ok(Next::End)
            }
            other => Err(FormatError::BadRecord {
                piece_offset: rec_offset,
                reason: format!("unknown record magic '{}'", magic_name(&other)),
            }),
        }
    }

    /// The next record, every chunk verified (CRC-32C) and decompressed;
    /// `None` once the index is reached.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Record>> {
        let mut data = Vec::new();
        Ok(match self.advance(Some(&mut data))? {
            Next::Chunk {
                file_index,
                file_offset,
                ..
            } => Some(Record::Chunk {
                file_index,
                file_offset,
                data,
            }),
            Next::FileEnd {
                file_index,
                size,
                crc32c,
            } => Some(Record::FileEnd {
                file_index,
                size,
                crc32c,
            }),
            Next::End => None,
        })
    }

    /// Like [`next`](Self::next), but the chunk data borrows a buffer the
    /// reader reuses (no allocation per chunk).
    pub fn next_ref(&mut self) -> Result<Option<RecordRef<'_>>> {
        Ok(match self.advance(None)? {
            Next::Chunk {
                file_index,
                file_offset,
                raw_len,
            } => Some(RecordRef::Chunk {
                file_index,
                file_offset,
                data: &self.rbuf[..raw_len],
            }),
            Next::FileEnd {
                file_index,
                size,
                crc32c,
            } => Some(RecordRef::FileEnd {
                file_index,
                size,
                crc32c,
            }),
            Next::End => None,
        })
    }

    /// Reads (and verifies) any records left, the index and the footer;
    /// checks the footer, the index CRC, the whole-piece CRC and that
    /// nothing follows the footer.
    pub fn finish(mut self) -> Result<PieceSummary> {
        while !matches!(self.advance(None)?, Next::End) {}
        let ReadState::AtIndex {
            index_offset,
            index_len,
        } = self.state
        else {
            unreachable!()
        };
        let footer_offset = self.offset;
        let mut f = [0u8; FOOTER_LEN];
        self.read_exact_tracked(&mut f)?;
        let footer = parse_footer(&f, footer_offset)?;
        if footer.index_offset != index_offset || footer.index_len != index_len {
            return Err(FormatError::BadFooter {
                piece_offset: footer_offset,
                reason: format!(
                    "points at an index at {} ({} bytes), the index is at {index_offset} ({index_len} bytes)",
                    footer.index_offset, footer.index_len
                ),
            });
        }
        if footer.piece_crc != self.piece_crc {
            return Err(FormatError::PieceChecksum {
                stored: footer.piece_crc,
                computed: self.piece_crc,
            });
        }
        let mut probe = [0u8; 1];
        loop {
            match self.r.read(&mut probe) {
                Ok(0) => break,
                Ok(_) => {
                    return Err(FormatError::TrailingData {
                        piece_offset: self.offset,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(PieceSummary {
            size: self.offset,
            crc32c: self.piece_crc,
            chunks: self.chunks,
            raw_bytes: self.raw_bytes,
        })
    }
}

// ---------------------------------------------------------------------------
// Random access
// ---------------------------------------------------------------------------

/// Reads the header, the footer and the index of a seekable piece (not the
/// records between them). Checks the header, footer and index CRCs; the
/// whole-piece CRC needs a full read ([`PieceReader`]).
pub fn read_index<R: Read + Seek>(r: &mut R) -> Result<(PieceHeader, PieceIndex)> {
    let len = r.seek(SeekFrom::End(0))?;
    r.seek(SeekFrom::Start(0))?;
    let fixed = read_header_fixed(r)?;
    let json_len = parse_header_fixed(&fixed)?;
    let json = read_vec(r, json_len as u64, HEADER_FIXED_LEN as u64)?;
    let header = parse_header_json(&fixed, &json)?;
    let header_end = (HEADER_FIXED_LEN + json.len()) as u64;

    if len < header_end + (RECORD_HEADER_LEN + FOOTER_LEN) as u64 {
        return Err(FormatError::Truncated { piece_offset: len });
    }
    let footer_offset = len - FOOTER_LEN as u64;
    r.seek(SeekFrom::Start(footer_offset))?;
    let mut f = [0u8; FOOTER_LEN];
    read_full(r, &mut f, footer_offset)?;
    let footer = match parse_footer(&f, footer_offset) {
        Ok(footer) => footer,
        // No footer magic at the end: most likely a piece cut short.
        Err(FormatError::BadMagic { .. }) => {
            return Err(FormatError::Truncated { piece_offset: len });
        }
        Err(e) => return Err(e),
    };
    if footer.index_offset < header_end
        || footer.index_len < RECORD_HEADER_LEN as u64
        || footer.index_offset.checked_add(footer.index_len) != Some(footer_offset)
    {
        return Err(FormatError::BadFooter {
            piece_offset: footer_offset,
            reason: format!(
                "index at {} ({} bytes) does not end where the footer starts",
                footer.index_offset, footer.index_len
            ),
        });
    }
    r.seek(SeekFrom::Start(footer.index_offset))?;
    let mut hdr = [0u8; RECORD_HEADER_LEN];
    read_full(r, &mut hdr, footer.index_offset)?;
    if hdr[..4] != INDEX_MAGIC {
        return Err(FormatError::BadMagic {
            what: "index",
            piece_offset: footer.index_offset,
        });
    }
    let body_len = get_u64(&hdr, 16);
    if body_len != footer.index_len - RECORD_HEADER_LEN as u64 {
        return Err(FormatError::BadIndex {
            piece_offset: footer.index_offset,
            reason: format!("body length {body_len} disagrees with the footer"),
        });
    }
    let body = read_vec(r, body_len, footer.index_offset + RECORD_HEADER_LEN as u64)?;
    if crc32c_append(crc32c(&hdr[..28]), &body) != get_u32(&hdr, 28) {
        return Err(FormatError::IndexChecksum {
            piece_offset: footer.index_offset,
        });
    }
    let index = parse_index(&header, &hdr, &body, footer.index_offset)?;
    Ok((header, index))
}

/// Reads, verifies and decompresses the chunk at `loc` (from
/// [`read_index`]).
pub fn read_chunk_at<R: Read + Seek>(r: &mut R, loc: &ChunkLoc) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    read_chunk_at_into(r, loc, &mut out)?;
    Ok(out)
}

/// Like [`read_chunk_at`], reusing `out` (cleared, then filled with the raw
/// bytes).
pub fn read_chunk_at_into<R: Read + Seek>(
    r: &mut R,
    loc: &ChunkLoc,
    out: &mut Vec<u8>,
) -> Result<()> {
    read_chunk_impl(r, loc, out, &mut Vec::new(), &mut Decoder::new())
}

fn read_chunk_impl<R: Read + Seek>(
    r: &mut R,
    loc: &ChunkLoc,
    out: &mut Vec<u8>,
    sbuf: &mut Vec<u8>,
    decoder: &mut Decoder,
) -> Result<()> {
    r.seek(SeekFrom::Start(loc.piece_offset))?;
    let mut hdr = [0u8; RECORD_HEADER_LEN];
    read_full(r, &mut hdr, loc.piece_offset)?;
    if hdr[..4] != CHUNK_MAGIC {
        return Err(FormatError::BadMagic {
            what: "chunk",
            piece_offset: loc.piece_offset,
        });
    }
    let h = parse_chunk_header(&hdr, loc.piece_offset)?;
    if h.file_offset != loc.file_offset
        || h.raw_len != loc.raw_len
        || h.stored_len != loc.stored_len
    {
        return Err(FormatError::BadRecord {
            piece_offset: loc.piece_offset,
            reason: format!(
                "chunk (file offset {}, {} bytes) is not the one the index names (file offset {}, {} bytes)",
                h.file_offset, h.raw_len, loc.file_offset, loc.raw_len
            ),
        });
    }
    let payload_offset = loc.piece_offset + RECORD_HEADER_LEN as u64;
    let raw = h.codec == CODEC_NONE;
    let payload: &mut Vec<u8> = if raw { &mut *out } else { &mut *sbuf };
    // No zeroing of reused bytes: they are all overwritten.
    payload.resize(h.stored_len as usize, 0);
    read_full(r, payload, payload_offset)?;
    if record_crc(&hdr, crc32c(payload), payload.len()) != h.crc {
        return Err(FormatError::ChunkChecksum {
            chunk_no: loc.chunk_no,
            piece_offset: loc.piece_offset,
        });
    }
    if !raw {
        // No zeroing of reused bytes: they are all overwritten.
        out.resize(h.raw_len as usize, 0);
        decoder.decode(h.codec, sbuf, out, loc.chunk_no, loc.piece_offset)?;
    }
    Ok(())
}

/// A seekable piece opened for random access: the header and index are read
/// once, and chunk reads reuse the decompression context and buffers.
pub struct IndexedPiece<R: Read + Seek> {
    r: R,
    header: PieceHeader,
    index: PieceIndex,
    decoder: Decoder,
    sbuf: Vec<u8>,
}

impl<R: Read + Seek> IndexedPiece<R> {
    /// Reads the header, footer and index ([`read_index`]).
    pub fn open(mut r: R) -> Result<Self> {
        let (header, index) = read_index(&mut r)?;
        Ok(IndexedPiece {
            r,
            header,
            index,
            decoder: Decoder::new(),
            sbuf: Vec::new(),
        })
    }

    pub fn header(&self) -> &PieceHeader {
        &self.header
    }

    pub fn index(&self) -> &PieceIndex {
        &self.index
    }

    /// Reads, verifies and decompresses the chunk at `loc` into `out`
    /// (cleared first).
    pub fn read_chunk_into(&mut self, loc: &ChunkLoc, out: &mut Vec<u8>) -> Result<()> {
        read_chunk_impl(&mut self.r, loc, out, &mut self.sbuf, &mut self.decoder)
    }

    /// Reads, verifies and decompresses the chunk at `loc`.
    pub fn read_chunk(&mut self, loc: &ChunkLoc) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_chunk_into(loc, &mut out)?;
        Ok(out)
    }

    pub fn into_inner(self) -> R {
        self.r
    }
}
