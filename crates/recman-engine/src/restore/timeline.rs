//! Timelines and segment names for the WAL plan: which timelines recovery walks (the target
//! and its parents, from the target's history file) and the segment numbers of names, in the
//! cluster's segment size.

use crate::context::Context;
use crate::error::EngineError;
use recman_format::manifest::BackupManifest;
use recman_pg::{Lsn, WalName};
use std::collections::BTreeSet;

pub(super) fn parse_segment(name: &str, seg_size: u64) -> Option<(u32, u64)> {
    if !crate::archive::is_segment_name(name) {
        return None;
    }
    let tli = u32::from_str_radix(&name[..8], 16).ok()?;
    let log = u64::from_str_radix(&name[8..16], 16).ok()?;
    let seg = u64::from_str_radix(&name[16..24], 16).ok()?;
    Some((tli, log * (0x1_0000_0000 / seg_size) + seg))
}

pub(super) fn seg_name(timeline: u32, segno: u64, seg_size: u64) -> String {
    WalName {
        timeline,
        segno,
        seg_size,
    }
    .to_string()
}

/// One timeline of the ancestry, as an LSN range [begin, end).
pub(super) use crate::tracking_path::Span;

/// The timelines recovery walks, oldest first: recovery_target_timeline 'latest' follows the
/// run of history files after the backup's timeline, as PostgreSQL probes for them.
/// `histories`: the timelines whose history file the archive holds.
pub(super) fn ancestry(
    ctx: &Context,
    m: &BackupManifest,
    histories: &BTreeSet<u32>,
    timeline: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Vec<Span>, EngineError> {
    let own = vec![Span {
        tli: m.timeline,
        begin: 0,
        end: None,
    }];
    let target = match timeline.map(str::trim) {
        None | Some("latest") => {
            let mut t = m.timeline;
            while histories.contains(&(t + 1)) {
                t += 1;
            }
            t
        }
        Some("current") => m.timeline,
        Some(n) => {
            match n.parse::<u32>() {
                Ok(t) => t,
                Err(_) => {
                    notes.push(format!("timeline {n:?} is not a number: the WAL plan follows the backup's timeline {}", m.timeline));
                    m.timeline
                }
            }
        }
    };
    if target == m.timeline {
        return Ok(own);
    }
    let name = format!("{target:08X}.history");
    let Some(data) = crate::archive::read_wal(&ctx.repo, &ctx.db, &name)? else {
        notes.push(format!(
            "history file {name} of target timeline {target} is not archived: PostgreSQL cannot follow it; the WAL plan follows the backup's timeline {}",
            m.timeline
        ));
        return Ok(own);
    };
    let spans = crate::tracking_path::history_spans(&String::from_utf8_lossy(&data), target);
    let start: Lsn = m.start_lsn.parse()?;
    let on_path = spans
        .iter()
        .any(|s| s.tli == m.timeline && s.end.is_none_or(|e| start.0 < e));
    if !on_path {
        notes.push(format!(
            "backup {} (timeline {} at {}) is not in the history of timeline {target}: PostgreSQL will refuse to recover along it; the WAL plan follows the backup's timeline",
            m.backup_id, m.timeline, m.start_lsn
        ));
        return Ok(own);
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_parse_with_the_segment_size() {
        let seg = 16 << 20;
        assert_eq!(
            parse_segment("0000000200000001000000FF", seg),
            Some((2, 0x100 + 0xFF))
        );
        assert_eq!(seg_name(2, 0x1FF, seg), "0000000200000001000000FF");
        // 64 MiB segments: 64 per 4 GiB log file.
        assert_eq!(
            parse_segment("000000010000000300000010", 64 << 20),
            Some((1, 3 * 64 + 16))
        );
        assert_eq!(parse_segment("00000002.history", seg), None);
    }
}
