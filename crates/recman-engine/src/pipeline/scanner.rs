//! The piece scanner: the one loop that reads pieces. It opens a piece from the first of its
//! copies that serves it, times every read (INPUT statistics), checks each chunk (the
//! format's record checksum), each file (the CRC-32C of its chunks against the piece's
//! file-end record and against what the manifest or catalog recorded) and the whole piece
//! (size and checksum), and hands what passed to a chain of [`Stage`]s and then a [`Sink`].
//!
//! What a sink receives has passed its chunk checksum; a file's end has passed its whole-file
//! checksum; but the piece as a whole is only known intact when the scan returns Ok. A sink
//! that must not act on a piece that turns out damaged (applying to an image copy) scans it
//! once with [`NullSink`] first.

use super::stages::Stage;
use crate::action::{Action, Hint};
use crate::error::{EngineError, ErrorKind};
use crate::io::{IoCounters, TimedReader};
use crate::pieces::Source;
use crate::pipeline::stages::FileRef;
use crate::progress::Progress;
use crate::util::now_micros;
use recman_catalog::IoStatRow;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry};
use recman_format::{FormatError, PieceHeader, PieceReader, PieceSummary, RecordRef};
use recman_media::MediaReader;
use std::collections::HashMap;
use std::io::BufReader;
use std::sync::{Arc, Mutex};

/// Bytes of one read from the media: sequential reads, large enough for disk and tape.
const READ_SIZE: usize = 1 << 20;

/// Where scanned data goes: the purpose of the scan (restore writes files, validation and
/// crosscheck only count, an image copy applies blocks).
///
/// Contract: `begin` comes first, and again before every retry of the same piece from
/// another copy (forget what the failed attempt gave, or make sure doing it again is
/// harmless); `chunk` gets data whose chunk checksum passed, in piece order, and must not
/// keep it past the call; `file_end` comes once per file, after the file's whole checksum
/// and the recorded one matched. An error from any of them ends the scan with that error.
pub(crate) trait Sink {
    fn begin(&mut self, _header: &PieceHeader) -> Result<(), EngineError> {
        Ok(())
    }
    fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError>;
    fn file_end(&mut self, file: &FileRef, size: u64, crc: u32) -> Result<(), EngineError>;
}

/// What a piece's files must be. The scanner asks at each file's end.
pub(crate) trait Expect: Sync {
    /// Whether file `name`, ended in piece `piece_no` with `size` bytes and checksum `crc`, is
    /// what was recorded. A file the record does not know passes.
    fn file_matches(&self, name: &str, piece_no: u32, size: u64, crc: u32) -> bool;
}

/// Accepts any file: for scans that compare with the catalog themselves (crosscheck, rebuild).
pub(crate) struct AnyFile;

impl Expect for AnyFile {
    fn file_matches(&self, _: &str, _: u32, _: u64, _: u32) -> bool {
        true
    }
}

/// The files of a backup as its manifest recorded them; a file in sections is checked
/// section by section.
pub(crate) struct ManifestFiles<'a> {
    entries: HashMap<&'a str, &'a ManifestEntry>,
}

impl<'a> ManifestFiles<'a> {
    pub fn new(m: &'a BackupManifest) -> ManifestFiles<'a> {
        ManifestFiles {
            entries: m
                .entries
                .iter()
                .filter(|e| e.kind == EntryKind::File)
                .map(|e| (e.path.as_str(), e))
                .collect(),
        }
    }
    pub fn get(&self, name: &str) -> Option<&'a ManifestEntry> {
        self.entries.get(name).copied()
    }
    pub fn values(&self) -> impl Iterator<Item = &'a ManifestEntry> + '_ {
        self.entries.values().copied()
    }
}

impl Expect for ManifestFiles<'_> {
    fn file_matches(&self, name: &str, piece_no: u32, size: u64, crc: u32) -> bool {
        let Some(e) = self.entries.get(name) else {
            return true;
        };
        match e.sections.iter().find(|s| s.piece_no == piece_no) {
            Some(sec) => sec.crc32c == crc && sec.offset + sec.len == size,
            None => e.crc32c == Some(crc) && e.size == Some(size),
        }
    }
}

/// What a command advises about damage the scanner found. The damage itself is always
/// [`EngineError::Corrupt`], whichever command reads the piece (see the error module's rules).
#[derive(Clone, Copy)]
pub(crate) struct Wording {
    pub hint: &'static str,
    /// The remedy that follows the hint, named by each front end its own way.
    pub then: Option<Action>,
}

impl Wording {
    pub const RESTORE: Wording = Wording {
        hint: "the piece is damaged, ",
        then: Some(Action::RestoreFromTag),
    };
    pub const VALIDATE: Wording = Wording {
        hint: "the backup is damaged, take a new one and keep this one out of restores",
        then: None,
    };
    pub const APPLY: Wording = Wording {
        hint: "the level 1 backup is damaged and the image copy was left as it was; take a new level 1 backup for the copy",
        then: None,
    };

    /// Damage the scanner found, with this command's advice after `before`.
    pub(crate) fn damage(&self, message: String, before: &'static str) -> EngineError {
        let mut hint = Hint::new().text(before).text(self.hint);
        if let Some(a) = self.then {
            hint = hint.act(a);
        }
        EngineError::remedy(ErrorKind::Corrupt, message, hint)
    }
}

/// Which failures make the scanner try the piece's next copy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failover {
    /// Only a copy that is not there (validation reports damage where it finds it).
    Missing,
    /// Any failure, read again whole from the next copy, saying so (restore: what the sink
    /// wrote was verified chunk by chunk, so writing it again is harmless).
    AnyError,
}

/// What to check a piece against, and how to label its statistics.
pub(crate) struct Scan<'a> {
    pub rel: &'a str,
    /// Size and checksum the manifest or catalog recorded for the whole piece.
    pub piece: Option<(u64, u32)>,
    pub files: &'a dyn Expect,
    pub wording: Wording,
    pub channel: u32,
    pub set_no: Option<u32>,
}

/// A scanned piece.
pub(crate) struct Scanned {
    /// Files whose end record was seen and checked.
    pub files: u64,
    pub summary: PieceSummary,
    /// The reads: count, bytes (the whole piece) and time in the read calls.
    pub input: IoCounters,
    /// The piece's INPUT statistics row.
    pub row: IoStatRow,
}

type Reader = PieceReader<BufReader<TimedReader<Box<dyn MediaReader>>>>;

/// A piece whose header was read and checked.
pub(crate) struct OpenPiece {
    rel: String,
    r: Reader,
    names: Vec<String>,
    counters: Arc<Mutex<IoCounters>>,
    opened: i64,
}

impl OpenPiece {
    /// Reads and checks the header of piece `rel` from `f`.
    pub fn open(rel: &str, f: Box<dyn MediaReader>) -> Result<OpenPiece, EngineError> {
        let opened = now_micros();
        let (timed, counters) = TimedReader::new(f);
        let r = PieceReader::open(BufReader::with_capacity(READ_SIZE, timed))
            .map_err(|e| EngineError::piece(rel, e))?;
        let names = r.header().files.iter().map(|f| f.path.clone()).collect();
        Ok(OpenPiece {
            rel: rel.to_string(),
            r,
            names,
            counters,
            opened,
        })
    }

    pub fn header(&self) -> &PieceHeader {
        self.r.header()
    }

    /// Reads the rest of the piece through `stages` into `sink`, checking it against `scan`.
    pub fn scan(
        mut self,
        scan: &Scan,
        stages: &mut [&mut dyn Stage],
        sink: &mut dyn Sink,
    ) -> Result<Scanned, EngineError> {
        let rel = self.rel.clone();
        let piece_no = self.r.header().piece_no;
        for s in stages.iter_mut() {
            s.begin();
        }
        sink.begin(self.r.header())?;
        // Running CRC-32C per file slot, until its end record.
        let mut running: HashMap<u32, u32> = HashMap::new();
        let mut files = 0;
        let names = &self.names;
        let name_of = |slot: u32| -> Result<&str, EngineError> {
            names.get(slot as usize).map(String::as_str).ok_or_else(|| {
                EngineError::Corrupt(format!(
                    "backup piece {rel} refers to file #{slot}, which its header does not list; hint: the piece is damaged"
                ))
            })
        };
        let slow = crate::fault::slow_read_of(&rel);
        loop {
            // A stop (SIGINT, SIGTERM) is seen within a record, not only between pieces: a
            // restore of one large piece ends as promptly as a backup.
            crate::stop::check()?;
            if let Some(d) = slow {
                std::thread::sleep(d);
            }
            let rec = match self.r.next_ref() {
                Ok(Some(rec)) => rec,
                Ok(None) => break,
                Err(e) => {
                    let file = self.r.last_chunk_file().and_then(|i| names.get(i as usize));
                    return Err(damaged(&rel, file, e));
                }
            };
            match rec {
                RecordRef::Chunk {
                    file_index,
                    file_offset,
                    data,
                } => {
                    let file = FileRef {
                        slot: file_index,
                        name: name_of(file_index)?,
                    };
                    let c = running.entry(file_index).or_insert(0);
                    *c = crc32c::crc32c_append(*c, data);
                    for s in stages.iter_mut() {
                        s.chunk(&file, file_offset, data)?;
                    }
                    sink.chunk(&file, file_offset, data)?;
                }
                RecordRef::FileEnd {
                    file_index,
                    size,
                    crc32c,
                } => {
                    let file = FileRef {
                        slot: file_index,
                        name: name_of(file_index)?,
                    };
                    let got = running.remove(&file_index).unwrap_or(0);
                    if got != crc32c || !scan.files.file_matches(file.name, piece_no, size, crc32c)
                    {
                        return Err(scan.wording.damage(
                            format!(
                                "file {} in backup piece {rel} does not match its recorded checksum",
                                file.name
                            ),
                            "",
                        ));
                    }
                    for s in stages.iter_mut() {
                        s.file_end(&file, size, crc32c)?;
                    }
                    sink.file_end(&file, size, crc32c)?;
                    files += 1;
                }
            }
        }
        let summary = match self.r.finish() {
            Ok(s) => s,
            Err(e) => return Err(EngineError::piece(&rel, e)),
        };
        check_whole(scan, &rel, names, &running, &summary)?;
        let input = self.counters.lock().expect("counters lock").clone();
        let row = input_row(scan, &rel, &input, self.opened, piece_no);
        Ok(Scanned {
            files,
            summary,
            input,
            row,
        })
    }
}

/// A piece read to its end is whole: every file has its end record, and the piece is the one
/// the manifest recorded.
fn check_whole(
    scan: &Scan,
    rel: &str,
    names: &[String],
    running: &HashMap<u32, u32>,
    summary: &PieceSummary,
) -> Result<(), EngineError> {
    if let Some(slot) = running.keys().next() {
        return Err(scan.wording.damage(
            format!(
                "file {} in backup piece {rel} has no end record",
                names.get(*slot as usize).cloned().unwrap_or_default(),
            ),
            "the piece is truncated; ",
        ));
    }
    if let Some((size, crc)) = scan.piece
        && (summary.size != size || summary.crc32c != crc)
    {
        return Err(scan.wording.damage(
            format!(
                "backup piece {rel} is not the piece the manifest recorded (size {} crc {:08x}, expected size {size} crc {crc:08x})",
                summary.size, summary.crc32c
            ),
            "",
        ));
    }
    Ok(())
}

/// The piece's INPUT row: what reading it took, from its open to now.
fn input_row(scan: &Scan, rel: &str, input: &IoCounters, opened: i64, piece_no: u32) -> IoStatRow {
    let mut row = crate::pipeline::stats::stat_row(
        "INPUT",
        scan.channel,
        Some(rel.to_string()),
        input,
        opened,
        now_micros(),
        (READ_SIZE as u64, 1),
    );
    row.set_no = scan.set_no;
    row.piece_no = Some(piece_no);
    row
}

/// A format error of piece `rel`, naming the file when it is a chunk's damage.
fn damaged(rel: &str, file: Option<&String>, e: FormatError) -> EngineError {
    match (&e, file) {
        (FormatError::ChunkChecksum { .. } | FormatError::Decompress { .. }, Some(f)) => {
            EngineError::PieceFile {
                piece: rel.to_string(),
                file: f.clone(),
                source: e,
            }
        }
        _ => EngineError::piece(rel, e),
    }
}

/// Scans piece `scan.rel` from the first of `sources` that serves it (see [`Failover`]).
pub(crate) fn scan_from(
    sources: &[Source],
    scan: &Scan,
    failover: Failover,
    stages: &mut [&mut dyn Stage],
    sink: &mut dyn Sink,
    progress: &dyn Progress,
) -> Result<Scanned, EngineError> {
    if failover == Failover::Missing {
        let f = crate::pieces::open_from(sources, scan.rel)?;
        return OpenPiece::open(scan.rel, f)?.scan(scan, stages, sink);
    }
    let mut last = None;
    for (i, s) in sources.iter().enumerate() {
        let r = s
            .media
            .open(&s.name)
            .map_err(EngineError::from)
            .and_then(|f| OpenPiece::open(scan.rel, f))
            .and_then(|p| p.scan(scan, stages, sink));
        match r {
            Ok(done) => return Ok(done),
            // A stop is no fault of this copy: no other is tried.
            Err(e @ EngineError::Stopped { .. }) => return Err(e),
            Err(e) => {
                if let Some(next) = sources.get(i + 1) {
                    progress.notice(&format!(
                        "backup piece {} on {} cannot be used: {e}; restoring it from its copy on {}",
                        scan.rel,
                        s.describe(),
                        next.describe()
                    ));
                }
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        EngineError::NotFound(format!(
            "backup piece {} has no copy to restore from; hint: run `recman crosscheck` and restore from another backup",
            scan.rel
        ))
    }))
}

/// A sink that keeps nothing but counts, and the end records of the files: validation,
/// crosscheck, catalog rebuild, and the check before an image copy is changed.
#[derive(Default)]
pub(crate) struct NullSink<'a> {
    pub progress: Option<&'a dyn Progress>,
    pub bytes: u64,
    /// (name, size, crc) of every file ended.
    pub ends: Vec<(String, u64, u32)>,
}

impl Sink for NullSink<'_> {
    fn begin(&mut self, _: &PieceHeader) -> Result<(), EngineError> {
        self.bytes = 0;
        self.ends.clear();
        Ok(())
    }
    fn chunk(&mut self, _: &FileRef, _: u64, data: &[u8]) -> Result<(), EngineError> {
        self.bytes += data.len() as u64;
        if let Some(p) = self.progress {
            p.advance(data.len() as u64);
        }
        Ok(())
    }
    fn file_end(&mut self, file: &FileRef, size: u64, crc: u32) -> Result<(), EngineError> {
        self.ends.push((file.name.to_string(), size, crc));
        Ok(())
    }
}
