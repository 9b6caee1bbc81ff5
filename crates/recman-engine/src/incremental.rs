//! Incremental backups (RMAN's levels 0 and 1) at block level. A level 1 keeps the pages whose
//! LSN is at or past its parent's start LSN: every change after the parent's checkpoint wrote
//! WAL and advanced the page's LSN. Files the parent did not have (a new relation, CREATE
//! DATABASE with FILE_COPY, ALTER ... SET TABLESPACE, TRUNCATE: all give new file names, whose
//! copied pages keep old LSNs) are taken whole; sizes are recorded for every file so that
//! truncation and extension are restored; a file missing from the newest manifest is not
//! restored at all, which is how drops are replayed.

use crate::context::Context;
use crate::error::EngineError;
use crate::manifest_io::load_manifest;
use recman_catalog::BackupStatus;
use recman_format::manifest::{BackupManifest, EntryKind};
use recman_pg::Lsn;
use std::collections::HashSet;

/// What a level 1 is relative to.
#[derive(Clone, Debug)]
pub struct Increment {
    pub parent_id: String,
    pub parent_start_lsn: u64,
    /// Files of the parent's data directory: anything else is new and is taken whole.
    pub known: HashSet<String>,
}

/// The level a backup gets, its parent, and a notice for the user.
pub type ParentChoice = (Option<u8>, Option<Increment>, Option<String>);

/// The level a backup really gets, and its parent: a level 1 without a usable level 0 becomes
/// a level 0, as in RMAN, and the notice says so. A parent must lie on `history`, the
/// timelines the cluster followed (see [`crate::tracking_path::on_history`]); newer backups
/// off it are passed over.
pub(crate) fn choose_parent(
    ctx: &Context,
    level: Option<u8>,
    cumulative: bool,
    history: &[crate::tracking_path::Span],
) -> Result<ParentChoice, EngineError> {
    if level != Some(1) {
        return Ok((level, None, None));
    }
    // The catalog lists backups by (start time, id): a synthetic full shares its chain tip's
    // start time and, made later, has the later id, so it comes last.
    let backups = ctx.repo.catalog().backups(ctx.db.id)?;
    let mut passed_over = Vec::new();
    for b in backups
        .iter()
        .rev()
        .filter(|b| b.status == BackupStatus::Available)
    {
        let wanted = match b.backup_type.as_str() {
            "LEVEL0" => true,
            "LEVEL1" => !cumulative,
            _ => false,
        };
        if !wanted {
            continue;
        }
        let stop = b.stop_lsn.unwrap_or(b.start_lsn);
        if !crate::tracking_path::on_history(history, b.timeline, b.start_lsn, stop) {
            passed_over.push(b.id.clone());
            continue;
        }
        let m = load_manifest(ctx, &b.id)?;
        let start: Lsn = m.start_lsn.parse()?;
        let known = m
            .entries
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.path.clone())
            .collect();
        return Ok((
            Some(1),
            Some(Increment {
                parent_id: b.id.clone(),
                parent_start_lsn: start.0,
                known,
            }),
            off_history(&passed_over),
        ));
    }
    let why = match off_history(&passed_over) {
        Some(n) => format!("{n}; no level 0 on it to base a level 1 on: taking a level 0 instead"),
        None => "no level 0 backup to base a level 1 on: taking a level 0 instead".to_string(),
    };
    Ok((Some(0), None, Some(why)))
}

/// The notice for backups passed over as parents because the cluster left their timeline.
fn off_history(ids: &[String]) -> Option<String> {
    (!ids.is_empty()).then(|| {
        format!(
            "passed over {} as parent: taken on a timeline branch this cluster did not follow",
            ids.join(", ")
        )
    })
}

/// Byte runs of `data` (a chunk at a page-aligned offset) holding pages changed at or after
/// `since`; a trailing partial page is always kept.
pub fn changed_runs(data: &[u8], since: u64) -> Vec<(usize, usize)> {
    let bs = recman_page::BLCKSZ;
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut push = |start: usize, len: usize| match runs.last_mut() {
        Some((s, l)) if *s + *l == start => *l += len,
        _ => runs.push((start, len)),
    };
    let whole = data.len() / bs * bs;
    for (i, page) in data[..whole].chunks_exact(bs).enumerate() {
        if recman_page::page_lsn(page) >= since {
            push(i * bs, bs);
        }
    }
    if whole < data.len() {
        push(whole, data.len() - whole);
    }
    runs
}

/// The backups a restore of `newest` reads, oldest (the level 0 or full) first.
pub fn chain(ctx: &Context, newest: BackupManifest) -> Result<Vec<BackupManifest>, EngineError> {
    let mut chain = vec![newest];
    while let Some(parent) = chain.last().and_then(|m| m.parent.clone()) {
        let status = ctx.repo.catalog().backup(&parent)?.map(|b| b.status);
        if status != Some(BackupStatus::Available) {
            return Err(EngineError::remedy(
                crate::error::ErrorKind::NotFound,
                format!(
                    "backup {} needs its parent {parent}, which is {}",
                    chain.last().map(|m| m.backup_id.as_str()).unwrap_or(""),
                    status.map(|s| s.as_str()).unwrap_or("missing")
                ),
                crate::action::Hint::new()
                    .act_as(
                        crate::action::Action::RestoreFromTag,
                        "restore from an older complete chain by its tag",
                    )
                    .text(", or crosscheck the repository"),
            ));
        }
        chain.push(load_manifest(ctx, &parent)?);
    }
    chain.reverse();
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(lsn: u64) -> Vec<u8> {
        let mut p = vec![0u8; 8192];
        p[0..4].copy_from_slice(&((lsn >> 32) as u32).to_le_bytes());
        p[4..8].copy_from_slice(&(lsn as u32).to_le_bytes());
        p
    }

    #[test]
    fn runs_of_changed_pages() {
        let mut data = Vec::new();
        for lsn in [5, 100, 200, 7, 300] {
            data.extend(page(lsn));
        }
        assert_eq!(changed_runs(&data, 100), vec![(8192, 16384), (32768, 8192)]);
        assert!(changed_runs(&data, 1000).is_empty());
        data.extend([1, 2, 3]);
        assert_eq!(changed_runs(&data, 1000), vec![(40960, 3)]);
    }
}
