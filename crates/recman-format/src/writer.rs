//! The streaming piece writer: never seeks, so tape and object storage can take its output.

use crate::codec::*;
use crate::crc::{crc32c, crc32c_append, crc32c_combine};
use crate::error::{FormatError, Result};
use crate::layout::*;
use crate::types::*;
use std::collections::HashMap;
use std::io::Write;

pub(crate) struct WriterFile {
    pub(crate) index: u32,
    pub(crate) end: Option<(u64, u32)>,
    pub(crate) chunks: Vec<ChunkLoc>,
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
    /// Record header + compressed payload; grows to what the largest chunk compressed so far
    /// needs. Zeroing it for the largest possible chunk up front cost a small piece (a WAL
    /// segment's summary) more than writing it.
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
            cbuf: Vec::new(),
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
        let room = match self.compression {
            Compression::Lz4 => lz4_flex::block::get_maximum_output_size(data.len()),
            _ => data.len(),
        };
        if self.cbuf.len() < RECORD_HEADER_LEN + room {
            self.cbuf.resize(RECORD_HEADER_LEN + room, 0);
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
        self.write_chunk_inner(file_index, file_offset, data, None)
    }

    /// As [`PieceWriter::write_chunk`], with the caller's CRC-32C of `data`, which the caller
    /// computes anyway for the file's checksum; a chunk stored uncompressed reuses it instead
    /// of reading the bytes a second time. A wrong `data_crc` makes the chunk fail its check
    /// when read, never go unnoticed.
    pub fn write_chunk_with_crc(
        &mut self,
        file_index: u32,
        file_offset: u64,
        data: &[u8],
        data_crc: u32,
    ) -> Result<()> {
        self.write_chunk_inner(file_index, file_offset, data, Some(data_crc))
    }

    fn write_chunk_inner(
        &mut self,
        file_index: u32,
        file_offset: u64,
        data: &[u8],
        data_crc: Option<u32>,
    ) -> Result<()> {
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
        let payload_crc = match (compressed, data_crc) {
            (None, Some(c)) => c,
            _ => crc32c(payload),
        };
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
