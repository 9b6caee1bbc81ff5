//! The WAL segments a level 1's change tracking reads, along the history of the backup's
//! timeline. After a promotion (a restored copy opened, a standby promoted) the parent may be
//! on an older timeline: the cluster's history is then the parent's timeline up to the switch
//! point, then each newer timeline from its own switch point, as its history file says. A
//! segment is read from the newest timeline that had begun by the segment's start, as
//! recovery reads it: the segment holding a switch point is the new timeline's file, which
//! PostgreSQL begins with a copy of the old timeline's bytes up to the switch.

use crate::agent_sql::CURRENT_TIMELINE_SQL;
use crate::context::Context;
use crate::error::EngineError;
use recman_pg::{Lsn, WalName};

/// One timeline of a history, as the LSN range [begin, end) it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub tli: u32,
    pub begin: u64,
    pub end: Option<u64>,
}

/// The spans of history file `text` of timeline `timeline`, oldest first, ending with
/// `timeline` itself (open-ended). Lines that are not "<tli> <lsn> ..." (comments, blank
/// lines) are skipped, as PostgreSQL skips them.
pub(crate) fn history_spans(text: &str, timeline: u32) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut begin = 0;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(tli), Some(lsn)) = (f.next(), f.next()) else {
            continue;
        };
        let (Ok(tli), Ok(lsn)) = (tli.parse::<u32>(), lsn.parse::<Lsn>()) else {
            continue;
        };
        spans.push(Span {
            tli,
            begin,
            end: Some(lsn.0),
        });
        begin = lsn.0;
    }
    spans.push(Span {
        tli: timeline,
        begin,
        end: None,
    });
    spans
}

/// The segments from the one holding `from` (on `from_tli`) to the one holding `to`'s last
/// byte before it, along `spans`; Err(why) when `from` is not in that history (the parent was
/// taken on a branch this cluster did not follow, or after it left the parent's timeline).
pub(crate) fn segments_along(
    spans: &[Span],
    from_tli: u32,
    from: u64,
    to: u64,
    seg_size: u64,
) -> Result<Vec<WalName>, String> {
    let on_path = spans
        .iter()
        .any(|s| s.tli == from_tli && s.begin <= from && s.end.is_none_or(|e| from < e));
    if !on_path {
        return Err(format!(
            "the parent (timeline {from_tli} at {}) is not in the history of timeline {}",
            Lsn(from),
            spans.last().map_or(0, |s| s.tli)
        ));
    }
    let first = from / seg_size;
    let last = to.saturating_sub(1).max(from) / seg_size;
    Ok((first..=last)
        .map(|segno| {
            let timeline = spans
                .iter()
                .rev()
                .find(|s| s.begin / seg_size <= segno)
                .map_or(from_tli, |s| s.tli);
            WalName {
                timeline,
                segno,
                seg_size,
            }
        })
        .collect())
}

/// Whether a backup of timeline `tli` covering [start, stop] lies on `spans`, the history the
/// cluster followed: the cluster was on `tli` over the whole range. A backup taken on a branch
/// the cluster left (the old primary kept running after a copy of it was promoted) is not:
/// its pages hold changes this cluster never had, and pages this cluster changed before its
/// start carry LSNs below it, which a level 1 on it would skip.
pub(crate) fn on_history(spans: &[Span], tli: u32, start: u64, stop: u64) -> bool {
    spans
        .iter()
        .any(|s| s.tli == tli && s.begin <= start && s.end.is_none_or(|e| stop <= e))
}

/// The history of the timeline the target server is on now. Without the history file of a
/// timeline after the first, only that timeline itself is known, so only backups taken on it
/// count as on the history: a level 1 then bases itself on one of those, or becomes a level 0.
pub(crate) fn current_history(
    ctx: &Context,
    source: &dyn crate::source::DataSource,
    session: &mut recman_pg::Session,
) -> Result<Vec<Span>, EngineError> {
    // On a primary the WAL being written names the timeline at once; pg_control's checkpoint
    // timeline lags a promotion until its first checkpoint. A standby has no current WAL.
    let rows = session.simple_query(CURRENT_TIMELINE_SQL)?;
    let row = rows.first();
    let value = row
        .and_then(|r| r.first().cloned().flatten())
        .unwrap_or_default();
    let standby = row.and_then(|r| r.get(1).cloned().flatten()).as_deref() == Some("t");
    let timeline = if standby {
        value.parse::<u32>().ok()
    } else {
        u32::from_str_radix(&value, 16).ok()
    }
    .ok_or_else(|| {
        EngineError::Internal(format!("the server's timeline {value:?} is not a number"))
    })?;
    if timeline == 1 {
        return Ok(history_spans("", 1));
    }
    Ok(match read_history(ctx, source, timeline)? {
        Some(text) => history_spans(&text, timeline),
        None => vec![Span {
            tli: timeline,
            begin: 0,
            end: None,
        }],
    })
}

/// The history file of `timeline`: the cluster's own copy in pg_wal (a promoted cluster
/// always has it), else the archived one; Ok(None) when neither exists.
pub(crate) fn read_history(
    ctx: &Context,
    source: &dyn crate::source::DataSource,
    timeline: u32,
) -> Result<Option<String>, EngineError> {
    let name = format!("{timeline:08X}.history");
    if let Some(d) = source.read_small(&format!("pg_wal/{name}"))? {
        return Ok(Some(String::from_utf8_lossy(&d).into_owned()));
    }
    Ok(crate::archive::read_wal(&ctx.repo, &ctx.db, &name)?
        .map(|d| String::from_utf8_lossy(&d).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEG: u64 = 16 << 20;

    fn names(v: &[WalName]) -> Vec<String> {
        v.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_backup_on_a_branch_the_cluster_left_is_not_on_its_history() {
        // Timeline 2 forked from 1 at 0/5000000.
        let spans = history_spans("1\t0/5000000\tno recovery target specified\n", 2);
        // Before the fork, on timeline 1: on the history.
        assert!(on_history(&spans, 1, 0x0200_0000, 0x0300_0000));
        // Timeline 1 after the fork (the old primary kept running): not.
        assert!(!on_history(&spans, 1, 0x0600_0000, 0x0700_0000));
        // Started before the fork, ended after it on timeline 1: not.
        assert!(!on_history(&spans, 1, 0x0400_0000, 0x0600_0000));
        // On timeline 2 itself: on the history.
        assert!(on_history(&spans, 2, 0x0600_0000, 0x0700_0000));
        // A timeline this cluster never followed.
        assert!(!on_history(&spans, 3, 0x0600_0000, 0x0700_0000));
    }

    #[test]
    fn a_range_crossing_promotions_reads_each_segment_from_the_newest_timeline_begun() {
        // Timeline 3, forked from 2 at 0/5800028, which forked from 1 at 0/3000100.
        let text = "1\t0/3000100\tno recovery target specified\n\n\
                    # a comment\n2\t0/5800028\tbefore 2026-01-01\n";
        let spans = history_spans(text, 3);
        assert_eq!(spans.len(), 3);
        let got = segments_along(&spans, 1, 0x0100_0028, 0x0700_0000, SEG).unwrap();
        assert_eq!(
            names(&got),
            [
                "000000010000000000000001",
                "000000010000000000000002",
                // Holds the switch to 2: timeline 2's file copies 1's bytes up to it.
                "000000020000000000000003",
                "000000020000000000000004",
                "000000030000000000000005",
                "000000030000000000000006",
            ]
        );
        // A parent on timeline 2 before 3 began: found on the path too.
        assert!(segments_along(&spans, 2, 0x0400_0000, 0x0700_0000, SEG).is_ok());
    }

    #[test]
    fn a_parent_off_the_path_has_no_segments() {
        let spans = history_spans("1\t0/3000100\tx\n", 2);
        // Taken on timeline 1 after timeline 2 left it: not this cluster's past.
        let why = segments_along(&spans, 1, 0x0300_0100, 0x0500_0000, SEG).unwrap_err();
        assert!(why.contains("not in the history of timeline 2"), "{why}");
        // A timeline the history does not name.
        assert!(segments_along(&spans, 7, 0x0100_0000, 0x0500_0000, SEG).is_err());
        // Same timeline: the plain range.
        let own = segments_along(&history_spans("", 1), 1, 0x0100_0000, 0x0200_0001, SEG);
        assert_eq!(
            names(&own.unwrap()),
            ["000000010000000000000001", "000000010000000000000002"]
        );
    }
}
