//! A narrow door into the piece pipeline for tests outside this crate (feature `test-api`,
//! turned on only by this crate's own dev-dependency, never in the binary): write a set through
//! the one set writer, and read it back through the one scanner the way restore or validate
//! does, on any `Media` (the test kit's in-memory driver needs no disk and no binary).

use crate::error::EngineError;
use crate::pipeline::scanner::Expect;
use crate::pipeline::stages::FileRef;
use crate::pipeline::{OpenPiece, OutputShape, Scan, SetWriter, Sink, Wording};
use recman_format::PieceHeader;
use recman_media::Media;
use std::collections::BTreeMap;

/// Which command's reading the scan stands for (its advice when the piece is damaged).
#[derive(Clone, Copy, Debug)]
pub enum ScanAs {
    Restore,
    Validate,
}

/// A committed piece and what the catalog would record of it.
#[derive(Clone, Debug)]
pub struct WrittenSet {
    pub rel: String,
    pub size: u64,
    pub crc32c: u32,
    /// Each file's path, size and CRC-32C, as its end record says.
    pub files: Vec<(String, u64, u32)>,
    /// Bytes the writer handed to the device (the OUTPUT statistics).
    pub bytes_written: u64,
}

/// Writes `files` (slot = position in `header.files`) as piece `rel` on `media`, in chunks of
/// `chunk` bytes, through [`SetWriter`].
pub fn write_set(
    media: &dyn Media,
    rel: &str,
    header: &PieceHeader,
    files: &[Vec<u8>],
    chunk: usize,
) -> Result<WrittenSet, EngineError> {
    let mut w = SetWriter::create(
        media,
        &media.describe(),
        rel,
        header,
        OutputShape::default(),
    )?;
    let mut recorded = Vec::new();
    for (slot, data) in files.iter().enumerate() {
        let crc = w.whole_file(slot as u32, data, chunk)?;
        recorded.push((header.files[slot].path.clone(), data.len() as u64, crc));
    }
    let p = w.finish()?;
    Ok(WrittenSet {
        rel: p.rel,
        size: p.size,
        crc32c: p.crc32c,
        files: recorded,
        bytes_written: p.output.bytes,
    })
}

/// What a scan delivered.
#[derive(Debug)]
pub struct ScannedSet {
    /// Each file's bytes as the sink received them.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Bytes read from the device (the INPUT statistics).
    pub bytes_read: u64,
}

/// Reads `set` back from `media` through the scanner, checking every chunk, every file against
/// what `set` recorded, and the piece as a whole.
pub fn scan_set(
    media: &dyn Media,
    set: &WrittenSet,
    scan_as: ScanAs,
) -> Result<ScannedSet, EngineError> {
    struct Recorded<'a>(&'a [(String, u64, u32)]);
    impl Expect for Recorded<'_> {
        fn file_matches(&self, name: &str, _: u32, size: u64, crc: u32) -> bool {
            self.0
                .iter()
                .find(|(n, _, _)| n == name)
                .is_none_or(|(_, s, c)| *s == size && *c == crc)
        }
    }
    #[derive(Default)]
    struct Collect(BTreeMap<String, Vec<u8>>);
    impl Sink for Collect {
        fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError> {
            let f = self.0.entry(file.name.to_string()).or_default();
            let end = offset as usize + data.len();
            if f.len() < end {
                f.resize(end, 0);
            }
            f[offset as usize..end].copy_from_slice(data);
            Ok(())
        }
        fn file_end(&mut self, _: &FileRef, _: u64, _: u32) -> Result<(), EngineError> {
            Ok(())
        }
    }
    let expect = Recorded(&set.files);
    let scan = Scan {
        rel: &set.rel,
        piece: Some((set.size, set.crc32c)),
        files: &expect,
        wording: match scan_as {
            ScanAs::Restore => Wording::RESTORE,
            ScanAs::Validate => Wording::VALIDATE,
        },
        channel: 0,
        set_no: None,
    };
    let mut sink = Collect::default();
    let done = OpenPiece::open(&set.rel, media.open(&set.rel)?)?.scan(&scan, &mut [], &mut sink)?;
    Ok(ScannedSet {
        files: sink.0,
        bytes_read: done.input.bytes,
    })
}
