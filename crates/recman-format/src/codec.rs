//! Byte-level encoding shared by the writer, the streaming reader and random access.

use crate::crc::{crc32c, crc32c_append, crc32c_combine};
use crate::error::{FormatError, Result};
use crate::layout::*;
use crate::types::*;
use std::collections::HashMap;

#[inline]
pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(b[off..off + 2].try_into().unwrap())
}
#[inline]
pub(crate) fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
#[inline]
pub(crate) fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// CRC of a record: CRC-32C of header bytes 0..28 followed by the payload,
/// computed from the payload's own CRC.
#[inline]
pub(crate) fn record_crc(
    hdr: &[u8; RECORD_HEADER_LEN],
    payload_crc: u32,
    payload_len: usize,
) -> u32 {
    crc32c_combine(crc32c(&hdr[..28]), payload_crc, payload_len as u64)
}

pub(crate) fn encode_header(header: &PieceHeader) -> Result<Vec<u8>> {
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

pub(crate) fn check_version(major: u16, minor: u16, piece_offset: u64) -> Result<()> {
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
pub(crate) fn parse_header_fixed(fixed: &[u8; HEADER_FIXED_LEN]) -> Result<u32> {
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

pub(crate) fn parse_header_json(
    fixed: &[u8; HEADER_FIXED_LEN],
    json: &[u8],
) -> Result<PieceHeader> {
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
pub(crate) fn check_unique_files(header: &PieceHeader) -> Result<HashMap<u32, usize>> {
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

/// Decoder state shared by the streaming reader and random access.
pub(crate) struct Decoder {
    pub(crate) zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Decoder { zstd: None }
    }

    /// Decompresses `stored` into `out` (exactly the raw length).
    pub(crate) fn decode(
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
pub(crate) struct ChunkHeader {
    pub(crate) codec: u8,
    pub(crate) file_index: u32,
    pub(crate) raw_len: u32,
    pub(crate) file_offset: u64,
    pub(crate) stored_len: u32,
    pub(crate) crc: u32,
}

pub(crate) fn parse_chunk_header(
    hdr: &[u8; RECORD_HEADER_LEN],
    piece_offset: u64,
) -> Result<ChunkHeader> {
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

pub(crate) fn magic_name(m: &[u8]) -> String {
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
pub(crate) fn parse_index(
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
pub(crate) struct Footer {
    pub(crate) index_offset: u64,
    pub(crate) index_len: u64,
    pub(crate) piece_crc: u32,
}

pub(crate) fn parse_footer(f: &[u8; FOOTER_LEN], piece_offset: u64) -> Result<Footer> {
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
