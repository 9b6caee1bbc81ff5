//! BACKUP SYNTHETIC-FULL: a new level 0 merged from a chain (a level 0 and its level 1s) inside
//! the repository, without reading the database. Each file is rebuilt window by window from
//! the newest backup that holds it whole and the level 1s after it, newest block winning, and
//! written as ordinary pieces; the result stands for the same point in time as the chain's
//! newest backup and is itself a parent for later level 1s.

use crate::context::Context;
use crate::error::EngineError;
use crate::incremental::chain;
use crate::manifest_io::load_manifest;
use crate::pipeline::{OutputShape, SetWriter};
use crate::progress::Progress;
use crate::util::{backup_dir, now_micros};
use recman_catalog::{BackupRecord, BackupStatus};
use recman_format::manifest::{BackupManifest, EntryKind, ManifestSet};
use recman_format::{ChunkLoc, Compression, PieceHeader, SetFile, read_chunk_at, read_index};
use std::collections::HashMap;

const WINDOW: u64 = 1 << 20;
const FILES_PER_SET: usize = 64;

/// Where one file's chunks are, per backup of the chain (oldest first), and the newest backup
/// holding it whole: an older copy of the same name may be an earlier incarnation of the file.
type Locations = HashMap<String, (usize, Vec<Vec<(String, ChunkLoc)>>)>;

pub struct SyntheticOptions {
    pub from: Option<String>,
    pub tag: Option<String>,
    pub compression: Compression,
}

pub fn synthetic_full(
    ctx: &Context,
    opts: &SyntheticOptions,
    progress: &dyn Progress,
) -> Result<BackupRecord, EngineError> {
    let _lock = ctx.repo.lock("backup synthetic-full")?;
    ctx.repo.mac_key()?;
    let base = crate::validate::find_backup(ctx, opts.from.as_deref())?;
    if base.status != BackupStatus::Available {
        return Err(crate::refusal::Backups::NotAvailable {
            backup_id: base.id.clone(),
            status: base.status.as_str().to_string(),
            for_: crate::refusal::Unavailable::Base,
        }
        .into());
    }
    let chain = chain(ctx, load_manifest(ctx, &base.id)?)?;
    let locs = locate(ctx, &chain)?;
    let started = chrono::Utc::now();
    let stamp = started.format("%Y%m%dT%H%M%S").to_string();
    let id = format!("B{stamp}{:03}", started.timestamp_subsec_millis());
    let tag = opts
        .tag
        .clone()
        .map(|t| t.to_uppercase())
        .unwrap_or_else(|| format!("SYNTH{stamp}"));
    let mut rec = base.clone();
    rec.id = id.clone();
    rec.tag = tag;
    rec.backup_type = "LEVEL0".into();
    rec.status = BackupStatus::Running;
    rec.compression = opts.compression.to_string();
    rec.channels = 1;
    rec.pid = std::process::id();
    rec.error = None;
    ctx.repo.catalog().insert_backup(&rec)?;
    let dir = backup_dir(&ctx.db.name, &id);
    match write(ctx, opts, &chain, &locs, &mut rec, &dir, progress) {
        Ok(()) => Ok(rec),
        Err(e) => {
            rec.status = BackupStatus::Failed;
            rec.error = Some(e.to_string());
            rec.stop_time = Some(now_micros());
            let _ = ctx.repo.catalog().update_backup(&rec);
            let _ = ctx.repo.remove_prefix(&dir);
            Err(crate::backup::explain_failed(e, &rec, &dir))
        }
    }
}

/// Reads the index of every piece of the chain: no data yet.
fn locate(ctx: &Context, chain: &[BackupManifest]) -> Result<Locations, EngineError> {
    let mut locs: Locations = HashMap::new();
    for (k, m) in chain.iter().enumerate() {
        for p in m.sets.iter().flat_map(|s| s.pieces.iter()) {
            let mut f = crate::pieces::open(&ctx.repo, &p.path)?;
            let (_, index) = read_index(&mut f).map_err(|e| EngineError::piece(&p.path, e))?;
            for file in index.files {
                let v = locs
                    .entry(file.path)
                    .or_insert_with(|| (0, vec![Vec::new(); chain.len()]));
                v.1[k].extend(file.chunks.into_iter().map(|c| (p.path.clone(), c)));
            }
        }
        for e in m
            .entries
            .iter()
            .filter(|e| e.kind == EntryKind::File && !e.incremental)
        {
            if let Some(v) = locs.get_mut(&e.path) {
                v.0 = k;
            }
        }
    }
    Ok(locs)
}

fn write(
    ctx: &Context,
    opts: &SyntheticOptions,
    chain: &[BackupManifest],
    locs: &Locations,
    rec: &mut BackupRecord,
    dir: &str,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    let newest = chain.last().expect("non-empty chain");
    let mut m = newest.clone();
    m.backup_id = rec.id.clone();
    m.tag = rec.tag.clone();
    m.backup_type = "LEVEL0".into();
    m.incremental_level = Some(0);
    m.cumulative = false;
    m.parent = None;
    m.parent_start_lsn = None;
    // Merged inside the repository: nothing was read from the cluster.
    m.read = None;
    m.compression = opts.compression.to_string();
    m.channels = 1;
    m.sets = Vec::new();
    let files: Vec<usize> = (0..m.entries.len())
        .filter(|&i| m.entries[i].kind == EntryKind::File)
        .collect();
    progress.start(
        "synthetic full",
        files.iter().filter_map(|&i| m.entries[i].size).sum(),
    );
    let mut handles: HashMap<String, Box<dyn recman_media::MediaReader>> = HashMap::new();
    let mut pieces = Vec::new();
    let mut rows = Vec::new();
    for (set_k, group) in files.chunks(FILES_PER_SET).enumerate() {
        // Stopped: the error path records the backup FAILED and removes its pieces.
        crate::stop::check()?;
        let set_no = set_k as u32 + 1;
        let rel = recman_catalog::layout::piece(dir, set_no, 1);
        let header = PieceHeader {
            backup_id: rec.id.clone(),
            db_name: ctx.db.name.clone(),
            system_identifier: ctx.db.system_identifier,
            set_no,
            piece_no: 1,
            compression: opts.compression,
            created_unix: now_micros() / 1_000_000,
            mac: None,
            files: group
                .iter()
                .enumerate()
                .map(|(slot, &i)| SetFile {
                    index: slot as u32,
                    path: m.entries[i].path.clone(),
                })
                .collect(),
        };
        let mut w = SetWriter::create(
            ctx.repo.media().as_ref(),
            ctx.repo.location(),
            &rel,
            &header,
            OutputShape::default(),
        )?;
        for (slot, &i) in group.iter().enumerate() {
            let (size, crc) = rebuild(
                ctx,
                locs,
                &m.entries[i].path,
                m.entries[i].size.unwrap_or(0),
                slot as u32,
                &mut w,
                &mut handles,
                progress,
            )?;
            w.end_file(slot as u32, size, crc)?;
            let e = &mut m.entries[i];
            e.crc32c = Some(crc);
            e.set_no = Some(set_no);
            e.incremental = false;
            e.sections = Vec::new();
        }
        let piece = w.finish()?;
        rows.push(piece.output_row(1, set_no, 1));
        m.sets.push(ManifestSet {
            set_no,
            channel: 1,
            pieces: vec![piece.manifest(1)],
        });
        pieces.push(piece.record(&rec.id, set_no, 1, 1, group.len() as u32));
    }
    progress.finish();
    let mpath = format!("{dir}/manifest.json");
    let mut mf = ctx.repo.create_atomic(&mpath)?;
    m.version = recman_format::manifest::MANIFEST_VERSION;
    crate::manifest_io::write(&ctx.repo, &mut mf, &m, &mpath)?;
    mf.commit()?;
    rec.written_bytes = pieces.iter().map(|p| p.size).sum();
    rec.status = BackupStatus::Available;
    ctx.repo.catalog().complete_backup(rec, &pieces, &[])?;
    crate::pipeline::stats::record_job(&ctx.repo, &rec.id, "BACKUP", &rec.id, &mut rows);
    Ok(())
}

/// Writes the whole content of one file, merged from the chain; returns (size, crc).
#[allow(clippy::too_many_arguments)]
fn rebuild(
    ctx: &Context,
    locs: &Locations,
    path: &str,
    size: u64,
    slot: u32,
    w: &mut SetWriter,
    handles: &mut HashMap<String, Box<dyn recman_media::MediaReader>>,
    progress: &dyn Progress,
) -> Result<(u64, u32), EngineError> {
    let empty = (0, Vec::new());
    let (whole_at, per_backup) = locs.get(path).unwrap_or(&empty);
    let whole_at = *whole_at;
    let mut crc = 0u32;
    let mut start = 0u64;
    let mut buf = Vec::new();
    while start < size {
        let len = WINDOW.min(size - start);
        buf.clear();
        buf.resize(len as usize, 0);
        for chunks in per_backup.iter().skip(whole_at) {
            for (piece, loc) in chunks {
                let (a, b) = (loc.file_offset, loc.file_offset + loc.raw_len as u64);
                if b <= start || a >= start + len {
                    continue;
                }
                let f = match handles.get_mut(piece) {
                    Some(f) => f,
                    None => {
                        let f = crate::pieces::open(&ctx.repo, piece)?;
                        handles.entry(piece.clone()).or_insert(f)
                    }
                };
                let data = read_chunk_at(f, loc).map_err(|e| EngineError::piece(piece, e))?;
                let (from, to) = (a.max(start), b.min(start + len));
                buf[(from - start) as usize..(to - start) as usize]
                    .copy_from_slice(&data[(from - a) as usize..(to - a) as usize]);
            }
        }
        crc = crc32c::crc32c_append(crc, &buf);
        w.chunk(slot, start, &buf)?;
        progress.advance(len);
        start += len;
    }
    Ok((size, crc))
}
