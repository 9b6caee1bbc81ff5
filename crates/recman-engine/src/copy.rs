//! Incrementally updated image copies (RMAN's BACKUP AS COPY and RECOVER COPY OF DATABASE): a
//! plain data directory in the repository, `<db>/copy/<TAG>/data` (tablespaces under
//! `<db>/copy/<TAG>/tblspc/<oid>`), rolled forward in place by level 1 backups taken against it.
//! `copy.json` beside it is the manifest of the backup state the copy holds; restoring from the
//! copy is a file copy, or a rename (`--switch-to-copy`) for the shortest recovery time.

use crate::context::Context;
use crate::error::EngineError;
use crate::manifest_io::load_manifest;
use crate::pipeline::stages::FileRef;
use crate::pipeline::{Failover, ManifestFiles, NullSink, Scan, Sink, Wording, scan_from};
use crate::progress::{NoProgress, Progress};
use crate::restore::chain::restore_chain;
use crate::restore::copy_state::{copy_layout, file_crc, save_state};
use crate::restore::files::Layout;
use recman_catalog::BackupStatus;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestPiece};
use std::collections::HashSet;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

// The copy's location and state live below the restore, which reads them; kept here too
// because the command crate names them as `copy::…`.
pub use crate::restore::copy_state::{copy_rel, load_copy};

/// Materializes backup `backup_id` (and its chain) as the copy `tag`.
pub fn make_copy(
    ctx: &Context,
    tag: &str,
    backup_id: &str,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    let chain = crate::incremental::chain(ctx, load_manifest(ctx, backup_id)?)?;
    let newest = chain.last().expect("non-empty chain");
    let layout = copy_layout(ctx, tag, newest)?;
    let root = ctx.repo.disk_path(&copy_rel(&ctx.db.name, tag))?;
    if root.exists() {
        return Err(crate::refusal::Backups::CopyExistsAt {
            tag: tag.to_string(),
            root: root.display().to_string(),
        }
        .into());
    }
    let made = layout.prepare()?;
    if let Err(e) = restore_chain(ctx, &chain, &layout, 1, progress) {
        made.undo();
        let _ = std::fs::remove_dir_all(&root);
        return Err(e);
    }
    save_state(ctx, tag, newest)
}

/// The parent a level 1 FOR RECOVER OF COPY builds on: the copy's current state.
pub fn copy_increment(
    ctx: &Context,
    tag: &str,
) -> Result<Option<crate::incremental::Increment>, EngineError> {
    let Some(state) = load_copy(ctx, tag)? else {
        return Ok(None);
    };
    let start: recman_pg::Lsn = state.start_lsn.parse()?;
    let known = state
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| e.path.clone())
        .collect();
    Ok(Some(crate::incremental::Increment {
        parent_id: state.backup_id.clone(),
        parent_start_lsn: start.0,
        known,
    }))
}

/// Rolls the copy forward with the level 1s taken for it that ended by `until` (unix micros);
/// returns the ids applied.
pub fn recover_copy(
    ctx: &Context,
    tag: &str,
    until: Option<i64>,
    progress: &dyn Progress,
) -> Result<Vec<String>, EngineError> {
    let _lock = ctx.repo.lock("recover copy")?;
    // The seeds' rolling script recovers before its first backup made the copy: nothing to do.
    let Some(mut state) = load_copy(ctx, tag)? else {
        progress.notice(&format!("no image copy {tag} yet: nothing to recover (a level 1 --for-recover-of-copy --tag {tag} makes it)"));
        return Ok(Vec::new());
    };
    let mut applied = Vec::new();
    loop {
        // A level 1 taken for this copy (same tag) applies when its base is not newer than the
        // copy's state and it starts after it: it then holds every change the copy lacks. The
        // newest such one is enough, as in RMAN.
        let state_start: recman_pg::Lsn = state.start_lsn.parse()?;
        let mut best: Option<(recman_pg::Lsn, BackupManifest)> = None;
        for b in ctx.repo.catalog().backups(ctx.db.id)? {
            if b.status != BackupStatus::Available
                || b.backup_type != "LEVEL1"
                || !b.tag.eq_ignore_ascii_case(tag)
            {
                continue;
            }
            if until.is_some_and(|u| b.stop_time.is_none_or(|t| t > u)) {
                continue;
            }
            let m = load_manifest(ctx, &b.id)?;
            let start: recman_pg::Lsn = m.start_lsn.parse()?;
            let base = m
                .parent_start_lsn
                .as_deref()
                .map(str::parse::<recman_pg::Lsn>)
                .transpose()?;
            if start > state_start
                && base.is_some_and(|p| p <= state_start)
                && best.as_ref().is_none_or(|(s, _)| start > *s)
            {
                best = Some((start, m));
            }
        }
        let Some((_, l1)) = best else { break };
        progress.message(&format!(
            "applying level 1 backup {} to image copy {tag}",
            l1.backup_id
        ));
        state = apply(ctx, tag, &state, l1)?;
        save_state(ctx, tag, &state)?;
        applied.push(state.backup_id.clone());
    }
    Ok(applied)
}

/// Writes a level 1's blocks into the copy in place and returns the copy's new state.
fn apply(
    ctx: &Context,
    tag: &str,
    state: &BackupManifest,
    l1: BackupManifest,
) -> Result<BackupManifest, EngineError> {
    let layout = copy_layout(ctx, tag, &l1)?;
    // Every piece is checked whole (chunks, files against the manifest, the piece against
    // its record) before a byte of the copy changes: a damaged level 1 leaves the copy as it
    // was, still usable and still rolled forward by the next good level 1.
    let files = ManifestFiles::new(&l1);
    let pieces: Vec<_> = l1.sets.iter().flat_map(|s| s.pieces.iter()).collect();
    let mut sources = Vec::with_capacity(pieces.len());
    for piece in &pieces {
        sources.push(crate::pieces::sources(&ctx.repo, &piece.path)?);
    }
    // One pass of every piece into `sink` (a sink starts afresh at each piece's `begin`).
    let pass = |sink: &mut dyn Sink| -> Result<(), EngineError> {
        for (piece, from) in pieces.iter().zip(&sources) {
            scan_from(
                from,
                &scan_of(piece, &files),
                Failover::Missing,
                &mut [],
                sink,
                &NoProgress,
            )?;
        }
        Ok(())
    };
    pass(&mut NullSink::default())?;
    for e in &l1.entries {
        let p = layout.real(&e.path);
        match e.kind {
            EntryKind::Dir => std::fs::create_dir_all(&p)
                .map_err(|er| EngineError::io("create directory", &p, er))?,
            EntryKind::Symlink if !p.exists() => {
                if let Some((_, loc)) = e.path.strip_prefix("pg_tblspc/").and_then(|oid| {
                    layout
                        .tablespaces
                        .iter()
                        .find(|(o, _)| o.to_string() == oid)
                }) {
                    std::fs::create_dir_all(loc)
                        .map_err(|er| EngineError::io("create directory", loc, er))?;
                    std::os::unix::fs::symlink(loc, &p)
                        .map_err(|er| EngineError::io("create symlink", &p, er))?;
                }
            }
            _ => {}
        }
    }
    pass(&mut ApplySink { layout: &layout })?;
    // Sizes and existence follow the level 1: truncation, extension, drops.
    let now: HashSet<&str> = l1
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| e.path.as_str())
        .collect();
    for e in state
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File && !now.contains(e.path.as_str()))
    {
        let _ = std::fs::remove_file(layout.real(&e.path));
    }
    let mut next = l1.clone();
    for e in next
        .entries
        .iter_mut()
        .filter(|e| e.kind == EntryKind::File)
    {
        let p = layout.real(&e.path);
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&p)
            .map_err(|er| EngineError::io("open", &p, er))?;
        f.set_len(e.size.unwrap_or(0))
            .and_then(|_| f.sync_all())
            .map_err(|er| EngineError::io("set length of", &p, er))?;
        // A file the level 1 holds whole comes with its whole-file checksum; one it changed
        // block by block gets it computed again, for restore to verify.
        if e.incremental {
            e.crc32c = Some(file_crc(&p)?);
        }
        e.incremental = false;
        e.sections = Vec::new();
    }
    next.sets = Vec::new();
    next.parent = None;
    next.parent_start_lsn = None;
    Ok(next)
}

fn scan_of<'a>(piece: &'a ManifestPiece, files: &'a ManifestFiles) -> Scan<'a> {
    Scan {
        rel: &piece.path,
        piece: Some((piece.size, piece.crc32c)),
        files,
        wording: Wording::APPLY,
        channel: 1,
        set_no: None,
    }
}

/// Writes a level 1's chunks into the copy's files in place.
struct ApplySink<'a> {
    layout: &'a Layout,
}

impl Sink for ApplySink<'_> {
    fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let p = self.layout.real(file.name);
        let out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&p)
            .map_err(|e| EngineError::io("open", &p, e))?;
        out.write_all_at(data, offset)
            .map_err(|e| EngineError::io("write", &p, e))
    }
    fn file_end(&mut self, _: &FileRef, _: u64, _: u32) -> Result<(), EngineError> {
        Ok(())
    }
}
