//! Scattering pieces into files, for one backup or a chain (a level 0 or full backup and the
//! level 1s after it). Backups are read newest first and each block is written once: a block a
//! newer backup holds is not written again from an older one, and a file a newer backup holds
//! whole is skipped in older ones. Every chunk is verified before any byte of it is used.

use super::files::{Layout, apply_metadata, make_entries};
use super::outfile::OutFile;
use crate::pieces::Source;
use crate::{EngineError, Progress};
use recman_catalog::IoStatRow;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry};
use recman_format::{PieceReader, Record};
use std::collections::{HashMap, HashSet};
use std::fs::OpenOptions;
use std::io::BufReader;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

const BS: usize = recman_page::BLCKSZ;

/// What newer backups of the chain already wrote.
#[derive(Default)]
struct Written {
    /// Files restored whole from a newer backup.
    whole: HashSet<String>,
    /// Blocks (bit per block) restored from newer level 1s.
    blocks: HashMap<String, Vec<u64>>,
}

/// One backup's pass over its pieces.
struct Pass<'a> {
    /// This backup's own entries, to verify what its pieces say.
    own: HashMap<&'a str, &'a ManifestEntry>,
    /// The newest backup's files: only those exist after the restore.
    newest: &'a HashMap<&'a str, &'a ManifestEntry>,
    written: &'a Mutex<Written>,
    layout: &'a Layout,
    progress: &'a dyn Progress,
}

/// Restores every file of the chain (oldest first); returns (files, bytes, statistics).
pub fn restore_chain(
    ctx: &crate::Context,
    chain: &[BackupManifest],
    layout: &Layout,
    channels: u32,
    progress: &dyn Progress,
) -> Result<(u64, u64, Vec<IoStatRow>), EngineError> {
    // Threads get the pieces' sources only: a catalog connection is not shared between them.
    let mut sources = HashMap::new();
    for m in chain {
        for p in m.sets.iter().flat_map(|s| s.pieces.iter()) {
            sources.insert(p.path.clone(), crate::pieces::sources(&ctx.repo, &p.path)?);
        }
    }
    restore_chain_with(ctx, chain, &sources, layout, channels, progress)
}

/// [`restore_chain`] reading each piece from `sources` (a restore plan's), in their order.
pub fn restore_chain_with(
    ctx: &crate::Context,
    chain: &[BackupManifest],
    sources: &HashMap<String, Vec<Source>>,
    layout: &Layout,
    channels: u32,
    progress: &dyn Progress,
) -> Result<(u64, u64, Vec<IoStatRow>), EngineError> {
    let newest_m = chain.last().expect("a chain has at least one backup");
    make_entries(newest_m, layout)?;
    let newest: HashMap<&str, &ManifestEntry> = files_of(newest_m);
    // Progress advances by the raw bytes of each chunk read, which the catalog records per piece.
    let mut total = 0u64;
    for m in chain {
        total += ctx
            .repo
            .catalog()
            .pieces(&m.backup_id)?
            .iter()
            .map(|p| p.raw_bytes)
            .sum::<u64>();
    }
    progress.start("restore", total);
    let written = Mutex::new(Written::default());
    let mut rows = Vec::new();
    for m in chain.iter().rev() {
        let pass = Pass {
            own: files_of(m),
            newest: &newest,
            written: &written,
            layout,
            progress,
        };
        let (restored, r) = restore_backup(sources, m, &pass, channels)?;
        rows.extend(r);
        // Files without a set are held by the parent (backup optimization).
        let expected: u64 = pass
            .own
            .values()
            .filter(|e| e.set_no.is_some())
            .map(|e| e.sections.len().max(1) as u64)
            .sum();
        if restored != expected {
            return Err(EngineError::Invalid(format!(
                "backup {} restored {restored} of its {expected} file parts; hint: the manifest and pieces disagree, validate the backup with `recman validate backup {}`",
                m.backup_id, m.backup_id
            )));
        }
        let mut w = written.lock().expect("written lock");
        for e in pass.own.values().filter(|e| !e.incremental) {
            w.whole.insert(e.path.clone());
        }
    }
    progress.finish();
    // Lengths come from the newest backup: this is what replays truncation and extension,
    // and creates files that no piece held a byte of.
    for e in newest.values() {
        let p = layout.real(&e.path);
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&p)
            .map_err(|er| EngineError::io("create", &p, er))?;
        f.set_len(e.size.unwrap_or(0))
            .and_then(|_| f.sync_all())
            .map_err(|er| EngineError::io("set length of", &p, er))?;
    }
    apply_metadata(newest_m, layout)?;
    Ok((
        newest.len() as u64,
        newest.values().filter_map(|e| e.size).sum(),
        rows,
    ))
}

fn files_of(m: &BackupManifest) -> HashMap<&str, &ManifestEntry> {
    m.entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| (e.path.as_str(), e))
        .collect()
}

/// Reads one backup's pieces over `channels` threads; returns the file parts it ended.
fn restore_backup(
    sources: &HashMap<String, Vec<Source>>,
    m: &BackupManifest,
    pass: &Pass,
    channels: u32,
) -> Result<(u64, Vec<IoStatRow>), EngineError> {
    let mut pieces: Vec<_> = m.sets.iter().flat_map(|s| s.pieces.iter()).collect();
    pieces.sort_by_key(|p| std::cmp::Reverse(p.size));
    let n = channels.max(1) as usize;
    let mut lanes: Vec<Vec<_>> = vec![Vec::new(); n];
    let mut load = vec![0u64; n];
    for p in pieces {
        let k = (0..n).min_by_key(|&k| load[k]).expect("channels > 0");
        load[k] += p.size;
        lanes[k].push(p);
    }
    let cancel = AtomicBool::new(false);
    let results: Vec<Result<(u64, Vec<IoStatRow>), EngineError>> = std::thread::scope(|s| {
        let hs: Vec<_> = lanes
            .iter()
            .enumerate()
            .map(|(k, lane)| {
                let cancel = &cancel;
                s.spawn(move || {
                    let mut stats = LaneStats {
                        channel: k as u32 + 1,
                        started: crate::util::now_micros(),
                        ..Default::default()
                    };
                    let mut n = 0;
                    for p in lane {
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        let from = sources.get(&p.path).map(Vec::as_slice).unwrap_or_default();
                        match restore_piece_any(from, p, pass, &mut stats) {
                            Ok(k) => n += k,
                            Err(e) => {
                                cancel.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                    Ok((n, stats.finish()))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EngineError::Invalid("a restore channel panicked".into()))
                })
            })
            .collect()
    });
    let mut restored = 0;
    let mut rows = Vec::new();
    for r in results {
        let (n, r) = r?;
        restored += n;
        rows.extend(r);
    }
    Ok((restored, rows))
}

/// Statistics of one restore channel: pieces read (INPUT rows), files written (OUTPUT).
#[derive(Default)]
struct LaneStats {
    channel: u32,
    started: i64,
    input: crate::io::IoCounters,
    output: crate::io::IoCounters,
    rows: Vec<IoStatRow>,
}

impl LaneStats {
    fn finish(mut self) -> Vec<IoStatRow> {
        let now = crate::util::now_micros();
        let out = crate::channel::stat_row(
            "OUTPUT",
            self.channel,
            Some("restored files".into()),
            &self.output,
            self.started,
            now,
            (0, 0),
        );
        let agg = crate::channel::stat_row(
            "AGGREGATE",
            self.channel,
            None,
            &self.input,
            self.started,
            now,
            (1 << 20, 1),
        );
        self.rows.push(out);
        self.rows.push(agg);
        self.rows
    }
}

/// The parts of a chunk at `offset` still to write, as (start, len) within it; marks the
/// blocks as written when the chunk comes from a level 1.
fn to_write(pass: &Pass, name: &str, offset: u64, len: usize) -> Vec<(usize, usize)> {
    if !pass.newest.contains_key(name) {
        return Vec::new();
    }
    let mut w = pass.written.lock().expect("written lock");
    if w.whole.contains(name) {
        return Vec::new();
    }
    let incremental = pass.own.get(name).is_some_and(|e| e.incremental);
    if !incremental && !w.blocks.contains_key(name) {
        return vec![(0, len)];
    }
    let bits = w.blocks.entry(name.to_string()).or_default();
    let first = (offset / BS as u64) as usize;
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < len {
        let n = (len - at).min(BS);
        let b = first + at / BS;
        if bits.len() <= b / 64 {
            bits.resize(b / 64 + 1, 0);
        }
        if bits[b / 64] & (1 << (b % 64)) == 0 {
            if incremental {
                bits[b / 64] |= 1 << (b % 64);
            }
            match out.last_mut() {
                Some((s, l)) if *s + *l == at => *l += n,
                _ => out.push((at, n)),
            }
        }
        at += n;
    }
    out
}

/// Restores a piece from the first of its sources that is present and intact. A piece that
/// fails part-way is read again whole from the next source: what it already wrote was
/// verified chunk by chunk, so writing it again is harmless.
fn restore_piece_any(
    sources: &[Source],
    p: &recman_format::manifest::ManifestPiece,
    pass: &Pass,
    stats: &mut LaneStats,
) -> Result<u64, EngineError> {
    let mut last = None;
    for (i, s) in sources.iter().enumerate() {
        match restore_piece(s, &p.path, p.size, p.crc32c, pass, stats) {
            Ok(n) => return Ok(n),
            Err(e) => {
                if let Some(next) = sources.get(i + 1) {
                    pass.progress.notice(&format!(
                        "backup piece {} on {} cannot be used: {e}; restoring it from its copy on {}",
                        p.path,
                        s.describe(),
                        next.describe()
                    ));
                }
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        EngineError::Invalid(format!(
            "backup piece {} has no copy to restore from; hint: run `recman crosscheck` and restore from another backup",
            p.path
        ))
    }))
}

fn restore_piece(
    source: &Source,
    rel: &str,
    size: u64,
    crc: u32,
    pass: &Pass,
    stats: &mut LaneStats,
) -> Result<u64, EngineError> {
    let opened = crate::util::now_micros();
    let f = source.media.open(&source.name)?;
    let (timed, counters) = crate::io::TimedReader::new(f);
    let mut r = PieceReader::open(BufReader::with_capacity(1 << 20, timed))
        .map_err(|e| EngineError::piece(rel, e))?;
    let names: Vec<String> = r.header().files.iter().map(|f| f.path.clone()).collect();
    let piece_no = r.header().piece_no;
    let mut open: HashMap<u32, OutFile> = HashMap::new();
    let mut bounce = None;
    let mut done = 0;
    while let Some(rec) = r.next().map_err(|e| EngineError::piece(rel, e))? {
        match rec {
            Record::Chunk {
                file_index,
                file_offset,
                data,
            } => {
                let name = names.get(file_index as usize).cloned().unwrap_or_default();
                let out = get_open(&mut open, file_index, &names, pass.layout, rel)?;
                out.crc = crc32c::crc32c_append(out.crc, &data);
                for (at, len) in to_write(pass, &name, file_offset, data.len()) {
                    let t = std::time::Instant::now();
                    out.write_at(&data[at..at + len], file_offset + at as u64, &mut bounce)?;
                    stats.output.io_count += 1;
                    stats.output.ready += 1;
                    stats.output.bytes += len as u64;
                    stats.output.io_time += t.elapsed();
                }
                pass.progress.advance(data.len() as u64);
            }
            Record::FileEnd {
                file_index,
                size: fsize,
                crc32c: fcrc,
            } => {
                let name = names.get(file_index as usize).cloned().unwrap_or_default();
                let out = get_open(&mut open, file_index, &names, pass.layout, rel)?;
                let expected = pass.own.get(name.as_str()).copied();
                // A file in sections is checked section by section.
                let section =
                    expected.and_then(|e| e.sections.iter().find(|s| s.piece_no == piece_no));
                let ok = out.crc == fcrc
                    && match section {
                        Some(sec) => sec.crc32c == fcrc && sec.offset + sec.len == fsize,
                        None => {
                            expected.is_none_or(|e| e.crc32c == Some(fcrc) && e.size == Some(fsize))
                        }
                    };
                if !ok {
                    return Err(EngineError::Invalid(format!(
                        "file {name} in backup piece {rel} does not match its recorded checksum; hint: the piece is damaged, restore from another backup with --from-tag"
                    )));
                }
                out.sync()?;
                open.remove(&file_index);
                done += 1;
            }
        }
    }
    let summary = r.finish().map_err(|e| EngineError::piece(rel, e))?;
    let c = counters.lock().expect("counters lock").clone();
    let mut row = crate::channel::stat_row(
        "INPUT",
        stats.channel,
        Some(rel.to_string()),
        &c,
        opened,
        crate::util::now_micros(),
        (1 << 20, 1),
    );
    row.piece_no = Some(piece_no);
    stats.input.add(&c);
    stats.rows.push(row);
    if summary.size != size || summary.crc32c != crc {
        return Err(EngineError::Invalid(format!(
            "backup piece {rel} is not the piece the manifest recorded (size {} crc {:08x}, expected size {size} crc {crc:08x}); hint: restore from another backup with --from-tag",
            summary.size, summary.crc32c
        )));
    }
    if let Some((idx, _)) = open.iter().next() {
        return Err(EngineError::Invalid(format!(
            "file {} in backup piece {rel} has no end record; hint: the piece is truncated",
            names.get(*idx as usize).cloned().unwrap_or_default()
        )));
    }
    Ok(done)
}

fn get_open<'a>(
    open: &'a mut HashMap<u32, OutFile>,
    idx: u32,
    names: &[String],
    layout: &Layout,
    rel: &str,
) -> Result<&'a mut OutFile, EngineError> {
    match open.entry(idx) {
        std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
        std::collections::hash_map::Entry::Vacant(v) => {
            let name = names.get(idx as usize).ok_or_else(|| {
                EngineError::Invalid(format!("backup piece {rel} refers to file #{idx}, which its header does not list; hint: the piece is damaged"))
            })?;
            // The restore directory was checked empty; files are opened by several pieces
            // (sections) and several backups (a chain).
            Ok(v.insert(OutFile::open(layout.real(name))?))
        }
    }
}
