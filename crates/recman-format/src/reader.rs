//! The streaming piece reader: verifies every record before handing it out.

use crate::codec::*;
use crate::crc::{crc32c, crc32c_append, crc32c_combine};
use crate::error::{FormatError, Result};
use crate::layout::*;
use crate::types::*;
use std::collections::HashMap;
use std::io::{self, Read};

pub(crate) enum ReadState {
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
    /// The file index the last chunk record claimed, listed in the header.
    chunk_file: Option<u32>,
}

/// Reads exactly `buf.len()` bytes; EOF gives `Truncated` at the offset
/// where the data ran out.
pub(crate) fn read_full<R: Read + ?Sized>(
    r: &mut R,
    buf: &mut [u8],
    start_offset: u64,
) -> Result<()> {
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
pub(crate) fn read_header_fixed<R: Read + ?Sized>(r: &mut R) -> Result<[u8; HEADER_FIXED_LEN]> {
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
pub(crate) fn read_vec<R: Read + ?Sized>(
    r: &mut R,
    len: u64,
    start_offset: u64,
) -> Result<Vec<u8>> {
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
pub(crate) enum Next {
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
            chunk_file: None,
        })
    }

    pub fn header(&self) -> &PieceHeader {
        &self.header
    }

    /// Offset of the next byte to read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The file index named by the last chunk record whose header was read (a header file),
    /// even when that chunk then failed its check: lets a caller say which file a damaged
    /// chunk belongs to. The index comes from the damaged record, so it is a claim, not a fact.
    pub fn last_chunk_file(&self) -> Option<u32> {
        self.chunk_file
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
    fn advance(&mut self, into_vec: Option<&mut Vec<u8>>) -> Result<Next> {
        if let ReadState::AtIndex { .. } = self.state {
            return Ok(Next::End);
        }
        let rec_offset = self.offset;
        let mut hdr = [0u8; RECORD_HEADER_LEN];
        self.read_exact_tracked(&mut hdr)?;
        let magic: [u8; 4] = hdr[..4].try_into().unwrap();
        match magic {
            CHUNK_MAGIC => self.chunk(hdr, rec_offset, into_vec),
            FILE_END_MAGIC => self.file_end(hdr, rec_offset),
            INDEX_MAGIC => self.index_record(hdr, rec_offset),
            other => Err(FormatError::BadRecord {
                piece_offset: rec_offset,
                reason: format!("unknown record magic '{}'", magic_name(&other)),
            }),
        }
    }

    /// A chunk record whose header is `hdr`: its payload read and checked, then decompressed
    /// into `into_vec` or `rbuf`.
    fn chunk(
        &mut self,
        hdr: [u8; RECORD_HEADER_LEN],
        rec_offset: u64,
        mut into_vec: Option<&mut Vec<u8>>,
    ) -> Result<Next> {
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
        self.chunk_file = Some(h.file_index);
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

    /// A file-end record: the file's size and CRC-32C, once per file.
    fn file_end(&mut self, hdr: [u8; RECORD_HEADER_LEN], rec_offset: u64) -> Result<Next> {
        if crc32c(&hdr[..28]) != get_u32(&hdr, 28) {
            return Err(FormatError::RecordChecksum {
                piece_offset: rec_offset,
            });
        }
        let file_index = get_u32(&hdr, 8);
        let Some(&slot) = self.slots.get(&file_index) else {
            return Err(FormatError::BadRecord {
                piece_offset: rec_offset,
                reason: format!("file end of file index {file_index} not listed in the header"),
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

    /// The index record: its body read, checked against what was read, and kept.
    fn index_record(&mut self, hdr: [u8; RECORD_HEADER_LEN], rec_offset: u64) -> Result<Next> {
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
