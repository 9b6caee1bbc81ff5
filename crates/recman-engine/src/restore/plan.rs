//! The restore plan (RMAN's RESTORE … PREVIEW): which backups, pieces and copies, and which
//! WAL a restore uses, worked out from the catalog, the manifests, timeline history files and
//! object existence checks only, never from piece or WAL segment data. `restore database`
//! builds this value and restores from it, so a preview and the real restore cannot differ.

use super::RestoreOptions;
use super::plan_wal::{self, WalPlan};
use crate::context::Context;
use crate::devices;
use crate::error::EngineError;
use crate::manifest_io::load_manifest;
use crate::pieces::Source;
use crate::select::select_backup;
use crate::util::cut;
use recman_format::manifest::{BackupManifest, EntryKind};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug, Serialize)]
pub struct RestorePlan {
    /// What recovery stops at, as words.
    pub target: String,
    /// The backup restored from (whose backup_label recovery starts at).
    pub backup_id: String,
    pub tag: String,
    /// Restored from an image copy (this tag) instead of backup sets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_copy: Option<String>,
    /// The chain, oldest (the full or level 0) first.
    pub backups: Vec<PlannedBackup>,
    /// Stored bytes of every piece read.
    pub piece_bytes: u64,
    /// Size of the restored files.
    pub restored_bytes: u64,
    pub wal: WalPlan,
    pub estimate: Estimate,
    /// Pieces none of whose copies is present: the restore cannot read them.
    pub missing_pieces: Vec<String>,
    /// Why `restore database` with these options refuses to start, if it does.
    pub refusal: Option<String>,
    /// Things the reader of the plan should know (a gap past an xid target, a device that
    /// cannot be opened).
    pub notes: Vec<String>,
    #[serde(skip)]
    pub(crate) chain: Vec<BackupManifest>,
    /// Where each piece is read from, in the order restore tries them.
    #[serde(skip)]
    pub(crate) sources: HashMap<String, Vec<Source>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlannedBackup {
    pub id: String,
    pub tag: String,
    pub backup_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incremental_level: Option<u8>,
    pub start_lsn: String,
    pub stop_lsn: String,
    pub timeline: u32,
    pub stop_time: String,
    pub pieces: Vec<PlannedPiece>,
    /// Stored bytes of its pieces.
    pub bytes: u64,
    /// Where an imported backup lies (catalog import): it has no pieces, its files are read
    /// there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlannedPiece {
    pub path: String,
    pub set_no: u32,
    pub piece_no: u32,
    pub size: u64,
    /// Every known copy, in the order restore tries them.
    pub copies: Vec<PlannedCopy>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlannedCopy {
    /// "repository", or the device type holding the copy (disk, s3, sbt).
    pub device: String,
    /// The medium: a directory, a bucket, a tape library.
    pub media: String,
    pub name: String,
    /// Whether the object exists there; None when it was not looked at (an earlier copy is
    /// present) or the device cannot be reached.
    pub present: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// Piece bytes per second read by past restores of this database; None: no history.
    pub bytes_per_second: Option<u64>,
    /// Seconds to restore the files (WAL replay at start-up not included); None: unknown.
    pub seconds: Option<f64>,
    pub basis: String,
}

impl RestorePlan {
    /// Refuses what the restore cannot do or must not do without being told: a piece with no
    /// copy, WAL missing before the backup is consistent, or a gap before the target.
    pub fn check(&self, allow_wal_gap: bool) -> Result<(), EngineError> {
        if !self.missing_pieces.is_empty() {
            return Err(EngineError::remedy(
                crate::error::ErrorKind::NotFound,
                format!(
                    "backup piece(s) {} of backup {} are present on none of their copies",
                    cut(&self.missing_pieces),
                    self.backup_id
                ),
                crate::action::Hint::new().act(crate::action::Action::RestoreFromTag).text(
                    ", or bring back the device holding a copy (`recman restore database --preview` lists the copies)",
                ),
            ));
        }
        self.wal.check(&self.backup_id, allow_wal_gap)
    }
}

/// Builds the plan for `opts`. Reads no piece and no WAL segment.
pub fn plan_restore(ctx: &Context, opts: &RestoreOptions) -> Result<RestorePlan, EngineError> {
    let mut notes = Vec::new();
    let (chain, image_copy, tag) = match &opts.from_copy {
        Some(t) => {
            let state = super::copy_state::load_copy(ctx, t)?.ok_or_else(|| {
                EngineError::NotFound(format!("there is no image copy with tag {t}; hint: make one with `recman backup database --as-copy --tag {t}`"))
            })?;
            super::copy_restore::check_target(t, &state, &opts.target)?;
            (vec![state], Some(t.to_uppercase()), t.to_uppercase())
        }
        None => {
            let unavailable = crate::keep::unavailable_ids(&ctx.repo)?;
            let mut backups = ctx.repo.catalog().backups(ctx.db.id)?;
            backups.retain(|b| !unavailable.contains(&b.id));
            let chosen = select_backup(&backups, &opts.target, opts.from_tag.as_deref())?;
            let chain = crate::incremental::chain(ctx, load_manifest(ctx, &chosen.id)?)?;
            (chain, None, chosen.tag.clone())
        }
    };
    let newest = chain.last().expect("a chain has at least one backup");
    let mut sources = HashMap::new();
    let mut missing = Vec::new();
    let mut backups = Vec::new();
    for m in &chain {
        let mut pieces = Vec::new();
        // An image copy's state names the pieces of the backup that made it; the copy's own
        // files are what a restore from it reads.
        let sets = if image_copy.is_some() {
            &[][..]
        } else {
            &m.sets[..]
        };
        for set in sets {
            for p in &set.pieces {
                let (copies, srcs) = piece_copies(ctx, &p.path, &mut notes)?;
                if copies.iter().all(|c| c.present == Some(false)) {
                    missing.push(p.path.clone());
                }
                sources.insert(p.path.clone(), srcs);
                pieces.push(PlannedPiece {
                    path: p.path.clone(),
                    set_no: set.set_no,
                    piece_no: p.piece_no,
                    size: p.size,
                    copies,
                });
            }
        }
        backups.push(PlannedBackup {
            id: m.backup_id.clone(),
            tag: m.tag.clone(),
            backup_type: m.backup_type.clone(),
            incremental_level: m.incremental_level,
            start_lsn: m.start_lsn.clone(),
            stop_lsn: m.stop_lsn.clone(),
            timeline: m.timeline,
            stop_time: m.stop_time.clone(),
            bytes: pieces.iter().map(|p| p.size).sum(),
            pieces,
            origin: m.origin.as_ref().map(crate::foreign::describe_origin),
        });
    }
    let piece_bytes: u64 = backups.iter().map(|b| b.bytes).sum();
    let restored_bytes = newest
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .filter_map(|e| e.size)
        .sum();
    let wal = plan_wal::plan_wal(ctx, newest, &opts.target, opts.timeline.as_deref())?;
    // An image copy is copied file by file: its size is what is read.
    let read = if image_copy.is_some() {
        restored_bytes
    } else {
        piece_bytes
    };
    let estimate = estimate(ctx, read)?;
    let mut plan = RestorePlan {
        target: opts.target.to_string(),
        backup_id: newest.backup_id.clone(),
        tag,
        image_copy,
        backups,
        piece_bytes,
        restored_bytes,
        wal,
        estimate,
        missing_pieces: missing,
        refusal: None,
        notes,
        chain,
        sources,
    };
    plan.refusal = plan.check(opts.allow_wal_gap).err().map(|e| e.to_string());
    Ok(plan)
}

/// The copies of piece `rel` in the order restore tries them (a copy written to a device
/// directly, the repository, then the other copies), each looked at until one is present.
fn piece_copies(
    ctx: &Context,
    rel: &str,
    notes: &mut Vec<String>,
) -> Result<(Vec<PlannedCopy>, Vec<Source>), EngineError> {
    let own = Source {
        device: "repository".into(),
        media: Arc::clone(ctx.repo.media()),
        name: rel.to_string(),
    };
    let mut order: Vec<Result<Source, (String, String, String)>> = Vec::new();
    let copies_known = ctx.repo.catalog().copies_of(rel)?;
    // An object written to a device directly never was in the repository.
    let mut own_added = copies_known.iter().any(|c| c.primary);
    for c in copies_known {
        if !c.primary && !own_added {
            order.push(Ok(own.clone()));
            own_added = true;
        }
        match devices::media_for(&ctx.repo, &c.device) {
            Ok(media) => order.push(Ok(Source {
                device: c.device,
                media,
                name: c.name,
            })),
            Err(e) => order.push(Err((c.device, c.name, e.to_string()))),
        }
    }
    if !own_added {
        order.push(Ok(own));
    }
    let mut copies = Vec::new();
    let mut sources = Vec::new();
    let mut found = false;
    for o in order {
        match o {
            Ok(s) => {
                let (present, note) = if found {
                    (None, None)
                } else {
                    match s.media.stat(&s.name) {
                        Ok(size) => (Some(size.is_some()), None),
                        Err(e) => (None, Some(e.to_string())),
                    }
                };
                found |= present == Some(true);
                copies.push(PlannedCopy {
                    device: s.device.clone(),
                    media: s.media.describe(),
                    name: s.name.clone(),
                    present,
                    note,
                });
                sources.push(s);
            }
            Err((device, name, why)) => {
                let note = format!("device type {device} cannot be opened: {why}");
                if !notes.contains(&note) {
                    notes.push(note.clone());
                }
                copies.push(PlannedCopy {
                    device,
                    media: String::new(),
                    name,
                    present: None,
                    note: Some(note),
                });
            }
        }
    }
    Ok((copies, sources))
}

/// How many past restores the estimate averages over, newest first.
const ESTIMATE_JOBS: usize = 5;

/// The time to read `bytes`, at the rate past restores of this database read their pieces
/// (their INPUT statistics rows: bytes over the time from the first open to the last close).
fn estimate(ctx: &Context, bytes: u64) -> Result<Estimate, EngineError> {
    let cat = ctx.repo.catalog();
    let mut jobs = Vec::new();
    for b in cat.backups(ctx.db.id)? {
        for (job, kind) in cat.io_jobs_of_backup(&b.id)? {
            if kind == "RESTORE" {
                jobs.push(job);
            }
        }
    }
    // Job ids carry their start time: the newest restores say most about today's media.
    jobs.sort();
    jobs.dedup();
    let (mut total_bytes, mut total_us, mut n) = (0u64, 0i64, 0usize);
    for job in jobs.iter().rev().take(ESTIMATE_JOBS) {
        let rows: Vec<_> = cat
            .io_stats(job)?
            .into_iter()
            .filter(|r| r.kind == "INPUT")
            .collect();
        let (Some(open), Some(close)) = (
            rows.iter().map(|r| r.open_time).min(),
            rows.iter().map(|r| r.close_time).max(),
        ) else {
            continue;
        };
        total_bytes += rows.iter().map(|r| r.bytes).sum::<u64>();
        total_us += (close - open).max(1);
        n += 1;
    }
    if n == 0 || total_bytes == 0 {
        return Ok(Estimate {
            bytes_per_second: None,
            seconds: None,
            basis: "unknown: no restore of this database has been timed yet".into(),
        });
    }
    let rate = (total_bytes as u128 * 1_000_000 / total_us as u128).max(1) as u64;
    Ok(Estimate {
        bytes_per_second: Some(rate),
        seconds: Some(bytes as f64 / rate as f64),
        basis: format!(
            "the piece read rate of the last {n} restore(s) of this database; WAL replay at start-up not included"
        ),
    })
}
