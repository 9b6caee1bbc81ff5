//! `catalog import --copy`: an imported backup brought into recman's own format, under its
//! own id. Its files are read through the origin (each checked against the origin's checksum
//! as it is read, an incremental chain combined) and written as backup sets in recman's
//! repository, and the WAL that makes it consistent goes into recman's archive; its manifest
//! then names its pieces and no origin, so restore, validate and retention treat it as a full
//! backup of recman's own, with the same start and stop LSN, timeline and backup label. The
//! origin's files are only read: they may be moved or removed afterwards.

use crate::context::Context;
use crate::error::EngineError;
use crate::foreign::{
    ForeignEntry, ImportError, Opened, file_failure, open_origin, read_foreign_wal,
};
use crate::manifest_io::load_manifest;
use crate::pipeline::{OutputShape, SetWriter};
use crate::progress::Progress;
use crate::util::{backup_dir, now_micros};
use recman_catalog::PieceRecord;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestSet};
use recman_format::{Compression, PieceHeader, SetFile};
use std::collections::HashMap;
use std::io::Read;

const FILES_PER_SET: usize = 64;
const CHUNK: usize = 1 << 20;

/// One imported backup copied into recman's format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopiedBackup {
    pub id: String,
    pub files: u64,
    pub bytes: u64,
    /// The segments put into recman's archive (the rest were there already).
    pub wal_archived: Vec<String>,
}

/// Copies imported backup `id` into recman's format; None when it is recman's already (copied
/// by an earlier run). Call under the repository lock.
pub fn copy_imported(
    ctx: &Context,
    id: &str,
    progress: &dyn Progress,
) -> Result<Option<CopiedBackup>, EngineError> {
    let m = load_manifest(ctx, id)?;
    if m.origin.is_none() {
        return Ok(None);
    }
    refuse_a_base(ctx, id)?;
    // A repository that requires MACs refuses before anything is written.
    ctx.repo.mac_key()?;
    let chain = crate::incremental::chain(ctx, m.clone())?;
    let opened = open_origin(&chain)?;
    if opened.streams() > 0 {
        return Err(crate::refusal::Import::CopyOfTar {
            what: opened.describe(),
        }
        .into());
    }
    let wal_archived = archive_wal(ctx, &m, opened.as_ref())?;
    let (copy, pieces) = write_sets(ctx, &m, opened.as_ref(), progress)?;
    let files = record_copy(ctx, copy, &pieces)?;
    Ok(Some(CopiedBackup {
        id: id.to_string(),
        files: files.0,
        bytes: files.1,
        wal_archived,
    }))
}

/// Makes the copy the backup: its manifest over the imported one, then its catalog row;
/// returns its files and bytes. Pieces no manifest names are removed; once the manifest names
/// them they stay, and `catalog start-with` records them should the catalog fail here.
fn record_copy(
    ctx: &Context,
    mut copy: BackupManifest,
    pieces: &[PieceRecord],
) -> Result<(u64, u64), EngineError> {
    let id = copy.backup_id.clone();
    copy.origin = None;
    copy.backup_type = "FULL".into();
    copy.parent = None;
    copy.parent_start_lsn = None;
    copy.incremental_level = None;
    copy.compression = Compression::None.to_string();
    copy.channels = 1;
    copy.version = recman_format::manifest::MANIFEST_VERSION;
    let mut rec = ctx
        .repo
        .catalog()
        .backup(&id)?
        .ok_or_else(|| EngineError::NotFound(format!("backup {id} is not in the catalog")))?;
    let files = copy
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .count() as u64;
    let bytes = copy.entries.iter().filter_map(|e| e.size).sum();
    let mpath = format!("{}/manifest.json", backup_dir(&ctx.db.name, &id));
    let written = (|| {
        let mut mf = ctx.repo.create_atomic(&mpath)?;
        crate::manifest_io::write(&ctx.repo, &mut mf, &copy, &mpath)?;
        Ok::<_, EngineError>(mf.commit()?)
    })();
    if let Err(e) = written {
        remove_pieces(ctx, pieces);
        return Err(e);
    }
    rec.backup_type = "FULL".into();
    rec.written_bytes = pieces.iter().map(|p| p.size).sum();
    rec.file_count = files;
    rec.compression = copy.compression.clone();
    ctx.repo.catalog().complete_backup(&rec, pieces, &[])?;
    Ok((files, bytes))
}

/// A copy that did not become the backup leaves no pieces behind.
fn remove_pieces(ctx: &Context, pieces: &[PieceRecord]) {
    for p in pieces {
        let _ = ctx.repo.remove_object(&p.path);
    }
}

/// A backup an imported incremental still reads through its origin stays imported: copied,
/// the incremental's chain would lose the files it builds on.
fn refuse_a_base(ctx: &Context, id: &str) -> Result<(), EngineError> {
    for b in ctx.repo.catalog().backups(ctx.db.id)? {
        if b.backup_type != crate::backup_types::FOREIGN || b.id == id {
            continue;
        }
        let child = load_manifest(ctx, &b.id)?;
        if child.parent.as_deref() == Some(id) {
            return Err(crate::refusal::Import::CopyBaseFirst {
                backup_id: id.to_string(),
                child: b.id.to_string(),
            }
            .into());
        }
    }
    Ok(())
}

/// Puts the segments from the backup's start to its end into recman's archive, from the
/// backup's pg_wal or the imported archive, unless recman's archive has them already.
fn archive_wal(
    ctx: &Context,
    m: &BackupManifest,
    o: &dyn Opened,
) -> Result<Vec<String>, EngineError> {
    let (start, stop): (recman_pg::Lsn, recman_pg::Lsn) =
        (m.start_lsn.parse()?, m.stop_lsn.parse()?);
    let in_backup: HashMap<&str, &ForeignEntry> = o
        .entries()
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .filter_map(|e| e.path.strip_prefix("pg_wal/").map(|n| (n, e)))
        .collect();
    let opts = crate::archive::PushOptions::new(Compression::None);
    let spool = std::env::temp_dir();
    let mut archived = Vec::new();
    for w in recman_pg::wal_segments_between(m.timeline, start, stop, m.wal_segment_size) {
        let name = w.to_string();
        if ctx.repo.catalog().wal(ctx.db.id, &name)?.is_some() {
            continue;
        }
        let data = match in_backup.get(name.as_str()) {
            Some(e) => read_whole(o, e)?,
            None => {
                let mut failures = Vec::new();
                read_foreign_wal(&ctx.repo, &ctx.db, &name, &mut failures)?.ok_or_else(
                    || {
                        EngineError::NotFound(format!(
                            "wal segment {name}, which backup {} needs to become consistent, is in neither its pg_wal nor an imported archive{}; hint: import the archive it is in, or keep this backup read in place",
                            m.backup_id,
                            if failures.is_empty() { String::new() } else { format!(" ({})", failures.join("; ")) }
                        ))
                    },
                )?
            }
        };
        crate::archive::host::push_from_host(&ctx.repo, &ctx.db, &name, &data, &spool, &opts)?;
        archived.push(name);
    }
    Ok(archived)
}

fn read_whole(o: &dyn Opened, e: &ForeignEntry) -> Result<Vec<u8>, EngineError> {
    let mut data = Vec::with_capacity(e.size as usize);
    o.open(e)?
        .read_to_end(&mut data)
        .map_err(|err| copy_failed(o, e, &err.to_string()))?;
    Ok(data)
}

fn copy_failed(o: &dyn Opened, e: &ForeignEntry, why: &str) -> EngineError {
    EngineError::Corrupt(format!(
        "{}; hint: nothing of the copy was kept: the backup stays imported, read in place; validate it (`recman validate backup`)",
        file_failure(o, e, why)
    ))
}

/// Writes every file of `m` but its pg_wal (in recman's archive now) into backup sets;
/// returns `m` with its entries pointing at them and its sets, and the pieces' records.
fn write_sets(
    ctx: &Context,
    m: &BackupManifest,
    o: &dyn Opened,
    progress: &dyn Progress,
) -> Result<(BackupManifest, Vec<PieceRecord>), EngineError> {
    let dir = backup_dir(&ctx.db.name, &m.backup_id);
    let by_path: HashMap<&str, &ForeignEntry> =
        o.entries().iter().map(|e| (e.path.as_str(), e)).collect();
    let mut copy = m.clone();
    copy.entries
        .retain(|e| e.kind != EntryKind::File || !e.path.starts_with("pg_wal/"));
    copy.sets = Vec::new();
    let files: Vec<usize> = (0..copy.entries.len())
        .filter(|&i| copy.entries[i].kind == EntryKind::File)
        .collect();
    progress.start(
        "copy",
        files.iter().filter_map(|&i| copy.entries[i].size).sum(),
    );
    let mut pieces = Vec::new();
    let result = (|| {
        for (k, group) in files.chunks(FILES_PER_SET).enumerate() {
            crate::stop::check()?;
            let set_no = k as u32 + 1;
            let paths: Vec<String> = group
                .iter()
                .map(|&i| copy.entries[i].path.clone())
                .collect();
            let (piece, crcs) = write_set(
                ctx,
                &copy.backup_id,
                &dir,
                set_no,
                &paths,
                &by_path,
                o,
                progress,
            )?;
            for (&i, crc) in group.iter().zip(crcs) {
                let e = &mut copy.entries[i];
                e.crc32c = Some(crc);
                e.set_no = Some(set_no);
                e.incremental = false;
                e.sections = Vec::new();
            }
            copy.sets.push(ManifestSet {
                set_no,
                channel: 1,
                pieces: vec![piece.manifest(1)],
            });
            pieces.push(piece.record(&copy.backup_id, set_no, 1, 1, group.len() as u32));
        }
        Ok::<_, EngineError>(())
    })();
    progress.finish();
    if let Err(e) = result {
        // The backup's manifest is still the imported one: only the pieces written go.
        remove_pieces(ctx, &pieces);
        let _ = ctx.repo.remove_object(&recman_catalog::layout::piece(
            &dir,
            pieces.len() as u32 + 1,
            1,
        ));
        return Err(e);
    }
    Ok((copy, pieces))
}

/// Writes one set holding `paths`, read through the origin; returns its piece and each file's
/// CRC-32C.
#[allow(clippy::too_many_arguments)]
fn write_set(
    ctx: &Context,
    id: &str,
    dir: &str,
    set_no: u32,
    paths: &[String],
    by_path: &HashMap<&str, &ForeignEntry>,
    o: &dyn Opened,
    progress: &dyn Progress,
) -> Result<(crate::pipeline::WrittenPiece, Vec<u32>), EngineError> {
    let rel = recman_catalog::layout::piece(dir, set_no, 1);
    let header = PieceHeader {
        backup_id: id.to_string(),
        db_name: ctx.db.name.clone(),
        system_identifier: ctx.db.system_identifier,
        set_no,
        piece_no: 1,
        compression: Compression::None,
        created_unix: now_micros() / 1_000_000,
        mac: None,
        files: paths
            .iter()
            .enumerate()
            .map(|(slot, p)| SetFile {
                index: slot as u32,
                path: p.clone(),
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
    let mut crcs = Vec::with_capacity(paths.len());
    let mut buf = vec![0u8; CHUNK];
    for (slot, path) in paths.iter().enumerate() {
        let e = by_path.get(path.as_str()).ok_or_else(|| {
            EngineError::from(ImportError::NotFound(format!(
                "{} no longer lists file {path} that was imported; hint: the origin changed since `catalog import`: import it again",
                o.describe()
            )))
        })?;
        let (size, crc) = copy_file(o, e, slot as u32, &mut w, &mut buf, progress)?;
        w.end_file(slot as u32, size, crc)?;
        crcs.push(crc);
    }
    Ok((w.finish()?, crcs))
}

/// Streams one file from the origin into the set at `slot`; returns (size, crc).
fn copy_file(
    o: &dyn Opened,
    e: &ForeignEntry,
    slot: u32,
    w: &mut SetWriter,
    buf: &mut [u8],
    progress: &dyn Progress,
) -> Result<(u64, u32), EngineError> {
    let mut r = o.open(e)?;
    let (mut at, mut crc) = (0u64, 0u32);
    loop {
        let n = crate::foreign::read_full(&mut r, buf)
            .map_err(|err| copy_failed(o, e, &err.to_string()))?;
        if n == 0 {
            return Ok((at, crc));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        w.chunk(slot, at, &buf[..n])?;
        at += n as u64;
        progress.advance(n as u64);
    }
}
