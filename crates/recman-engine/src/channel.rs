//! One backup channel: RMAN's read → copy → write pipeline for the sets assigned to it. The
//! channel reads up to `mux` files at once, interleaving their chunks into one piece, checks
//! every page on the way and writes each piece atomically into the repository.

use crate::pagecheck::{PageRules, PageVerdicts, check_chunk, read_full_at};
use crate::plan::PlannedSet;
use crate::{EngineError, Progress, ScannedFile};
use recman_catalog::{AtomicFile, Repository};
use recman_format::{PieceHeader, PieceWriter, SetFile};
use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct ChannelShared<'a> {
    /// Each channel opens its own handle: a catalog connection is not shared between threads.
    pub repo_root: &'a std::path::Path,
    pub files: &'a [ScannedFile],
    pub header: PieceHeader,
    pub backup_dir: String,
    pub checksums: bool,
    pub start_lsn: u64,
    pub progress: &'a dyn Progress,
    pub cancel: &'a AtomicBool,
}

#[derive(Debug, Clone)]
pub struct FileOutcome {
    pub index: usize,
    pub set_no: u32,
    pub size: u64,
    pub crc32c: u32,
    pub verdicts: PageVerdicts,
}

#[derive(Debug, Clone)]
pub struct SetOutcome {
    pub set_no: u32,
    pub channel: u32,
    pub piece_path: String,
    pub size: u64,
    pub crc32c: u32,
    pub raw_bytes: u64,
    pub files: Vec<FileOutcome>,
}

/// Input buffer per open file, by multiplexing level, after RMAN's documented rule: few files
/// get large buffers, many files share a bounded total.
pub fn input_buffer_size(mux: u32) -> usize {
    match mux {
        0..=4 => 1 << 20,
        5..=8 => 512 << 10,
        _ => 128 << 10,
    }
}

struct OpenFile {
    index: usize,
    slot: u32,
    file: File,
    offset: u64,
    crc: u32,
    verdicts: PageVerdicts,
}

pub fn run_channel(
    sh: &ChannelShared,
    channel: u32,
    sets: &[&PlannedSet],
) -> Result<Vec<SetOutcome>, EngineError> {
    let repo = Repository::open(sh.repo_root)?;
    let mut out = Vec::new();
    for set in sets {
        if sh.cancel.load(Ordering::Relaxed) {
            break;
        }
        out.push(backup_set(sh, &repo, channel, set)?);
    }
    Ok(out)
}

fn backup_set(
    sh: &ChannelShared,
    repo: &Repository,
    channel: u32,
    set: &PlannedSet,
) -> Result<SetOutcome, EngineError> {
    let piece_path = format!("{}/s{:05}_p001.rmp", sh.backup_dir, set.set_no);
    let mut header = sh.header.clone();
    header.set_no = set.set_no;
    header.piece_no = 1;
    header.files = set
        .files
        .iter()
        .enumerate()
        .map(|(slot, &i)| SetFile {
            index: slot as u32,
            path: sh.files[i].rel.clone(),
        })
        .collect();
    let sink = repo.create_atomic(&piece_path)?;
    let mut writer =
        PieceWriter::new(sink, &header).map_err(|e| EngineError::piece(&piece_path, e))?;
    let bufsize = input_buffer_size(set.mux);
    let mut buf = vec![0u8; bufsize];
    let mut queue: VecDeque<(u32, usize)> = set
        .files
        .iter()
        .enumerate()
        .map(|(s, &i)| (s as u32, i))
        .collect();
    let mut open: Vec<OpenFile> = Vec::new();
    let mut done = Vec::new();
    loop {
        while open.len() < set.mux as usize
            && let Some((slot, index)) = queue.pop_front()
        {
            let f = &sh.files[index];
            match File::open(&f.abs) {
                Ok(file) => open.push(OpenFile {
                    index,
                    slot,
                    file,
                    offset: 0,
                    crc: 0,
                    verdicts: PageVerdicts::default(),
                }),
                // Dropped by the server after we listed it; WAL replay removes it again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    writer
                        .end_file(slot, 0, 0)
                        .map_err(|e| EngineError::piece(&piece_path, e))?;
                    done.push(FileOutcome {
                        index,
                        set_no: set.set_no,
                        size: 0,
                        crc32c: 0,
                        verdicts: PageVerdicts::default(),
                    });
                }
                Err(e) => return Err(EngineError::io("open", &f.abs, e)),
            }
        }
        if open.is_empty() {
            break;
        }
        let mut k = 0;
        while k < open.len() {
            if sh.cancel.load(Ordering::Relaxed) {
                return Err(EngineError::Invalid(
                    "backup cancelled because another channel failed".into(),
                ));
            }
            let of = &mut open[k];
            let sf = &sh.files[of.index];
            let n = read_full_at(&of.file, &mut buf, of.offset)
                .map_err(|e| EngineError::io("read", &sf.abs, e))?;
            if n > 0 {
                let chunk = &mut buf[..n];
                if let Some(rf) = &sf.relfile {
                    check_chunk(
                        Some(&of.file),
                        &PageRules {
                            relfile: rf,
                            checksums: sh.checksums,
                            start_lsn: Some(sh.start_lsn),
                            skip: &[],
                        },
                        of.offset,
                        chunk,
                        &mut of.verdicts,
                    )
                    .map_err(|e| EngineError::io("re-read", &sf.abs, e))?;
                }
                of.crc = crc32c::crc32c_append(of.crc, chunk);
                writer
                    .write_chunk(of.slot, of.offset, chunk)
                    .map_err(|e| EngineError::piece(&piece_path, e))?;
                of.offset += n as u64;
                sh.progress.advance(n as u64);
            }
            if n < bufsize {
                let of = open.swap_remove(k);
                writer
                    .end_file(of.slot, of.offset, of.crc)
                    .map_err(|e| EngineError::piece(&piece_path, e))?;
                done.push(FileOutcome {
                    index: of.index,
                    set_no: set.set_no,
                    size: of.offset,
                    crc32c: of.crc,
                    verdicts: of.verdicts,
                });
                continue;
            }
            k += 1;
        }
    }
    let (mut sink, summary): (AtomicFile, _) = writer
        .finish()
        .map_err(|e| EngineError::piece(&piece_path, e))?;
    sink.flush()
        .map_err(|e| EngineError::io("write", repo.path(&piece_path), e))?;
    sink.commit()?;
    Ok(SetOutcome {
        set_no: set.set_no,
        channel,
        piece_path,
        size: summary.size,
        crc32c: summary.crc32c,
        raw_bytes: summary.raw_bytes,
        files: done,
    })
}
