//! VALIDATE BACKUP: reads every piece of a backup and checks every chunk, every file checksum
//! and every page, as a restore would, without writing anything. Pieces are independent, so
//! they are read on several threads (by default one per core): the work is decompression and
//! checksums, and one thread would leave the other cores and the disk's queue idle.

use crate::pagecheck::{PageRules, PageVerdicts, check_chunk};
use crate::pieces::Source;
use crate::restore::load_manifest;
use crate::validate::{ValidateBackupReport, find_backup};
use crate::{Context, EngineError, Progress};
use recman_catalog::{BackupStatus, CorruptBlock, IoStatRow};
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry, ManifestPiece};
use recman_format::{PieceReader, Record};
use recman_pg::{Lsn, wal_segments_between};
use std::collections::HashMap;
use std::io::BufReader;
use std::sync::atomic::{AtomicBool, Ordering};

/// What one piece held.
#[derive(Default)]
struct PieceResult {
    files: u64,
    pages: u64,
    bytes: u64,
    corrupt: Vec<CorruptBlock>,
    counters: crate::io::IoCounters,
    row: Option<IoStatRow>,
}

/// What every thread shares: the manifest's facts, read-only.
struct Check<'a> {
    backup_id: &'a str,
    m: &'a BackupManifest,
    entries: HashMap<&'a str, &'a ManifestEntry>,
    start_lsn: Lsn,
    location: String,
    progress: &'a dyn Progress,
}

pub fn validate_backup(
    ctx: &Context,
    which: Option<&str>,
    channels: u32,
    progress: &dyn Progress,
) -> Result<ValidateBackupReport, EngineError> {
    let b = find_backup(ctx, which)?;
    if b.status != BackupStatus::Available {
        return Err(EngineError::Invalid(format!(
            "backup {} is {}, not AVAILABLE; nothing to validate; hint: `recman list backup` shows its error",
            b.id,
            b.status.as_str()
        )));
    }
    let m = load_manifest(ctx, &b.id)?;
    let check = Check {
        backup_id: &b.id,
        m: &m,
        entries: m
            .entries
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| (e.path.as_str(), e))
            .collect(),
        start_lsn: m.start_lsn.parse()?,
        location: ctx.repo.location().to_string(),
        progress,
    };
    // Threads get the pieces' sources only: a catalog connection is not shared between them.
    let mut pieces: Vec<(u32, &ManifestPiece, Vec<Source>)> = Vec::new();
    for set in &m.sets {
        for p in &set.pieces {
            pieces.push((set.set_no, p, crate::pieces::sources(&ctx.repo, &p.path)?));
        }
    }
    let mut report = ValidateBackupReport {
        backup_id: b.id.clone(),
        tag: b.tag.clone(),
        ..Default::default()
    };
    let started = crate::util::now_micros();
    progress.start(
        "validate",
        check.entries.values().filter_map(|e| e.size).sum(),
    );
    let results = run_lanes(&check, &pieces, channels)?;
    let mut rows = Vec::new();
    let mut total = crate::io::IoCounters::default();
    for r in results {
        report.pieces += 1;
        report.files += r.files;
        report.pages += r.pages;
        report.bytes += r.bytes;
        report.corrupt.blocks.extend(r.corrupt);
        total.add(&r.counters);
        rows.extend(r.row);
    }
    rows.push(crate::channel::stat_row(
        "AGGREGATE",
        1,
        None,
        &total,
        started,
        crate::util::now_micros(),
        (1 << 20, 1),
    ));
    crate::channel::record_piece_job(&ctx.repo, "VALIDATE", &b.id, &mut rows);
    progress.finish();
    // A database backup is only usable with the WAL up to its stop point; a backup of archived
    // WAL is that WAL, and its pieces were just verified.
    let stop: Lsn = m.stop_lsn.parse()?;
    let needed = if m.backup_type == crate::archivelog::ARCHIVELOG {
        Vec::new()
    } else {
        wal_segments_between(m.timeline, check.start_lsn, stop, m.wal_segment_size)
    };
    for w in needed {
        let name = w.to_string();
        match crate::archive::read_wal(&ctx.repo, &ctx.db, &name)? {
            Some(_) => report.wal_segments += 1,
            None => {
                return Err(EngineError::Wal(format!(
                    "wal segment {name} needed to make backup {} consistent is missing from the repository; hint: the backup cannot be restored without it",
                    b.id
                )));
            }
        }
    }
    Ok(report)
}

/// Validates the pieces over `channels` threads, largest pieces first, each thread taking the
/// next piece when it is done; the first error stops the others. Results come back in the
/// manifest's piece order.
fn run_lanes(
    check: &Check,
    pieces: &[(u32, &ManifestPiece, Vec<Source>)],
    channels: u32,
) -> Result<Vec<PieceResult>, EngineError> {
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(pieces[i].1.size));
    let next = std::sync::Mutex::new(order.into_iter());
    let cancel = AtomicBool::new(false);
    let n = (channels.max(1) as usize).min(pieces.len().max(1));
    let mut done: Vec<(usize, Result<PieceResult, EngineError>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|k| {
                let (next, cancel) = (&next, &cancel);
                s.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        let Some(i) = next.lock().expect("queue lock").next() else {
                            break;
                        };
                        let (set_no, p, sources) = &pieces[i];
                        let r = crate::pieces::open_from(sources, &p.path)
                            .and_then(|f| validate_piece(check, k as u32 + 1, *set_no, p, f));
                        if r.is_err() {
                            cancel.store(true, Ordering::Relaxed);
                        }
                        out.push((i, r));
                    }
                    out
                })
            })
            .collect();
        hs.into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![(
                        usize::MAX,
                        Err(EngineError::Invalid("a validate thread panicked".into())),
                    )]
                })
            })
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

fn validate_piece(
    check: &Check,
    channel: u32,
    set_no: u32,
    p: &ManifestPiece,
    f: Box<dyn recman_media::MediaReader>,
) -> Result<PieceResult, EngineError> {
    let m = check.m;
    let opened = crate::util::now_micros();
    let (timed, counters) = crate::io::TimedReader::new(f);
    let mut r = PieceReader::open(BufReader::with_capacity(1 << 20, timed))
        .map_err(|e| EngineError::piece(&p.path, e))?;
    let names: Vec<String> = r.header().files.iter().map(|f| f.path.clone()).collect();
    let mut crcs: HashMap<u32, u32> = HashMap::new();
    let mut verdicts: HashMap<u32, PageVerdicts> = HashMap::new();
    let mut out = PieceResult::default();
    while let Some(rec) = r.next().map_err(|e| EngineError::piece(&p.path, e))? {
        match rec {
            Record::Chunk {
                file_index,
                file_offset,
                mut data,
            } => {
                let name = names
                    .get(file_index as usize)
                    .map(String::as_str)
                    .unwrap_or("");
                let c = crcs.entry(file_index).or_insert(0);
                *c = crc32c::crc32c_append(*c, &data);
                if let Some(rf) = recman_page::classify(name) {
                    let skip = check
                        .entries
                        .get(name)
                        .map(|e| e.volatile_blocks.as_slice())
                        .unwrap_or(&[]);
                    let v = verdicts.entry(file_index).or_default();
                    check_chunk(
                        None,
                        &PageRules {
                            relfile: &rf,
                            checksums: m.checksums_enabled,
                            start_lsn: Some(check.start_lsn.0),
                            skip,
                        },
                        file_offset,
                        &mut data,
                        v,
                    )
                    .map_err(|e| {
                        EngineError::from(recman_media::MediaError::io(
                            &check.location,
                            &p.path,
                            "check",
                            e,
                        ))
                    })?;
                    out.pages += (data.len() / recman_page::BLCKSZ) as u64;
                }
                out.bytes += data.len() as u64;
                check.progress.advance(data.len() as u64);
            }
            Record::FileEnd {
                file_index,
                size,
                crc32c,
            } => {
                let name = names.get(file_index as usize).cloned().unwrap_or_default();
                let running = crcs.remove(&file_index).unwrap_or(0);
                let e = check.entries.get(name.as_str());
                let matches =
                    |e: &&ManifestEntry| match e.sections.iter().find(|s| s.piece_no == p.piece_no)
                    {
                        Some(sec) => sec.crc32c == crc32c && sec.offset + sec.len == size,
                        None => e.crc32c == Some(crc32c) && e.size == Some(size),
                    };
                if running != crc32c || e.is_some_and(|e| !matches(e)) {
                    return Err(EngineError::Corrupt(format!(
                        "file {name} in backup piece {} does not match its recorded checksum; hint: the backup is damaged, take a new one and keep this one out of restores",
                        p.path
                    )));
                }
                out.files += 1;
                for (block, fault) in verdicts.remove(&file_index).unwrap_or_default().corrupt {
                    // Blocks the backup recorded as corrupt (accepted with MAXCORRUPT) are known, not new.
                    if m.corrupt_blocks
                        .iter()
                        .any(|c| c.path == name && c.block == block)
                    {
                        continue;
                    }
                    out.corrupt.push(CorruptBlock {
                        backup_id: check.backup_id.to_string(),
                        path: name.clone(),
                        block,
                        kind: fault.kind().into(),
                        relation: None,
                        detail: format!("{fault} (in backup piece {})", p.path),
                    });
                }
            }
        }
    }
    let s = r.finish().map_err(|e| EngineError::piece(&p.path, e))?;
    if s.size != p.size || s.crc32c != p.crc32c {
        return Err(EngineError::Corrupt(format!(
            "backup piece {} does not match the manifest (size {} crc {:08x}, expected {} {:08x}); hint: the backup is damaged",
            p.path, s.size, s.crc32c, p.size, p.crc32c
        )));
    }
    let c = counters.lock().expect("counters lock").clone();
    let mut row = crate::channel::stat_row(
        "INPUT",
        channel,
        Some(p.path.clone()),
        &c,
        opened,
        crate::util::now_micros(),
        (1 << 20, 1),
    );
    row.set_no = Some(set_no);
    row.piece_no = Some(p.piece_no);
    out.counters = c;
    out.row = Some(row);
    Ok(out)
}
