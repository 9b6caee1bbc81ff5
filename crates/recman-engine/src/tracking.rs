//! Which blocks a level 1 reads when change tracking answers for its range: the union of the
//! summaries of every WAL segment from the parent's start LSN to the new backup's start
//! (archived segments' stored summaries; segments not archived yet are decoded from the
//! cluster's own pg_wal). When any segment of the range has no usable summary, or a record
//! the decoder could not read, there is no answer and the level 1 scans every relation file,
//! as without tracking; the notice says why.

use crate::context::Context;
use crate::error::EngineError;
use crate::incremental::Increment;
use crate::progress::Progress;
use recman_page::{Fork, RELSEG_SIZE, RelFile};
use recman_pg::Lsn;
use recman_pg::walrecord::RelId;
use recman_pg::walsummary::{ForkKey, SegmentSummary};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

/// `RECMAN_CHANGE_TRACKING=off` makes every level 1 scan (a comparison run, or a distrust).
pub const SWITCH: &str = "RECMAN_CHANGE_TRACKING";

/// The changes of a level 1's range, merged from its segments' summaries.
#[derive(Debug, Default)]
pub struct Tracking {
    blocks: BlockLists,
    created: HashSet<ForkKey>,
    truncated: HashMap<RelId, u32>,
    databases: HashSet<(u32, u32)>,
    /// WAL segments whose summaries were merged.
    pub segments: usize,
    /// Bytes read from relation files through the summaries, and how many files.
    pub read_bytes: AtomicU64,
    pub files: AtomicU64,
    /// Bytes those files hold: what a scan would have read.
    pub file_bytes: AtomicU64,
}

/// What to read of one relation file.
#[derive(Debug, PartialEq, Eq)]
pub enum FilePlan {
    /// Every block: the file was created, or its database copied, within the range.
    Whole,
    /// Runs of blocks (first block, count), numbered within this segment file.
    Runs(Vec<(u32, u32)>),
}

fn fork_no(f: Fork) -> u8 {
    match f {
        Fork::Main => 0,
        Fork::Fsm => 1,
        Fork::Vm => 2,
        Fork::Init => 3,
    }
}

/// The WAL identity of a relation file: pg_default is 1663, pg_global 1664 (database 0).
pub fn rel_id(rf: &RelFile) -> RelId {
    let spc = rf
        .tablespace_oid
        .unwrap_or(if rf.db_oid.is_some() { 1663 } else { 1664 });
    RelId {
        spc,
        db: rf.db_oid.unwrap_or(0),
        rel: rf.relfilenode,
    }
}

impl Tracking {
    pub fn merge(&mut self, s: SegmentSummary) {
        for (k, b) in s.blocks {
            let v = self.blocks.entry(k).or_default();
            v.extend(b);
        }
        self.created.extend(s.created);
        for (r, n) in s.truncated {
            let t = self.truncated.entry(r).or_insert(n);
            *t = (*t).min(n);
        }
        self.databases.extend(s.databases);
        self.segments += 1;
    }

    /// Sorts and dedups the block lists once all summaries are in.
    fn seal(&mut self) {
        for v in self.blocks.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
    }

    /// Whether relation file `rf` is taken whole (created, or its database copied or dropped,
    /// in the range).
    pub fn whole(&self, rf: &RelFile) -> bool {
        let id = rel_id(rf);
        self.databases.contains(&(id.spc, id.db)) || self.created.contains(&(id, fork_no(rf.fork)))
    }

    /// What to read of main-fork segment file `rf`.
    pub fn plan(&self, rf: &RelFile) -> FilePlan {
        if self.whole(rf) {
            return FilePlan::Whole;
        }
        let id = rel_id(rf);
        let first = rf.first_block() as u64;
        let end = first + RELSEG_SIZE as u64;
        let mut runs: Vec<(u32, u32)> = Vec::new();
        let mut push = |b: u64| {
            let b = (b - first) as u32;
            match runs.last_mut() {
                Some((s, n)) if *s + *n == b => *n += 1,
                _ => runs.push((b, 1)),
            }
        };
        let named = self
            .blocks
            .get(&(id, fork_no(rf.fork)))
            .map(|v| v.as_slice())
            .unwrap_or(&[]);
        let cut = self.truncated.get(&id).map(|&t| t as u64).unwrap_or(end);
        for &b in named {
            let b = b as u64;
            if b >= first && b < end.min(cut) {
                push(b);
            }
        }
        // Past a truncation every block may have been written again (re-extension of a cut
        // relation is WAL-logged too, but reading the tail costs little and assumes nothing).
        if cut < end {
            let from = cut.max(first);
            runs.push(((from - first) as u32, (end - from) as u32));
        }
        FilePlan::Runs(runs)
    }

    pub(crate) fn count(&self, bytes: u64, file_bytes: u64) {
        self.read_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.file_bytes.fetch_add(file_bytes, Ordering::Relaxed);
        self.files.fetch_add(1, Ordering::Relaxed);
    }
}

/// The tracking for a level 1 on `inc` starting at `start_lsn` on `timeline`, or None (with
/// a notice saying why) when the level 1 has to scan.
pub fn load(
    ctx: &Context,
    source: &dyn crate::source::DataSource,
    inc: &Increment,
    start_lsn: u64,
    timeline: u32,
    seg_size: u64,
    progress: &dyn Progress,
) -> Result<Option<Tracking>, EngineError> {
    let fallback = |why: String| {
        progress.notice(&format!(
            "change tracking: {why}; this level 1 reads every relation file and keeps the pages changed since {}",
            Lsn(inc.parent_start_lsn)
        ));
        Ok(None)
    };
    if std::env::var(SWITCH).is_ok_and(|v| v.eq_ignore_ascii_case("off")) {
        return fallback(format!("turned off by {SWITCH}=off"));
    }
    let parent_tl = ctx
        .repo
        .catalog()
        .backup(&inc.parent_id)?
        .map(|b| b.timeline);
    let Some(parent_tl) = parent_tl else {
        return fallback(format!(
            "the parent {} is not in the catalog",
            inc.parent_id
        ));
    };
    let spans = match history(ctx, source, inc, parent_tl, timeline) {
        Ok(s) => s,
        Err(why) => return fallback(why),
    };
    let names = match crate::tracking_path::segments_along(
        &spans,
        parent_tl,
        inc.parent_start_lsn,
        start_lsn,
        seg_size,
    ) {
        Ok(n) => n,
        Err(why) => return fallback(why),
    };
    let mut t = match read_summaries(ctx, source, &names, start_lsn, seg_size) {
        Ok(t) => t,
        Err(why) => return fallback(why),
    };
    t.seal();
    crate::fault::drop_tracked_block(&mut t.blocks);
    progress.message(&format!(
        "change tracking: summaries of {} WAL segment(s) from {} to {} name the blocks to read",
        t.segments,
        Lsn(inc.parent_start_lsn),
        Lsn(start_lsn)
    ));
    Ok(Some(t))
}

/// The timelines from the parent's to `timeline`, as the range of a level 1 runs along them;
/// Err says why change tracking cannot follow it.
fn history(
    ctx: &Context,
    source: &dyn crate::source::DataSource,
    inc: &Increment,
    parent_tl: u32,
    timeline: u32,
) -> Result<Vec<crate::tracking_path::Span>, String> {
    // After a promotion the range runs along this timeline's history, from the parent's
    // timeline through each switch point.
    Ok(if parent_tl == timeline {
        crate::tracking_path::history_spans("", timeline)
    } else {
        match crate::tracking_path::read_history(ctx, source, timeline) {
            Ok(Some(text)) => crate::tracking_path::history_spans(&text, timeline),
            Err(e) => return Err(format!("{e}")),
            Ok(None) => {
                return Err(format!(
                    "the parent {} is on timeline {parent_tl} and the history file of timeline {timeline} is neither in pg_wal nor archived",
                    inc.parent_id
                ));
            }
        }
    })
}

/// The summaries of segments `names` merged, every segment's needed part covered and a record
/// cut between two segments completed; Err says why change tracking cannot answer.
fn read_summaries(
    ctx: &Context,
    source: &dyn crate::source::DataSource,
    names: &[recman_pg::WalName],
    start_lsn: u64,
    seg_size: u64,
) -> Result<Tracking, String> {
    let mut t = Tracking::default();
    // A record whose headers the previous segment cut: completed by this segment's first bytes.
    let mut pending: Option<(u64, Vec<u8>, u16)> = None;
    for w in names {
        let name = w.to_string();
        let seg_lsn = w.segno * seg_size;
        // Everything before the backup's start must be covered; what follows it is replayed.
        let needed = (seg_lsn + seg_size).min(start_lsn);
        let s = match summary_of(ctx, source, &name, seg_lsn) {
            Ok(Some(s)) => s,
            Ok(None) => {
                return Err(format!(
                    "WAL segment {name} has no summary (archived without one, or it was removed)"
                ));
            }
            Err(e) => return Err(format!("{e}")),
        };
        if !s.whole && s.end_lsn < needed {
            return Err(format!(
                "the summary of WAL segment {name} ends at {}, before {}",
                Lsn(s.end_lsn),
                Lsn(needed)
            ));
        }
        if s.unknown {
            return Err(format!(
                "WAL segment {name} holds a record that changes relation files in a way change tracking does not read"
            ));
        }
        if let Some((lsn, prefix, magic)) = pending.take() {
            join_cut(lsn, &prefix, magic, &s, &name, &mut t)?;
        }
        pending = s
            .ends
            .cut
            .clone()
            .map(|(lsn, bytes)| (lsn, bytes, s.ends.magic));
        t.merge(s);
    }
    if let Some((lsn, _, _)) = pending
        && lsn < start_lsn
    {
        return Err(format!(
            "the record at {} runs past the last WAL segment of the range",
            Lsn(lsn)
        ));
    }
    Ok(t)
}

/// Completes the record at `lsn` whose headers the previous segment cut (`prefix`) with the
/// first bytes of segment `name`'s summary `s`, and merges its changes into `t`.
fn join_cut(
    lsn: u64,
    prefix: &[u8],
    magic: u16,
    s: &SegmentSummary,
    name: &str,
    t: &mut Tracking,
) -> Result<(), String> {
    let mut changes = Vec::new();
    if !recman_pg::walrecord::decode_cut_record(prefix, &s.ends.cont, lsn, magic, &mut |c| {
        changes.push(c)
    }) {
        return Err(format!(
            "the record at {} spanning into WAL segment {name} could not be decoded",
            Lsn(lsn)
        ));
    }
    let mut extra = SegmentSummary::default();
    changes.into_iter().for_each(|c| extra.add(c));
    if extra.unknown {
        return Err(format!(
            "the record at {} changes relation files in a way change tracking does not read",
            Lsn(lsn)
        ));
    }
    t.merge(extra);
    t.segments -= 1;
    Ok(())
}

/// The summary of segment `name`: the stored one, else, for a segment not archived yet,
/// one decoded from the cluster's pg_wal.
fn summary_of(
    ctx: &Context,
    source: &dyn crate::source::DataSource,
    name: &str,
    seg_lsn: u64,
) -> Result<Option<SegmentSummary>, EngineError> {
    if let Some(s) = crate::archive::summary::read_summary(&ctx.repo, &ctx.db, name)? {
        return Ok(Some(s));
    }
    if ctx.repo.catalog().wal(ctx.db.id, name)?.is_some() {
        return Ok(None);
    }
    let Some(data) = source.read_small(&format!("pg_wal/{name}"))? else {
        return Ok(None);
    };
    SegmentSummary::build(&data, seg_lsn)
        .map(Some)
        .map_err(|e| {
            EngineError::Corrupt(format!(
                "{}: {e}",
                source.path_of(&format!("pg_wal/{name}")).display()
            ))
        })
}

/// The block lists of a range, by fork (what the fault switch drops a block from).
pub(crate) type BlockLists = HashMap<ForkKey, Vec<u32>>;

#[cfg(test)]
mod tests {
    use super::*;
    use recman_pg::walrecord::{BlockRef, Change};

    fn rf(segno: u32) -> RelFile {
        RelFile {
            tablespace_oid: None,
            db_oid: Some(5),
            relfilenode: 16384,
            fork: Fork::Main,
            segno,
        }
    }

    #[test]
    fn plans_runs_truncations_and_whole_files() {
        let id = rel_id(&rf(0));
        let mut s = SegmentSummary::default();
        for b in [3, 4, 5, 9, RELSEG_SIZE + 1] {
            s.add(Change::Block(BlockRef {
                rel: id,
                fork: 0,
                block: b,
            }));
        }
        let mut t = Tracking::default();
        t.merge(s.clone());
        t.merge(s);
        t.seal();
        assert_eq!(t.plan(&rf(0)), FilePlan::Runs(vec![(3, 3), (9, 1)]));
        assert_eq!(t.plan(&rf(1)), FilePlan::Runs(vec![(1, 1)]));
        let mut s = SegmentSummary::default();
        s.add(Change::Truncate { rel: id, blocks: 5 });
        t.merge(s);
        assert_eq!(
            t.plan(&rf(0)),
            FilePlan::Runs(vec![(3, 2), (5, RELSEG_SIZE - 5)])
        );
        let mut s = SegmentSummary::default();
        s.add(Change::Database { spc: 1663, db: 5 });
        t.merge(s);
        assert_eq!(t.plan(&rf(1)), FilePlan::Whole);
    }
}
