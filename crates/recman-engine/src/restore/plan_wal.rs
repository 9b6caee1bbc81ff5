//! The WAL part of a restore plan: the segments from the backup's start to the recovery target
//! (or to the newest archived segment), on the target timeline and its parents, where each
//! can be read from, and the gaps: segments in the range that no archive object, ARCHIVELOG
//! backup set or second-tier copy holds.

use super::RecoveryTarget;
use super::timeline::{Span, ancestry, parse_segment, seg_name};
use crate::context::Context;
use crate::error::EngineError;
use crate::util::cut;
use recman_catalog::{CopyRecord, MediaStatus, WalRecord};
use recman_format::manifest::BackupManifest;
use recman_pg::Lsn;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

#[derive(Clone, Debug, Serialize)]
pub struct WalPlan {
    pub segment_size: u64,
    /// The timeline recovery ends on.
    pub timeline: u32,
    /// That timeline and its parents, oldest first, with the LSN range each covers.
    pub timelines: Vec<TimelineSpan>,
    pub first: String,
    pub last: String,
    /// The segment holding the backup's stop LSN: every segment up to it is needed for the
    /// restored cluster to become consistent at all.
    pub required_through: String,
    /// Why the range ends at `last`.
    pub end: String,
    pub segments: Vec<PlannedSegment>,
    /// Bytes of the segments (as archived, uncompressed).
    pub bytes: u64,
    /// Segments of the range with no copy the catalog knows of.
    pub gaps: Vec<String>,
    pub notes: Vec<String>,
    #[serde(skip)]
    required_segno: u64,
    /// Gaps up to this segment refuse a restore without --allow-wal-gap.
    #[serde(skip)]
    checked_segno: u64,
    #[serde(skip)]
    gap_segnos: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimelineSpan {
    pub timeline: u32,
    pub begin_lsn: String,
    /// Where the next timeline branched off; None for the target timeline.
    pub end_lsn: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlannedSegment {
    pub name: String,
    /// In the order archive-get tries them; empty for a gap.
    pub sources: Vec<WalSource>,
    #[serde(skip)]
    pub(crate) record: Option<WalRecord>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WalSource {
    /// The archived object in the repository's WAL archive.
    Archive {
        object: String,
        present: Option<bool>,
    },
    /// A backup set of an ARCHIVELOG backup.
    BackupSet {
        backup_id: String,
        set_no: u32,
        pieces: Vec<String>,
        present: Option<bool>,
    },
    /// A copy on another device (`backup recovery-area`).
    Copy {
        device: String,
        name: String,
        present: Option<bool>,
    },
    /// The WAL archive of the tool the backups were imported from (`catalog import`): the
    /// WAL from before the switch to recman.
    Imported {
        archive: String,
        object: String,
        present: Option<bool>,
    },
    /// The pg_wal of the imported backup being restored (pg_basebackup's `-X stream` or
    /// `fetch`): restored with its files, where PostgreSQL reads it when archive-get has
    /// no copy.
    InBackup {
        backup_id: String,
        path: String,
        present: Option<bool>,
    },
}

impl WalSource {
    pub fn present(&self) -> Option<bool> {
        match self {
            WalSource::Archive { present, .. }
            | WalSource::BackupSet { present, .. }
            | WalSource::Copy { present, .. }
            | WalSource::Imported { present, .. }
            | WalSource::InBackup { present, .. } => *present,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            WalSource::Archive { .. } => "archive",
            WalSource::BackupSet { .. } => "archivelog backup",
            WalSource::Copy { .. } => "copy",
            WalSource::Imported { .. } => "imported archive",
            WalSource::InBackup { .. } => "the backup's pg_wal",
        }
    }
}

impl WalPlan {
    /// Missing WAL before the backup's end is fatal; a gap before the target is refused
    /// unless the caller allows recovery to end at it.
    pub(crate) fn check(&self, backup_id: &str, allow_gap: bool) -> Result<(), EngineError> {
        let named = |f: &dyn Fn(u64) -> bool| -> Vec<String> {
            self.gaps
                .iter()
                .zip(&self.gap_segnos)
                .filter(|(_, s)| f(**s))
                .map(|(n, _)| n.clone())
                .collect()
        };
        let before_end = named(&|s| s <= self.required_segno);
        if !before_end.is_empty() {
            return Err(EngineError::remedy(
                crate::error::ErrorKind::NotFound,
                format!(
                    "wal segment(s) {} needed to make backup {backup_id} consistent (through {}) are in no archive, archivelog backup or copy the catalog knows of",
                    cut(&before_end),
                    self.required_through
                ),
                crate::action::Hint::new()
                    .act(crate::action::Action::RestoreFromTag)
                    .text("; this one cannot become consistent without them"),
            ));
        }
        let before_target = named(&|s| s <= self.checked_segno);
        if !before_target.is_empty() && !allow_gap {
            return Err(EngineError::remedy(
                crate::error::ErrorKind::NotFound,
                format!(
                    "the wal from backup {backup_id} to {} has a gap: segment(s) {} are in no archive, archivelog backup or copy the catalog knows of, and recovery would silently end there",
                    self.end,
                    cut(&before_target),
                ),
                crate::action::Hint::new()
                    .act_as(
                        crate::action::Action::RecoverUntil,
                        format!("restore to a target before segment {}", before_target[0]),
                    )
                    .text(", or ")
                    .act(crate::action::Action::AllowWalGap),
            ));
        }
        Ok(())
    }
}

/// Where the archive's copies of each segment are, from the catalog only.
pub(super) struct Known {
    archive: HashMap<(u32, u64), (WalRecord, MediaStatus)>,
    in_sets: BTreeSet<(u32, u64)>,
    copies: HashMap<String, Vec<CopyRecord>>,
    /// Timelines with an archived history file.
    pub(super) histories: BTreeSet<u32>,
    /// Segments of the imported archives (catalog import).
    foreign: HashMap<(u32, u64), Vec<recman_catalog::ForeignWalRecord>>,
    foreign_known: crate::foreign::ForeignKnown,
    /// Segments the imported backup being restored holds in its pg_wal, and its id.
    in_backup: (String, BTreeSet<String>),
}

pub(crate) fn plan_wal(
    ctx: &Context,
    m: &BackupManifest,
    target: &RecoveryTarget,
    timeline: Option<&str>,
) -> Result<WalPlan, EngineError> {
    let seg = if m.wal_segment_size.is_power_of_two() {
        m.wal_segment_size
    } else {
        16 << 20
    };
    let start: Lsn = m.start_lsn.parse()?;
    let stop: Lsn = m.stop_lsn.parse()?;
    let first = start.0 / seg;
    let required = stop.0.saturating_sub(1).max(start.0) / seg;
    let mut known = known(ctx, seg)?;
    known.in_backup = own_wal(m, seg);
    let mut notes = Vec::new();
    let spans = ancestry(ctx, m, &known.histories, timeline, &mut notes)?;
    let lines = Lines {
        spans: &spans,
        seg,
        timeline: m.timeline,
    };
    let newest = lines.newest(&known, first, required);
    let (last, checked, end) = reach(target, &known, &lines, newest, required, &mut notes);
    let Walked {
        segments,
        gaps,
        gap_segnos,
        bytes,
    } = walk(ctx, &known, &lines, first, last)?;
    let past = gaps
        .iter()
        .zip(&gap_segnos)
        .filter(|(_, s)| **s > checked)
        .map(|(n, _)| n.clone())
        .collect::<Vec<_>>();
    if !past.is_empty() {
        notes.push(format!(
            "segment(s) {} may be needed to reach {target} and are missing: recman cannot tell where the transaction committed without reading WAL; PostgreSQL stops with an error if it is past the gap",
            cut(&past)
        ));
    }
    Ok(WalPlan {
        segment_size: seg,
        timeline: spans.last().map(|s| s.tli).unwrap_or(m.timeline),
        timelines: spans
            .iter()
            .map(|s| TimelineSpan {
                timeline: s.tli,
                begin_lsn: Lsn(s.begin).to_string(),
                end_lsn: s.end.map(|e| Lsn(e).to_string()),
            })
            .collect(),
        first: segments.first().map(|s| s.name.clone()).unwrap_or_default(),
        last: segments.last().map(|s| s.name.clone()).unwrap_or_default(),
        required_through: lines.name(required),
        end,
        segments,
        bytes,
        gaps,
        notes,
        required_segno: required,
        checked_segno: checked,
        gap_segnos,
    })
}

/// The timelines a restore follows, segment by segment.
struct Lines<'a> {
    spans: &'a [Span],
    seg: u64,
    /// The backup's own timeline, for a segment no span covers.
    timeline: u32,
}

impl Lines<'_> {
    /// The timelines that may hold segment `s`, the newest first.
    fn candidates(&self, s: u64) -> Vec<u32> {
        let seg = self.seg;
        self.spans
            .iter()
            .rev()
            .filter(|sp| sp.begin / seg <= s && sp.end.is_none_or(|e| s <= e / seg))
            .map(|sp| sp.tli)
            .collect()
    }

    /// Segment `s`'s name on the newest timeline that may hold it.
    fn name(&self, s: u64) -> String {
        seg_name(
            self.candidates(s).first().copied().unwrap_or(self.timeline),
            s,
            self.seg,
        )
    }

    /// The newest segment known anywhere on these timelines, at least `required`.
    fn newest(&self, known: &Known, first: u64, required: u64) -> u64 {
        let seg = self.seg;
        known
            .archive
            .iter()
            .filter(|(_, (_, st))| *st == MediaStatus::Available)
            .map(|(k, _)| *k)
            .chain(known.in_sets.iter().copied())
            .chain(known.copies.keys().filter_map(|n| parse_segment(n, seg)))
            .chain(known.foreign.keys().copied())
            .filter(|(tli, s)| *s >= first && self.candidates(*s).contains(tli))
            .map(|(_, s)| s)
            .max()
            .unwrap_or(required)
            .max(required)
    }
}

/// The last segment recovery to `target` reads, the last one it is known to need, and what
/// that end is, in words.
fn reach(
    target: &RecoveryTarget,
    known: &Known,
    lines: &Lines,
    newest: u64,
    required: u64,
    notes: &mut Vec<String>,
) -> (u64, u64, String) {
    let seg = lines.seg;
    let candidates = |s: u64| lines.candidates(s);
    let newest_name = |s: u64| lines.name(s);
    match target {
        RecoveryTarget::Latest => (newest, newest, "the newest archived segment".to_string()),
        RecoveryTarget::Lsn(l) | RecoveryTarget::Name { lsn: l, .. } => {
            let t = (l.0 / seg).max(required);
            if t > newest {
                notes.push(format!(
                    "the target {target} is in segment {}, after the newest archived segment {}: recovery cannot reach it until more WAL is archived",
                    newest_name(t),
                    newest_name(newest)
                ));
            }
            let last = t.min(newest);
            (last, last, format!("the segment holding {target}"))
        }
        RecoveryTarget::Time { micros, .. } => {
            // A segment archived after the target time was still being written at it (or
            // later): the first such one holds the target or the first record after it.
            let at = known
                .archive
                .iter()
                .filter(|((tli, s), (w, st))| {
                    *st == MediaStatus::Available
                        && *s >= required
                        && w.archived_at >= *micros
                        && candidates(*s).contains(tli)
                })
                .map(|((_, s), _)| *s)
                .chain(
                    known
                        .foreign
                        .iter()
                        .filter(|((tli, s), ws)| {
                            *s >= required
                                && ws.iter().any(|w| w.archived_at >= *micros)
                                && candidates(*s).contains(tli)
                        })
                        .map(|((_, s), _)| *s),
                )
                .min();
            let last = at.unwrap_or(newest);
            (
                last,
                last,
                format!("{target} (the first segment archived after it)"),
            )
        }
        // Where a transaction committed cannot be told without reading WAL: only the WAL up
        // to the backup's end is known to be needed.
        RecoveryTarget::Xid(_) => (newest, required, format!("{target}")),
    }
}

/// The segments from `first` to `last`, each with where it can be read, and those found
/// nowhere.
struct Walked {
    segments: Vec<PlannedSegment>,
    gaps: Vec<String>,
    gap_segnos: Vec<u64>,
    bytes: u64,
}

/// Walks the segments from `first` to `last`, each on the first candidate timeline that has it.
fn walk(
    ctx: &Context,
    known: &Known,
    lines: &Lines,
    first: u64,
    last: u64,
) -> Result<Walked, EngineError> {
    let (seg, candidates) = (lines.seg, |s: u64| lines.candidates(s));
    let mut segments = Vec::new();
    let (mut gaps, mut gap_segnos) = (Vec::new(), Vec::new());
    let mut bytes = 0;
    for s in first..=last {
        let cands = candidates(s);
        let mut chosen = None;
        for tli in &cands {
            let (sources, record) = segment_sources(ctx, known, *tli, s, seg)?;
            if sources.iter().any(|x| x.present() == Some(true)) {
                chosen = Some((seg_name(*tli, s, seg), sources, record));
                break;
            }
            if chosen.is_none() {
                chosen = Some((seg_name(*tli, s, seg), sources, record));
            }
        }
        let (name, sources, record) =
            chosen.unwrap_or_else(|| (seg_name(lines.timeline, s, seg), Vec::new(), None));
        if !sources.iter().any(|x| x.present() == Some(true)) {
            gaps.push(name.clone());
            gap_segnos.push(s);
        }
        bytes += record.as_ref().map(|r| r.size).unwrap_or(seg);
        segments.push(PlannedSegment {
            name,
            sources,
            record,
        });
    }
    Ok(Walked {
        segments,
        gaps,
        gap_segnos,
        bytes,
    })
}

fn known(ctx: &Context, seg: u64) -> Result<Known, EngineError> {
    let cat = ctx.repo.catalog();
    let mut k = Known {
        archive: HashMap::new(),
        in_sets: BTreeSet::new(),
        copies: HashMap::new(),
        histories: BTreeSet::new(),
        foreign: HashMap::new(),
        foreign_known: crate::foreign::ForeignKnown::load(&ctx.repo, &ctx.db)?,
        in_backup: Default::default(),
    };
    for w in &k.foreign_known.files {
        if let Some(t) = w
            .name
            .strip_suffix(".history")
            .and_then(|t| u32::from_str_radix(t, 16).ok())
        {
            k.histories.insert(t);
        } else if let Some(key) = parse_segment(&w.name, seg) {
            k.foreign.entry(key).or_default().push(w.clone());
        }
    }
    for (w, st) in cat.wal_states(ctx.db.id)? {
        if let Some(t) = w
            .name
            .strip_suffix(".history")
            .and_then(|t| u32::from_str_radix(t, 16).ok())
        {
            k.histories.insert(t);
        } else if let Some(key) = parse_segment(&w.name, seg) {
            k.archive.insert(key, (w, st));
        }
    }
    for name in cat.wal_backup_counts(ctx.db.id)?.keys() {
        if let Some(key) = parse_segment(name, seg) {
            k.in_sets.insert(key);
        }
    }
    for c in cat.copies_under(&format!("{}/wal", ctx.db.name))? {
        let file = c.object.rsplit('/').next().unwrap_or("");
        if let Some(name) = file.strip_suffix(".rmw") {
            k.copies.entry(name.to_string()).or_default().push(c);
        }
    }
    Ok(k)
}

/// Every place segment (tli, s) can be read from, in archive-get's order, looked at until one
/// is present; and its archive record, if any.
fn segment_sources(
    ctx: &Context,
    known: &Known,
    tli: u32,
    s: u64,
    seg: u64,
) -> Result<(Vec<WalSource>, Option<WalRecord>), EngineError> {
    let name = seg_name(tli, s, seg);
    let mut out = Vec::new();
    let mut found = false;
    let mut record = None;
    if let Some((w, st)) = known.archive.get(&(tli, s)) {
        // A crosscheck found it missing or damaged: not a source until found again.
        let present = if *st == MediaStatus::Available {
            Some(ctx.repo.media().stat(&w.path)?.is_some())
        } else {
            Some(false)
        };
        found = present == Some(true);
        out.push(WalSource::Archive {
            object: w.path.clone(),
            present,
        });
        record = Some(w.clone());
    }
    if known.in_sets.contains(&(tli, s)) {
        let cat = ctx.repo.catalog();
        for (backup_id, set_no) in cat.wal_backup_sources(ctx.db.id, &name)? {
            let pieces: Vec<String> = cat
                .pieces(&backup_id)?
                .into_iter()
                .filter(|p| p.set_no == set_no)
                .map(|p| p.path)
                .collect();
            let present = if found {
                None
            } else {
                let mut any = false;
                // The repository, or where the catalog has a copy (a FORMAT directory).
                for p in &pieces {
                    for src in crate::pieces::sources(&ctx.repo, p)? {
                        any |= src.media.stat(&src.name)?.is_some();
                    }
                }
                Some(any)
            };
            found |= present == Some(true);
            out.push(WalSource::BackupSet {
                backup_id,
                set_no,
                pieces,
                present,
            });
        }
    }
    for c in known.copies.get(&name).into_iter().flatten() {
        let present = if found {
            None
        } else {
            crate::devices::media_for(&ctx.repo, &c.device)
                .ok()
                .and_then(|media| media.stat(&c.name).ok())
                .map(|size| size.is_some())
        };
        found |= present == Some(true);
        out.push(WalSource::Copy {
            device: c.device.clone(),
            name: c.name.clone(),
            present,
        });
    }
    for w in known.foreign.get(&(tli, s)).into_iter().flatten() {
        let (archive, object, there) = known.foreign_known.source(w);
        let present = if found { None } else { Some(there) };
        found |= present == Some(true);
        out.push(WalSource::Imported {
            archive,
            object,
            present,
        });
    }
    if known.in_backup.1.contains(&name) {
        out.push(WalSource::InBackup {
            backup_id: known.in_backup.0.clone(),
            path: format!("pg_wal/{name}"),
            present: if found { None } else { Some(true) },
        });
    }
    Ok((out, record))
}

/// The whole segments in the pg_wal of imported backup `m` (none for recman's own, whose
/// pg_wal is never backed up).
fn own_wal(m: &BackupManifest, seg: u64) -> (String, BTreeSet<String>) {
    let names = m
        .entries
        .iter()
        .filter(|_| m.origin.is_some())
        .filter(|e| e.size == Some(seg))
        .filter_map(|e| e.path.strip_prefix("pg_wal/"))
        .filter(|n| parse_segment(n, seg).is_some())
        .map(str::to_string)
        .collect();
    (m.backup_id.clone(), names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(gaps: &[u64], required: u64, checked: u64) -> WalPlan {
        let name = |s: u64| seg_name(1, s, 16 << 20);
        WalPlan {
            segment_size: 16 << 20,
            timeline: 1,
            timelines: Vec::new(),
            first: name(2),
            last: name(9),
            required_through: name(required),
            end: "the newest archived segment".into(),
            segments: Vec::new(),
            bytes: 0,
            gaps: gaps.iter().map(|s| name(*s)).collect(),
            notes: Vec::new(),
            required_segno: required,
            checked_segno: checked,
            gap_segnos: gaps.to_vec(),
        }
    }

    #[test]
    fn gaps_refuse_by_where_they_are() {
        // Before the backup's end: refused even when gaps are allowed.
        let e = plan(&[3], 3, 9).check("B1", true).unwrap_err().to_string();
        assert!(
            e.contains("000000010000000000000003") && e.contains("consistent"),
            "{e}"
        );
        // Between the end and the target: refused unless allowed, naming the first ones.
        let p = plan(&[5, 6, 7, 8, 9, 10, 11], 3, 11);
        let err = p.check("B1", false).unwrap_err();
        let e = err.to_string();
        assert!(
            e.contains("000000010000000000000005") && e.contains("(and 2 more)"),
            "{e}"
        );
        // The hint names the remedy as an action; the CLI spells it --allow-wal-gap.
        assert!(e.contains("accept the gap") && e.contains("hint"), "{e}");
        assert!(
            err.actions().contains(&crate::action::Action::AllowWalGap),
            "{e}"
        );
        assert!(p.check("B1", true).is_ok());
        // Past what the target is known to need (an xid target): not refused.
        assert!(plan(&[5], 3, 3).check("B1", false).is_ok());
        assert!(plan(&[], 3, 9).check("B1", false).is_ok());
    }
}
