//! Scattering pieces into files, for one backup or a chain (a level 0 or full backup and the
//! level 1s after it). Backups are read newest first and each block is written once: a block a
//! newer backup holds is not written again from an older one, and a file a newer backup holds
//! whole is skipped in older ones. Every chunk is verified before any byte of it is used.

use super::files::{Layout, apply_metadata, make_entries};
use super::sink::{Keep, Pass, RestoreSink, Written};
use super::writer::FileWriter;
use crate::error::EngineError;
use crate::io::IoCounters;
use crate::pieces::Source;
use crate::pipeline::{Failover, ManifestFiles, Scan, Wording, scan_from};
use crate::progress::Progress;
use recman_catalog::IoStatRow;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Restores every file of the chain (oldest first); returns (files, bytes, statistics).
pub fn restore_chain(
    ctx: &crate::context::Context,
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
    restore_chain_with(ctx, chain, &sources, layout, channels, None, progress)
}

/// [`restore_chain`] reading each piece from `sources` (a restore plan's), in their order.
pub fn restore_chain_with(
    ctx: &crate::context::Context,
    chain: &[BackupManifest],
    sources: &HashMap<String, Vec<Source>>,
    layout: &Layout,
    channels: u32,
    keep: Option<Keep>,
    progress: &dyn Progress,
) -> Result<(u64, u64, Vec<IoStatRow>), EngineError> {
    let all = |_: &str| true;
    let selective = keep;
    let keep: Keep = keep.unwrap_or(&all);
    let newest_full = chain.last().expect("a chain has at least one backup");
    // What exists after the restore is the newest backup's entries that are kept; the
    // backups' own manifests still check every file their pieces hold.
    let mut kept = newest_full.clone();
    kept.entries.retain(|e| keep(&e.path));
    let newest_m = &kept;
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
            own: ManifestFiles::new(m),
            keep: selective,
            newest: &newest,
            written: &written,
            layout,
            progress,
        };
        // Only the sets holding a kept file are read: a partial restore skips whole pieces.
        // An empty file needs no piece: its length is set from the newest backup below.
        let sets: HashSet<u32> = pass
            .own
            .values()
            .filter(|e| keep(&e.path))
            .filter(|e| {
                e.incremental
                    || newest
                        .get(e.path.as_str())
                        .is_some_and(|n| n.size != Some(0))
            })
            .filter_map(|e| e.set_no)
            .collect();
        let (restored, r) = restore_backup(sources, m, &pass, channels, &sets)?;
        rows.extend(r);
        // Files without a set are held by the parent (backup optimization). A partial restore
        // may read only its own files of a piece (through the piece's index): the count is of
        // those.
        let expected: u64 = pass
            .own
            .values()
            .filter(|e| e.set_no.is_some_and(|s| sets.contains(&s)) && keep(&e.path))
            .map(|e| e.sections.len().max(1) as u64)
            .sum();
        if restored != expected {
            return Err(EngineError::Corrupt(format!(
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
    // Every write of every pass acknowledged and fsynced before anything depends on them.
    layout.dest.flush()?;
    let lens: Vec<_> = newest
        .values()
        .map(|e| (layout.real(&e.path), e.size.unwrap_or(0)))
        .collect();
    layout.dest.set_len_all(&lens)?;
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

/// Reads one backup's pieces over `channels` workers; returns the file parts it ended.
fn restore_backup(
    sources: &HashMap<String, Vec<Source>>,
    m: &BackupManifest,
    pass: &Pass,
    channels: u32,
    sets: &HashSet<u32>,
) -> Result<(u64, Vec<IoStatRow>), EngineError> {
    let mut pieces: Vec<_> = m
        .sets
        .iter()
        .filter(|s| sets.contains(&s.set_no))
        .flat_map(|s| s.pieces.iter())
        .collect();
    pieces.sort_by_key(|p| std::cmp::Reverse(p.size));
    let n = channels.max(1) as usize;
    let mut lanes: Vec<Vec<_>> = vec![Vec::new(); n];
    let mut load = vec![0u64; n];
    for p in pieces {
        let k = (0..n).min_by_key(|&k| load[k]).expect("channels > 0");
        load[k] += p.size;
        lanes[k].push(p);
    }
    let results = crate::pipeline::pool::each(n, "restore", |w| {
        let mut lane = Lane {
            channel: w.no,
            started: crate::util::now_micros(),
            input: IoCounters::default(),
            rows: Vec::new(),
            out: FileWriter::new(pass.layout.writes.shape),
            writes: &pass.layout.writes,
        };
        let mut n = 0;
        for p in &lanes[w.no as usize - 1] {
            w.check()?;
            let from = sources.get(&p.path).map(Vec::as_slice).unwrap_or_default();
            n += restore_piece(from, p, pass, &mut lane)?;
        }
        Ok((n, lane.finish()?))
    })?;
    let mut restored = 0;
    let mut rows = Vec::new();
    for (n, r) in results {
        restored += n;
        rows.extend(r);
    }
    Ok((restored, rows))
}

/// One restore channel: its writer, and the statistics of the pieces it read (INPUT rows)
/// and the writes it made (its OUTPUT row).
struct Lane<'a> {
    channel: u32,
    writes: &'a super::writes::WritePlan,
    started: i64,
    input: IoCounters,
    rows: Vec<IoStatRow>,
    out: FileWriter,
}

impl Lane<'_> {
    /// Waits for the channel's last write and sync; returns its statistics rows.
    fn finish(mut self) -> Result<Vec<IoStatRow>, EngineError> {
        let output = self.out.finish()?;
        let now = crate::util::now_micros();
        let out = crate::pipeline::stats::stat_row(
            "OUTPUT",
            self.channel,
            Some(format!(
                "restored files ({} writes, {} writer(s))",
                self.writes.way(),
                self.writes.shape.writers
            )),
            &output,
            self.started,
            now,
            (
                self.writes.shape.request as u64,
                self.writes.shape.writers as u64,
            ),
        );
        let agg = crate::pipeline::stats::stat_row(
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
        Ok(self.rows)
    }
}

/// Restores a piece from the first of its sources that is present and intact (the scanner
/// reads it again whole from the next source after a failure); returns the file parts it
/// ended.
fn restore_piece(
    sources: &[Source],
    p: &recman_format::manifest::ManifestPiece,
    pass: &Pass,
    lane: &mut Lane<'_>,
) -> Result<u64, EngineError> {
    let mut sink = RestoreSink {
        pass,
        out: &mut lane.out,
        open: HashMap::new(),
        ended: 0,
    };
    if pass.keep.is_some()
        && let Some(done) =
            super::indexed::restore_by_index(sources, p, pass, &mut sink, lane.channel)?
    {
        lane.input.add(&done.input);
        lane.rows.push(done.row);
        return Ok(done.ended);
    }
    let scan = Scan {
        rel: &p.path,
        piece: Some((p.size, p.crc32c)),
        files: &pass.own,
        wording: Wording::RESTORE,
        channel: lane.channel,
        set_no: None,
    };
    let done = scan_from(
        sources,
        &scan,
        Failover::AnyError,
        &mut [],
        &mut sink,
        pass.progress,
    )?;
    lane.input.add(&done.input);
    lane.rows.push(done.row);
    Ok(sink.ended)
}
