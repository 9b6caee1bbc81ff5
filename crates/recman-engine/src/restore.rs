//! RESTORE DATABASE: writes a backup into a new data directory and sets up the recovery that
//! brings it to the requested target when PostgreSQL starts there.

mod caller;
pub(crate) mod chain;
mod confine;
mod copy_restore;
pub(crate) mod copy_state;
pub(crate) mod databases;
pub mod dest;
mod dest_pipe;
pub mod dest_remote;
pub mod dest_serve;
pub(crate) mod files;
mod foreign;
mod indexed;
mod outfile;
mod partial;
mod plan;
mod plan_wal;
mod recovery;
mod sink;
mod timeline;
mod verify;
mod writer;
mod writes;

pub(crate) use crate::manifest_io::load_manifest;
pub use crate::recovery_target::RecoveryTarget;
pub(crate) use files::{Layout, apply_metadata};
pub use partial::{FIRST_NORMAL_OBJECT_ID, Partial, SYSTEM_DATABASES, Selection, filenode_of};
pub use plan::{Estimate, PlannedBackup, PlannedCopy, PlannedPiece, RestorePlan, plan_restore};
pub use plan_wal::{PlannedSegment, TimelineSpan, WalPlan, WalSource};
pub use recovery::quote_shell;
pub(crate) use recovery::write_recovery;
pub use verify::{RestoreValidateReport, Verified, validate_restore};

use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
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
    /// Restore although the WAL from the backup to the target has a gap after the backup's
    /// end: recovery then ends at the gap.
    pub allow_wal_gap: bool,
    /// Clear a target directory an interrupted restore wrote (it holds the restore's marker)
    /// before restoring into it; a directory without the marker is still refused.
    pub force: bool,
    /// How restored files are written; None chooses direct or buffered writes while the restore
    /// writes, measuring both ([`dest::Destination::plan_writes`]).
    pub write_mode: Option<dest::WriteMode>,
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

pub fn restore_database(
    ctx: &Context,
    opts: &RestoreOptions,
    progress: &dyn Progress,
) -> Result<RestoreReport, EngineError> {
    restore_database_selected(ctx, opts, &Selection::Whole, progress).map(|(r, _)| r)
}

/// [`restore_database`] writing only what `selection` names; says which databases it left
/// out. A partial restore recovers with `ignore_invalid_pages = on`: WAL that touches the
/// left-out files must not stop recovery (docs/recovery.md).
pub fn restore_database_selected(
    ctx: &Context,
    opts: &RestoreOptions,
    selection: &Selection,
    progress: &dyn Progress,
) -> Result<(RestoreReport, Partial), EngineError> {
    restore_database_on(ctx, opts, selection, &Through::local(), progress)
}

/// Where a restore writes and how the restored cluster fetches its WAL: this host and the
/// repository itself, or the database host's agent and the repository host's server.
#[derive(Clone)]
pub struct Through {
    pub dest: std::sync::Arc<dyn dest::Destination>,
    /// The restore_command to write instead of the one reading the repository directly
    /// (a database host fetches WAL through the repository host's server).
    pub restore_command: Option<String>,
}

impl Through {
    pub fn local() -> Through {
        Through {
            dest: dest::local(dest::WriteMode::Direct),
            restore_command: None,
        }
    }

    fn is_remote(&self) -> bool {
        !self.dest.place().is_empty()
    }
}

/// [`restore_database_selected`] writing through `through`.
pub fn restore_database_on(
    ctx: &Context,
    opts: &RestoreOptions,
    selection: &Selection,
    through: &Through,
    progress: &dyn Progress,
) -> Result<(RestoreReport, Partial), EngineError> {
    let t0 = Instant::now();
    refuse_unsupported(opts, selection, through)?;
    let plan = checked_plan(ctx, opts, progress)?;
    if let Some(tag) = &opts.from_copy {
        return restore_copy(ctx, opts, tag, progress, t0);
    }
    let backups_chain = &plan.chain;
    let manifest = backups_chain
        .last()
        .expect("a chain has at least one backup");
    let foreign = manifest.origin.is_some();
    if foreign && *selection != Selection::Whole {
        return Err(crate::refusal::Backups::PartialOfImported {
            backup_id: manifest.backup_id.clone(),
        }
        .into());
    }
    let mut layout = open_layout(opts, manifest, through, progress)?;
    let created = layout.prepare()?;
    let result = layout
        .mark()
        .and_then(|()| plan_writes(&mut layout, opts, plan.restored_bytes, progress))
        .and_then(|()| {
            if foreign {
                // Read through the origin (catalog import), checked against its checksums.
                return foreign::restore_foreign(
                    backups_chain,
                    &layout,
                    opts.channels.max(1),
                    progress,
                )
                .map(|r| (r, Partial::default()));
            }
            partial::restore_selection(
                ctx,
                backups_chain,
                &plan.sources,
                &layout,
                opts.channels.max(1),
                selection,
                progress,
            )
        })
        .and_then(|((n, bytes, mut rows), partial)| {
            let mut settings = recovery::write_recovery(
                ctx,
                manifest,
                &layout,
                opts,
                through.restore_command.as_deref(),
            )?;
            if *selection != Selection::Whole {
                settings.extend(partial::write_partial_settings(&layout)?);
            }
            layout.unmark()?;
            if let Some(o) = layout.writes.outcome() {
                progress.message(&format!("restore writes: {o}"));
            }
            crate::pipeline::stats::record_piece_job(
                &ctx.repo,
                "RESTORE",
                &manifest.backup_id,
                &mut rows,
            );
            Ok((n, bytes, settings, partial))
        });
    match result {
        Ok((files, bytes, recovery_settings, partial)) => Ok((
            RestoreReport {
                backup_id: manifest.backup_id.clone(),
                tag: manifest.tag.clone(),
                files,
                bytes,
                elapsed: t0.elapsed(),
                to: opts.to.clone(),
                recovery_settings,
            },
            partial,
        )),
        Err(e) => Err(undo_failed(e, created, through, opts, plan.restored_bytes)),
    }
}

/// Where the backup's files go, checked empty (what an interrupted restore wrote is cleared).
fn open_layout(
    opts: &RestoreOptions,
    manifest: &BackupManifest,
    through: &Through,
    progress: &dyn Progress,
) -> Result<files::Layout, EngineError> {
    let layout = files::Layout::new(&opts.to, manifest, &opts.tablespace_map)?
        .on(std::sync::Arc::clone(&through.dest));
    for d in layout.check_empty(opts.force)? {
        progress.notice(&format!(
            "cleared {}: an interrupted restore had written it",
            d.display()
        ));
    }
    progress.message(&format!(
        "restoring backup {} (tag {}) to {}",
        manifest.backup_id,
        manifest.tag,
        opts.to.display()
    ));
    Ok(layout)
}

/// What a restore through an agent, or from an image copy, cannot do.
fn refuse_unsupported(
    opts: &RestoreOptions,
    selection: &Selection,
    through: &Through,
) -> Result<(), EngineError> {
    if through.is_remote() && (opts.from_copy.is_some() || *selection != Selection::Whole) {
        return Err(crate::refusal::Backups::WholeSetsOnly {
            place: through.dest.place().to_string(),
        }
        .into());
    }
    if opts.from_copy.is_some() && *selection != Selection::Whole {
        return Err(crate::refusal::Backups::PartialFromCopy.into());
    }
    Ok(())
}

/// The restore's plan, refused when the WAL it needs is not all there, with its notes said.
fn checked_plan(
    ctx: &Context,
    opts: &RestoreOptions,
    progress: &dyn Progress,
) -> Result<plan::RestorePlan, EngineError> {
    // One plan for the preview, the validation and this restore: all three read the same.
    let plan = plan::plan_restore(ctx, opts)?;
    plan.check(opts.allow_wal_gap)?;
    for n in plan.notes.iter().chain(&plan.wal.notes) {
        progress.notice(n);
    }
    if let Some(first) = plan.wal.gaps.first().filter(|_| opts.allow_wal_gap) {
        progress.notice(&format!(
            "the wal has a gap at segment {first}: recovery will end before it, as --allow-wal-gap asks"
        ));
    }
    Ok(plan)
}

/// A restore from image copy `tag`: the copy is copied, never written.
fn restore_copy(
    ctx: &Context,
    opts: &RestoreOptions,
    tag: &str,
    progress: &dyn Progress,
    t0: Instant,
) -> Result<(RestoreReport, Partial), EngineError> {
    copy_restore::restore_from_copy(ctx, opts, tag, progress, t0)
        .map(|r| (r, Partial::default()))
        .map_err(|e| match e {
            EngineError::Stopped { signal, .. } => EngineError::Stopped {
                signal,
                done: format!(
                    ": what the restore wrote into {} was removed; image copy {tag} is unchanged",
                    opts.to.display()
                ),
            },
            e => e,
        })
}

/// How the destination is written (the writes' shape for its storage), said when chosen.
fn plan_writes(
    layout: &mut files::Layout,
    opts: &RestoreOptions,
    restored_bytes: u64,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    let writes = layout.dest.plan_writes(
        &opts.to,
        restored_bytes,
        opts.channels.max(1),
        opts.write_mode,
    )?;
    if let Some(p) = writes {
        progress.message(&format!("restore writes: {}", p.describe()));
        layout.writes = p;
    }
    Ok(())
}

/// Undoes a failed restore's writes and returns its error, saying what was removed.
fn undo_failed(
    e: EngineError,
    created: files::Created,
    through: &Through,
    opts: &RestoreOptions,
    restored_bytes: u64,
) -> EngineError {
    // A half-restored directory must not be started by mistake.
    if !created.undo() && through.is_remote() {
        return interrupted_remote(e, &through.dest.place(), &opts.to);
    }
    match e {
        EngineError::Stopped { signal, .. } => EngineError::Stopped {
            signal,
            done: format!(
                ": what the restore wrote into {} was removed; the repository is unchanged",
                opts.to.display()
            ),
        },
        EngineError::NoSpace { path, source, .. } => EngineError::NoSpace {
            path,
            needed: format!(
                " (the restore writes {} bytes; what it wrote into {} was removed, the repository is unchanged)",
                restored_bytes,
                opts.to.display()
            ),
            source,
        },
        e => e,
    }
}

/// Restores the files `keep` names of the backup `opts` selects into `opts.to`, which a
/// partial restore of the same backup already wrote (recover table's second phase); returns
/// the piece bytes read. Nothing else there is touched.
pub(crate) fn restore_more(
    ctx: &Context,
    opts: &RestoreOptions,
    keep: sink::Keep,
    progress: &dyn Progress,
) -> Result<u64, EngineError> {
    let plan = plan::plan_restore(ctx, opts)?;
    let manifest = plan.chain.last().expect("a chain has at least one backup");
    let layout = files::Layout::new(&opts.to, manifest, &opts.tablespace_map)?;
    let (_, _, rows) = chain::restore_chain_with(
        ctx,
        &plan.chain,
        &plan.sources,
        &layout,
        opts.channels.max(1),
        Some(keep),
        progress,
    )?;
    Ok(rows
        .iter()
        .filter(|r| r.kind == "INPUT")
        .map(|r| r.bytes)
        .sum())
}

/// A restore through an agent that stopped answering: what it wrote stays on the database
/// host, marked as an interrupted restore, which only `--force` clears.
fn interrupted_remote(e: EngineError, place: &str, to: &Path) -> EngineError {
    let text = e.to_string();
    let cause = text.split_once("; hint:").map_or(text.as_str(), |(c, _)| c);
    EngineError::Failed {
        kind: e.kind(),
        message: format!(
            "the restore{place} stopped: {cause}; what it wrote into {} stays marked as an interrupted restore (its {}), never a startable cluster; hint: once the agent answers again, run the same restore with --force",
            to.display(),
            files::RESTORE_MARKER
        ),
    }
}

pub(crate) fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false)
}
