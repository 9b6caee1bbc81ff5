//! A partial restore (`--include-db`, `recover table`, block recovery) reads from a piece only
//! the chunks of the files it restores, through the index every piece ends with: a set of
//! FILESPERSET 64 holding one small table's files among 63 others is otherwise read whole.
//!
//! What is read is checked as a whole read checks it: the header, footer and index by their
//! checksums, each chunk by its record checksum and its place in the index, and each file
//! that ends in the piece by the CRC-32C of its chunks against the index and against what the
//! manifest recorded. Only the whole piece's checksum is left out: it needs every byte.

use super::sink::{Pass, RestoreSink};
use crate::error::EngineError;
use crate::io::{IoCounters, TimedReader};
use crate::pieces::Source;
use crate::pipeline::stages::FileRef;
use crate::pipeline::{Expect, Sink, Wording};
use crate::util::now_micros;
use recman_catalog::IoStatRow;
use recman_format::manifest::ManifestPiece;
use recman_format::{IndexedFile, read_chunk_at_into, read_index};

/// A piece read through its index.
pub(super) struct ReadByIndex {
    /// Files of the restore that ended in the piece.
    pub ended: u64,
    pub input: IoCounters,
    pub row: IoStatRow,
}

/// Reads from piece `p` only what `pass` restores, when that is at most half of the piece;
/// None when more is wanted (a whole read is then as cheap). Tries each of `sources` in turn,
/// as a whole read does.
pub(super) fn restore_by_index(
    sources: &[Source],
    p: &ManifestPiece,
    pass: &Pass,
    sink: &mut RestoreSink,
    channel: u32,
) -> Result<Option<ReadByIndex>, EngineError> {
    let mut last = None;
    for s in sources {
        let r = s
            .media
            .open(&s.name)
            .map_err(EngineError::from)
            .and_then(|f| read_piece(f, p, pass, sink, channel));
        match r {
            Ok(done) => return Ok(done),
            Err(e @ EngineError::Stopped { .. }) => return Err(e),
            Err(e) => {
                pass.progress.notice(&format!(
                    "backup piece {} on {} cannot be used: {e}",
                    p.path,
                    s.describe()
                ));
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        EngineError::NotFound(format!(
            "backup piece {} has no copy to restore from; hint: run `recman crosscheck` and restore from another backup",
            p.path
        ))
    }))
}

fn read_piece(
    f: Box<dyn recman_media::MediaReader>,
    p: &ManifestPiece,
    pass: &Pass,
    sink: &mut RestoreSink,
    channel: u32,
) -> Result<Option<ReadByIndex>, EngineError> {
    let opened = now_micros();
    let (mut r, counters) = TimedReader::new(f);
    let (header, index) = read_index(&mut r).map_err(|e| EngineError::piece(&p.path, e))?;
    let wanted: Vec<&IndexedFile> = index.files.iter().filter(|f| pass.keeps(&f.path)).collect();
    let stored: u64 = wanted
        .iter()
        .flat_map(|f| f.chunks.iter())
        .map(|c| c.stored_len as u64 + 32)
        .sum();
    if stored * 2 > p.size {
        return Ok(None);
    }
    sink.begin(&header)?;
    let mut ended = 0;
    let mut buf = Vec::new();
    for f in wanted {
        crate::stop::check()?;
        let file = FileRef {
            slot: f.index,
            name: &f.path,
        };
        let mut crc = 0;
        for c in &f.chunks {
            read_chunk_at_into(&mut r, c, &mut buf).map_err(|e| EngineError::PieceFile {
                piece: p.path.clone(),
                file: f.path.clone(),
                source: e,
            })?;
            crc = crc32c::crc32c_append(crc, &buf);
            sink.chunk(&file, c.file_offset, &buf)?;
        }
        if let (Some(size), Some(want)) = (f.size, f.crc32c) {
            if crc != want || !pass.own.file_matches(&f.path, header.piece_no, size, crc) {
                return Err(Wording::RESTORE.damage(
                    format!(
                        "file {} in backup piece {} does not match its recorded checksum",
                        f.path, p.path
                    ),
                    "",
                ));
            }
            sink.file_end(&file, size, crc)?;
            ended += 1;
        }
    }
    let input = counters.lock().expect("counters lock").clone();
    let mut row = crate::pipeline::stats::stat_row(
        "INPUT",
        channel,
        Some(p.path.clone()),
        &input,
        opened,
        now_micros(),
        (1 << 20, 1),
    );
    row.piece_no = Some(header.piece_no);
    Ok(Some(ReadByIndex { ended, input, row }))
}
