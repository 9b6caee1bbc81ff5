//! Random access through the index: one file of a piece without reading the rest.

use crate::codec::*;
use crate::crc::{crc32c, crc32c_append};
use crate::error::{FormatError, Result};
use crate::layout::*;
use crate::reader::{read_full, read_header_fixed, read_vec};
use crate::types::*;
use std::io::{Read, Seek, SeekFrom};

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

pub(crate) fn read_chunk_impl<R: Read + Seek>(
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
