//! VALIDATE BACKUP: reads every piece of a backup and checks every chunk, every file checksum
//! and every page, as a restore would, without writing anything. Pieces are independent, so
//! they are read on several threads (by default one per core): the work is decompression and
//! checksums, and one thread would leave the other cores and the disk's queue idle.

use crate::context::Context;
use crate::error::EngineError;
use crate::manifest_io::load_manifest;
use crate::pieces::Source;
use crate::pipeline::{Failover, ManifestFiles, NullSink, PageCheck, Scan, Wording, scan_from};
use crate::progress::Progress;
use crate::validate::{ValidateBackupReport, find_backup};
use recman_catalog::{BackupStatus, CorruptBlock, IoStatRow};
use recman_format::manifest::{BackupManifest, ManifestPiece};
use recman_pg::{Lsn, wal_segments_between};

/// What one piece held.
#[derive(Default)]
struct PieceResult {
    /// Names of the files whose end the piece held, checked.
    ends: Vec<String>,
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
    files: ManifestFiles<'a>,
    start_lsn: Lsn,
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
        return Err(crate::refusal::Backups::NotAvailable {
            backup_id: b.id.clone(),
            status: b.status.as_str().to_string(),
            for_: crate::refusal::Unavailable::Validate,
        }
        .into());
    }
    let m = load_manifest(ctx, &b.id)?;
    if m.origin.is_some() {
        let chain = crate::incremental::chain(ctx, m)?;
        return crate::import::validate_foreign(ctx, &b, &chain, channels, progress);
    }
    let check = Check {
        backup_id: &b.id,
        m: &m,
        files: ManifestFiles::new(&m),
        start_lsn: m.start_lsn.parse()?,
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
        check.files.values().filter_map(|e| e.size).sum(),
    );
    let results = run_lanes(&check, &pieces, channels)?;
    check_coverage(&b.id, &check.files, &results)?;
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
    rows.push(crate::pipeline::stats::stat_row(
        "AGGREGATE",
        1,
        None,
        &total,
        started,
        crate::util::now_micros(),
        (1 << 20, 1),
    ));
    crate::pipeline::stats::record_piece_job(&ctx.repo, "VALIDATE", &b.id, &mut rows);
    progress.finish();
    // A database backup is only usable with the WAL up to its stop point; a backup of archived
    // WAL is that WAL, and its pieces were just verified.
    let stop: Lsn = m.stop_lsn.parse()?;
    let needed = if m.backup_type == crate::backup_types::ARCHIVELOG {
        Vec::new()
    } else {
        wal_segments_between(m.timeline, check.start_lsn, stop, m.wal_segment_size)
    };
    for w in needed {
        let name = w.to_string();
        match crate::archive::read_wal(&ctx.repo, &ctx.db, &name)? {
            Some(_) => report.wal_segments += 1,
            None => {
                return Err(EngineError::NotFound(format!(
                    "wal segment {name} needed to make backup {} consistent is missing from the repository; hint: the backup cannot be restored without it",
                    b.id
                )));
            }
        }
    }
    Ok(report)
}

/// Every file the manifest says is in a backup set was read whole from a piece (once per
/// section), and every file a piece held is in the manifest: a manifest entry removed, or a
/// piece swapped for another backup's, does not pass.
fn check_coverage(
    backup_id: &str,
    files: &ManifestFiles,
    results: &[PieceResult],
) -> Result<(), EngineError> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for name in results.iter().flat_map(|r| r.ends.iter()) {
        *seen.entry(name.as_str()).or_default() += 1;
    }
    let mut unread: Vec<&str> = files
        .values()
        .filter(|e| e.set_no.is_some())
        .filter(|e| seen.get(e.path.as_str()).copied().unwrap_or(0) < e.sections.len().max(1))
        .map(|e| e.path.as_str())
        .collect();
    let mut unlisted: Vec<&str> = seen
        .keys()
        .copied()
        .filter(|n| files.get(n).is_none())
        .collect();
    if unread.is_empty() && unlisted.is_empty() {
        return Ok(());
    }
    unread.sort_unstable();
    unlisted.sort_unstable();
    let mut what = Vec::new();
    if !unread.is_empty() {
        what.push(format!(
            "{} file(s) of the manifest are in no piece: {}",
            unread.len(),
            crate::util::cut_list(&unread, ", ")
        ));
    }
    if !unlisted.is_empty() {
        what.push(format!(
            "{} file(s) in its pieces are not in the manifest: {}",
            unlisted.len(),
            crate::util::cut_list(&unlisted, ", ")
        ));
    }
    Err(EngineError::Corrupt(format!(
        "backup {backup_id} does not match its manifest: {}; hint: the manifest or a piece was changed or replaced; restore from another backup",
        what.join("; ")
    )))
}

/// Validates the pieces over `channels` workers, largest pieces first, each worker taking the
/// next piece when it is done; the first error stops the others. Results come back in the
/// manifest's piece order.
fn run_lanes(
    check: &Check,
    pieces: &[(u32, &ManifestPiece, Vec<Source>)],
    channels: u32,
) -> Result<Vec<PieceResult>, EngineError> {
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(pieces[i].1.size));
    crate::pipeline::pool::map(
        channels as usize,
        "validate",
        pieces,
        order,
        |w, (set_no, p, sources)| validate_piece(check, w.no, *set_no, p, sources),
    )
}

/// Reads one piece through the scanner with the page check stacked, into a null sink.
fn validate_piece(
    check: &Check,
    channel: u32,
    set_no: u32,
    p: &ManifestPiece,
    sources: &[Source],
) -> Result<PieceResult, EngineError> {
    let m = check.m;
    let volatile = |name: &str| -> &[u32] {
        check
            .files
            .get(name)
            .map(|e| e.volatile_blocks.as_slice())
            .unwrap_or(&[])
    };
    let mut pages = PageCheck::new(m.checksums_enabled, check.start_lsn.0, &volatile);
    let mut sink = NullSink {
        progress: Some(check.progress),
        ..Default::default()
    };
    let scan = Scan {
        rel: &p.path,
        piece: Some((p.size, p.crc32c)),
        files: &check.files,
        wording: Wording::VALIDATE,
        channel,
        set_no: Some(set_no),
    };
    let done = scan_from(
        sources,
        &scan,
        Failover::Missing,
        &mut [&mut pages],
        &mut sink,
        check.progress,
    )?;
    let mut out = PieceResult {
        ends: sink.ends.iter().map(|(n, _, _)| n.clone()).collect(),
        files: done.files,
        pages: pages.pages,
        bytes: sink.bytes,
        counters: done.input,
        row: Some(done.row),
        ..Default::default()
    };
    for (name, verdicts) in pages.done {
        for (block, fault) in verdicts.corrupt {
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
    Ok(out)
}
