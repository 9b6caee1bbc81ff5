//! RESTORE ... FROM COPY: the image copy's files copied (and verified) into the new data
//! directory, or moved there with --switch-to-copy; then the same recovery settings as any
//! restore, from the backup state the copy holds.

use super::copy_state::{copy_layout, copy_rel, load_copy};
use super::{
    Layout, RecoveryTarget, RestoreOptions, RestoreReport, apply_metadata, write_recovery,
};
use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
use recman_format::manifest::{BackupManifest, EntryKind};
use std::io::{Read, Write};
use std::time::Instant;

fn micros(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.timestamp_micros())
        .unwrap_or(0)
}

/// Refuses a target the copy is already past: recovery cannot go backwards.
pub(super) fn check_target(
    tag: &str,
    state: &BackupManifest,
    target: &RecoveryTarget,
) -> Result<(), EngineError> {
    let stop: recman_pg::Lsn = state.stop_lsn.parse()?;
    let past = match target {
        RecoveryTarget::Latest => false,
        RecoveryTarget::Time { micros: t, .. } => micros(&state.stop_time) > *t,
        RecoveryTarget::Lsn(l) | RecoveryTarget::Name { lsn: l, .. } => stop > *l,
        RecoveryTarget::Xid(x) => state.stop_next_xid > *x,
    };
    if past {
        return Err(crate::refusal::Backups::CopyPastTarget {
            tag: tag.to_string(),
            backup_id: state.backup_id.to_string(),
            stop_time: state.stop_time.to_string(),
            stop_lsn: state.stop_lsn.to_string(),
            target: target.to_string(),
        }
        .into());
    }
    Ok(())
}

pub fn restore_from_copy(
    ctx: &Context,
    opts: &RestoreOptions,
    tag: &str,
    progress: &dyn Progress,
    t0: Instant,
) -> Result<RestoreReport, EngineError> {
    let state = load_copy(ctx, tag)?.ok_or_else(|| {
        EngineError::NotFound(format!("there is no image copy with tag {tag}; hint: make one with `recman backup database --as-copy --tag {tag}`"))
    })?;
    check_target(tag, &state, &opts.target)?;
    let layout = Layout::new(&opts.to, &state, &opts.tablespace_map)?;
    // Switching moves the copy's own files: only a copied restore is marked, so only its
    // interrupted target may be cleared.
    for d in layout.check_empty(opts.force && !opts.switch_to_copy)? {
        progress.notice(&format!(
            "cleared {}: an interrupted restore had written it",
            d.display()
        ));
    }
    let source = copy_layout(ctx, tag, &state)?;
    let files: Vec<_> = state
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .collect();
    let bytes: u64 = files.iter().filter_map(|e| e.size).sum();
    if opts.switch_to_copy {
        switch(ctx, tag, &source, &layout)?;
    } else {
        let made = layout.prepare()?;
        if let Err(e) = layout
            .mark()
            .and_then(|()| copy_files(&state, &source, &layout, progress, bytes))
        {
            made.undo();
            return Err(e);
        }
    }
    let settings = write_recovery(ctx, &state, &layout, opts, None)?;
    if !opts.switch_to_copy {
        layout.unmark()?;
    }
    Ok(RestoreReport {
        backup_id: state.backup_id.clone(),
        tag: tag.to_uppercase(),
        files: files.len() as u64,
        bytes,
        elapsed: t0.elapsed(),
        to: opts.to.clone(),
        recovery_settings: settings,
    })
}

fn copy_files(
    state: &BackupManifest,
    source: &Layout,
    to: &Layout,
    progress: &dyn Progress,
    total: u64,
) -> Result<(), EngineError> {
    crate::restore::files::make_entries(state, to)?;
    progress.start("restore", total);
    let mut buf = vec![0u8; 1 << 20];
    for e in state.entries.iter().filter(|e| e.kind == EntryKind::File) {
        let (from, dest) = (source.real(&e.path), to.real(&e.path));
        let mut r = std::fs::File::open(&from)
            .map_err(|er| EngineError::io("open image copy file", &from, er))?;
        let mut w =
            std::fs::File::create(&dest).map_err(|er| EngineError::io("create", &dest, er))?;
        let mut crc = 0u32;
        loop {
            // Stopped: the caller removes what was written.
            crate::stop::check()?;
            let n = r
                .read(&mut buf)
                .map_err(|er| EngineError::io("read", &from, er))?;
            if n == 0 {
                break;
            }
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            w.write_all(&buf[..n])
                .map_err(|er| EngineError::io("write", &dest, er))?;
            progress.advance(n as u64);
        }
        if e.crc32c.is_some_and(|c| c != crc) {
            return Err(EngineError::Corrupt(format!(
                "image copy file {} does not match its recorded checksum; hint: the copy is damaged, restore from backup sets instead",
                from.display()
            )));
        }
        w.sync_all()
            .map_err(|er| EngineError::io("sync", &dest, er))?;
    }
    progress.finish();
    apply_metadata(state, to)
}

/// Moves the copy's data directory and tablespaces into place: no data is copied, so the
/// copy must be on the same file system as the destination.
fn switch(ctx: &Context, tag: &str, source: &Layout, to: &Layout) -> Result<(), EngineError> {
    let mv = |a: &std::path::Path, b: &std::path::Path| -> Result<(), EngineError> {
        if b.exists() {
            std::fs::remove_dir(b).map_err(|e| EngineError::io("replace empty directory", b, e))?;
        }
        if let Some(parent) = b.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| EngineError::io("create directory", parent, e))?;
        }
        std::fs::rename(a, b).map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::EXDEV) { "; hint: the copy is on another file system, restore with --from-copy but without --switch-to-copy" } else { "" };
            EngineError::Failed {
                kind: crate::error::ErrorKind::of_io(&e),
                message: format!("cannot move {} to {}: {e}{hint}", a.display(), b.display()),
            }
        })
    };
    mv(&source.to, &to.to)?;
    for (oid, loc) in &to.tablespaces {
        if let Some((_, from)) = source.tablespaces.iter().find(|(o, _)| o == oid) {
            mv(from, loc)?;
        }
        let link = to.to.join("pg_tblspc").join(oid.to_string());
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(loc, &link)
            .map_err(|e| EngineError::io("create symlink", &link, e))?;
    }
    // The copy now is the database: it no longer exists in the repository.
    let root = ctx.repo.disk_path(&copy_rel(&ctx.db.name, tag))?;
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
