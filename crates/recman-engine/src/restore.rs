//! RESTORE DATABASE: writes a backup into a new data directory and sets up the recovery that
//! brings it to the requested target when PostgreSQL starts there.

mod chain;
mod copy_restore;
mod files;
mod outfile;
mod recovery;
mod target;

pub(crate) use chain::restore_chain;
pub(crate) use files::{Layout, apply_metadata};
pub(crate) use recovery::write_recovery;
pub use target::RecoveryTarget;

use crate::{Context, EngineError, Progress, select_backup};
use recman_format::manifest::BackupManifest;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct RestoreOptions {
    pub to: PathBuf,
    pub target: RecoveryTarget,
    pub from_tag: Option<String>,
    pub channels: u32,
    /// Old tablespace location (or oid, or name) → new location.
    pub tablespace_map: Vec<(String, PathBuf)>,
    /// recovery_target_timeline; None leaves PostgreSQL's default ('latest').
    pub timeline: Option<String>,
    /// Keep the source's archive settings in the restored cluster. Off by default: a restored
    /// copy shares the source's system identifier and would archive a new timeline into the
    /// source's WAL archive.
    pub preserve_archive_mode: bool,
    /// Restore from the image copy with this tag instead of backup sets.
    pub from_copy: Option<String>,
    /// With `from_copy`: move the copy's files into place instead of copying them; the copy
    /// is consumed.
    pub switch_to_copy: bool,
    /// The recman executable and repository that restore_command will call.
    pub recman_exe: PathBuf,
    /// Global options restore_command passes on (`--config FILE`, `--repo-cache DIR`), so
    /// it reaches a remote repository with the same settings; never secrets themselves.
    pub restore_command_args: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct RestoreReport {
    pub backup_id: String,
    pub tag: String,
    pub files: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    pub to: PathBuf,
    pub recovery_settings: Vec<String>,
}

pub(crate) fn load_manifest(ctx: &Context, backup_id: &str) -> Result<BackupManifest, EngineError> {
    let rel = format!(
        "{}/manifest.json",
        crate::util::backup_dir(&ctx.db.name, backup_id)
    );
    let path = format!("{}/{rel}", ctx.repo.location());
    let bytes = ctx.repo.media().get(&rel)?;
    let m: BackupManifest = serde_json::from_slice(&bytes).map_err(|e| {
        EngineError::Invalid(format!(
            "backup manifest {path} is damaged: {e}; hint: restore from another backup with --from-tag"
        ))
    })?;
    if m.version > recman_format::manifest::MANIFEST_VERSION {
        return Err(EngineError::Invalid(format!(
            "backup manifest {path} has version {}, newer than this recman understands; hint: upgrade recman",
            m.version
        )));
    }
    Ok(m)
}

pub fn restore_database(
    ctx: &Context,
    opts: &RestoreOptions,
    progress: &dyn Progress,
) -> Result<RestoreReport, EngineError> {
    let t0 = Instant::now();
    if let Some(tag) = &opts.from_copy {
        return copy_restore::restore_from_copy(ctx, opts, tag, progress, t0);
    }
    let backups = ctx.repo.catalog().backups(ctx.db.id)?;
    let chosen = select_backup(&backups, &opts.target, opts.from_tag.as_deref())?;
    // A level 1 restores with its parents: the newest backup decides what exists.
    let backups_chain = crate::incremental::chain(ctx, load_manifest(ctx, &chosen.id)?)?;
    let manifest = backups_chain
        .last()
        .expect("a chain has at least one backup");
    let layout = files::Layout::new(&opts.to, manifest, &opts.tablespace_map)?;
    layout.check_empty()?;
    progress.message(&format!(
        "restoring backup {} (tag {}) to {}",
        manifest.backup_id,
        manifest.tag,
        opts.to.display()
    ));
    let created = layout.prepare()?;
    let result = chain::restore_chain(ctx, &backups_chain, &layout, opts.channels.max(1), progress)
        .and_then(|(n, bytes, mut rows)| {
            let settings = recovery::write_recovery(ctx, manifest, &layout, opts)?;
            crate::pipeline::stats::record_piece_job(
                &ctx.repo,
                "RESTORE",
                &manifest.backup_id,
                &mut rows,
            );
            Ok((n, bytes, settings))
        });
    match result {
        Ok((files, bytes, recovery_settings)) => Ok(RestoreReport {
            backup_id: manifest.backup_id.clone(),
            tag: manifest.tag.clone(),
            files,
            bytes,
            elapsed: t0.elapsed(),
            to: opts.to.clone(),
            recovery_settings,
        }),
        Err(e) => {
            // A half-restored directory must not be started by mistake.
            created.undo();
            Err(e)
        }
    }
}

pub(crate) fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false)
}
