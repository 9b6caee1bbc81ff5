//! The set writer: the one place a piece is written. It builds on [`PieceWriter`] (chunk
//! checksums and compression, the format's copy stage) and writes its bytes in BLKSIZE blocks
//! through an [`OutputStream`] (the write phase: a writer thread and a bounded set of output
//! buffers), then commits the object and reports what it wrote: the piece's size and
//! checksums for the catalog and manifest, and the OUTPUT statistics of its writes.
//!
//! Contract: `chunk` and `end_file` follow [`PieceWriter`]'s rules; after an error the piece
//! is incomplete and is never committed (the media writer is dropped uncommitted, which
//! leaves no object behind).

use crate::error::EngineError;
use crate::io::{IoCounters, IoSettings, OutputStream};
use crate::util::now_micros;
use recman_catalog::{IoStatRow, PieceRecord};
use recman_format::manifest::ManifestPiece;
use recman_format::{PieceHeader, PieceWriter};
use recman_media::{Media, MediaWriter};

/// How pieces leave the writer: BLKSIZE and the number of output buffers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutputShape {
    pub blksize: usize,
    pub buffers: usize,
}

impl OutputShape {
    pub fn of(io: &IoSettings) -> OutputShape {
        OutputShape {
            blksize: io.blksize,
            buffers: io.output_buffers,
        }
    }
}

impl Default for OutputShape {
    /// The backup defaults, for writers that take no I/O settings (archive-push, BACKUP
    /// ARCHIVELOG, synthetic fulls).
    fn default() -> Self {
        OutputShape::of(&IoSettings::default())
    }
}

pub(crate) struct SetWriter {
    rel: String,
    location: String,
    shape: OutputShape,
    opened: i64,
    w: PieceWriter<OutputStream<Box<dyn MediaWriter>>>,
}

/// A committed piece.
#[derive(Clone, Debug)]
pub(crate) struct WrittenPiece {
    pub rel: String,
    pub size: u64,
    pub crc32c: u32,
    /// Bytes of file data before compression.
    pub raw_bytes: u64,
    /// The writes: one per BLKSIZE block, with its waits for a free output buffer.
    pub output: IoCounters,
    pub opened: i64,
    pub closed: i64,
    shape: OutputShape,
}

impl SetWriter {
    /// Creates object `rel` on `media` and writes the piece header; `location` names the
    /// repository in messages.
    pub fn create(
        media: &dyn Media,
        location: &str,
        rel: &str,
        header: &PieceHeader,
        shape: OutputShape,
    ) -> Result<SetWriter, EngineError> {
        let opened = now_micros();
        let sink = media.create(rel)?;
        let out = OutputStream::new(sink, shape.blksize, shape.buffers);
        let w = PieceWriter::new(out, header).map_err(|e| write_err(location, rel, e))?;
        Ok(SetWriter {
            rel: rel.to_string(),
            location: location.to_string(),
            shape,
            opened,
            w,
        })
    }

    /// Appends a chunk of file `slot` at `offset` (at most [`recman_format::MAX_CHUNK`] bytes).
    pub fn chunk(&mut self, slot: u32, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        self.w
            .write_chunk(slot, offset, data)
            .map_err(|e| write_err(&self.location, &self.rel, e))
    }

    /// As [`SetWriter::chunk`] with the caller's CRC-32C of `data` (see
    /// [`PieceWriter::write_chunk_with_crc`]).
    pub fn chunk_with_crc(
        &mut self,
        slot: u32,
        offset: u64,
        data: &[u8],
        crc: u32,
    ) -> Result<(), EngineError> {
        self.w
            .write_chunk_with_crc(slot, offset, data, crc)
            .map_err(|e| write_err(&self.location, &self.rel, e))
    }

    /// Writes all of `data` as file `slot`, in chunks of `chunk` bytes, and ends the file;
    /// returns its CRC-32C.
    pub fn whole_file(&mut self, slot: u32, data: &[u8], chunk: usize) -> Result<u32, EngineError> {
        let mut crc = 0u32;
        for (i, part) in data.chunks(chunk).enumerate() {
            let c = crc32c::crc32c(part);
            crc = recman_format::crc32c_combine(crc, c, part.len() as u64);
            self.chunk_with_crc(slot, (i * chunk) as u64, part, c)?;
        }
        self.end_file(slot, data.len() as u64, crc)?;
        Ok(crc)
    }

    /// Bytes of the piece written so far (headers and compressed records).
    pub fn bytes_written(&self) -> u64 {
        self.w.bytes_written()
    }

    /// Marks file `slot` complete with its final size and whole-content CRC-32C.
    pub fn end_file(&mut self, slot: u32, size: u64, crc: u32) -> Result<(), EngineError> {
        self.w
            .end_file(slot, size, crc)
            .map_err(|e| write_err(&self.location, &self.rel, e))
    }

    /// Writes the index and footer, waits for the last block and commits the object durably.
    pub fn finish(self) -> Result<WrittenPiece, EngineError> {
        // The channel waits here for the last blocks and the commit (fsync, an upload's
        // completion): time lost to the media like any other long wait for a buffer.
        let staged = self.finish_writes()?;
        let commit = std::time::Instant::now();
        let mut piece = staged.commit()?;
        piece.output.record_final_wait(commit.elapsed());
        Ok(piece)
    }

    /// Writes the index and footer and waits for the last block; the commit is left to the
    /// caller, who may read the next set meanwhile (see [`Uncommitted`]). The wait for the
    /// last blocks counts as an output wait.
    pub fn finish_writes(self) -> Result<Uncommitted, EngineError> {
        let rel = self.rel;
        let (out, summary) = self
            .w
            .finish()
            .map_err(|e| write_err(&self.location, &rel, e))?;
        let drain = std::time::Instant::now();
        let (sink, mut counters) = out
            .finish()
            .map_err(|e| recman_media::MediaError::io(&self.location, &rel, "write", e))?;
        counters.record_final_wait(drain.elapsed());
        Ok(Uncommitted {
            sink,
            piece: WrittenPiece {
                rel,
                size: summary.size,
                crc32c: summary.crc32c,
                raw_bytes: summary.raw_bytes,
                output: counters,
                opened: self.opened,
                closed: 0,
                shape: self.shape,
            },
        })
    }
}

/// A piece whose bytes are all written and whose commit (fsync and rename on disk, an upload's
/// completion on S3) is still to come: until [`Uncommitted::commit`] returns, the object is not
/// visible, and dropping this leaves nothing behind.
pub(crate) struct Uncommitted {
    sink: Box<dyn MediaWriter>,
    piece: WrittenPiece,
}

impl Uncommitted {
    /// The piece as it will be committed (its `closed` is set by the commit).
    pub fn piece(&self) -> &WrittenPiece {
        &self.piece
    }

    /// Commits the object durably.
    pub fn commit(self) -> Result<WrittenPiece, EngineError> {
        self.sink.commit()?;
        Ok(WrittenPiece {
            closed: now_micros(),
            ..self.piece
        })
    }
}

/// A piece writer's error as the command reports it: a full device or quota names the piece's
/// place on the device (never "damaged": nothing stored was touched), anything else stays a
/// piece error.
fn write_err(location: &str, rel: &str, e: recman_format::FormatError) -> EngineError {
    match EngineError::piece(rel, e) {
        EngineError::NoSpace { needed, source, .. } => EngineError::NoSpace {
            path: if location.is_empty() {
                rel.to_string()
            } else {
                format!("{}/{rel}", location.trim_end_matches('/'))
            },
            needed,
            source,
        },
        other => other,
    }
}

/// The write phase alone, for objects copied byte for byte (second-tier copies of pieces):
/// BLKSIZE blocks through the writer thread, then commit or abort.
pub(crate) struct ObjectWriter {
    rel: String,
    location: String,
    out: OutputStream<Box<dyn MediaWriter>>,
}

impl ObjectWriter {
    pub fn create(
        media: &dyn Media,
        location: &str,
        rel: &str,
        shape: OutputShape,
    ) -> Result<ObjectWriter, EngineError> {
        let sink = media.create(rel)?;
        Ok(ObjectWriter {
            rel: rel.to_string(),
            location: location.to_string(),
            out: OutputStream::new(sink, shape.blksize, shape.buffers),
        })
    }

    pub fn write(&mut self, data: &[u8]) -> Result<(), EngineError> {
        use std::io::Write;
        self.out.write_all(data).map_err(|e| self.io_error(e))
    }

    fn io_error(&self, e: std::io::Error) -> EngineError {
        recman_media::MediaError::io(&self.location, &self.rel, "write", e).into()
    }

    /// Waits for the last block and commits the object; returns the writes' statistics.
    pub fn commit(self) -> Result<IoCounters, EngineError> {
        let (sink, counters) = self.out.finish().map_err(|e| {
            EngineError::from(recman_media::MediaError::io(
                &self.location,
                &self.rel,
                "write",
                e,
            ))
        })?;
        sink.commit()?;
        Ok(counters)
    }

    /// Drops what was written: the object is not created.
    pub fn abort(self) {
        if let Ok((sink, _)) = self.out.finish() {
            sink.abort();
        }
    }
}

impl WrittenPiece {
    /// The catalog's record of this piece.
    pub fn record(
        &self,
        backup_id: &str,
        set_no: u32,
        piece_no: u32,
        channel: u32,
        file_count: u32,
    ) -> PieceRecord {
        PieceRecord {
            backup_id: backup_id.to_string(),
            set_no,
            piece_no,
            channel,
            path: self.rel.clone(),
            size: self.size,
            crc32c: self.crc32c,
            file_count,
            raw_bytes: self.raw_bytes,
        }
    }

    /// The manifest's record of this piece (written to the repository's own media).
    pub fn manifest(&self, piece_no: u32) -> ManifestPiece {
        ManifestPiece {
            piece_no,
            path: self.rel.clone(),
            size: self.size,
            crc32c: self.crc32c,
            device: None,
        }
    }

    /// The OUTPUT statistics row of the piece's writes.
    pub fn output_row(&self, channel: u32, set_no: u32, piece_no: u32) -> IoStatRow {
        let mut row = crate::pipeline::stats::stat_row(
            "OUTPUT",
            channel,
            Some(self.rel.clone()),
            &self.output,
            self.opened,
            self.closed,
            (self.shape.blksize as u64, self.shape.buffers as u64),
        );
        row.set_no = Some(set_no);
        row.piece_no = Some(piece_no);
        row
    }
}

/// Where a channel's set goes: a piece, or nowhere (BACKUP VALIDATE: the same reads and
/// checks, no write).
pub(crate) enum SetOut {
    Piece(Box<SetWriter>),
    Null,
}

impl SetOut {
    /// Bytes of the piece written so far; 0 when nothing is written.
    pub fn bytes_written(&self) -> u64 {
        match self {
            SetOut::Piece(w) => w.bytes_written(),
            SetOut::Null => 0,
        }
    }

    pub fn chunk(&mut self, slot: u32, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        match self {
            SetOut::Piece(w) => w.chunk(slot, offset, data),
            SetOut::Null => Ok(()),
        }
    }
    pub fn chunk_with_crc(
        &mut self,
        slot: u32,
        offset: u64,
        data: &[u8],
        crc: u32,
    ) -> Result<(), EngineError> {
        match self {
            SetOut::Piece(w) => w.chunk_with_crc(slot, offset, data, crc),
            SetOut::Null => Ok(()),
        }
    }
    pub fn end_file(&mut self, slot: u32, size: u64, crc: u32) -> Result<(), EngineError> {
        match self {
            SetOut::Piece(w) => w.end_file(slot, size, crc),
            SetOut::Null => Ok(()),
        }
    }
}
