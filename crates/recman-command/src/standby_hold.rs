//! ARCHIVELOG DELETION POLICY TO APPLIED ON ALL STANDBY: DELETE ARCHIVELOG keeps every
//! segment some standby has not replayed yet, since a standby that falls behind reads it back
//! through its restore_command.

use crate::error::ExecError;
/// How far the standbys have got (with the DELETE outcomes that report it).
pub use crate::maint::Replayed;
use crate::maint::WalItem;
use recman_engine::{Context, EngineError};
use std::collections::HashMap;

const REPLAYED: &str = "select (select count(*) from pg_stat_replication where replay_lsn is not null)::text,
       (select count(*) from pg_replication_slots where slot_type = 'physical' and restart_lsn is not null)::text,
       least((select min(replay_lsn) from pg_stat_replication),
             (select min(restart_lsn) from pg_replication_slots where slot_type = 'physical'))::text";

/// Asks the database's server. The policy cannot be applied without it: a segment deleted on
/// a guess could be the one a lagging standby needs next.
pub fn replayed(ctx: &Context) -> Result<Replayed, ExecError> {
    let refuse = |why: String| {
        EngineError::Invalid(format!(
            "archivelog deletion policy applied-on-all-standby: cannot learn what the standbys of database {} replayed ({why}); hint: pass --target with a connection string to the primary, or `configure archivelog-deletion-policy` without applied-on-all-standby",
            ctx.db.name
        ))
    };
    let t =
        recman_pg::resolve_conninfo(ctx.conninfo.as_deref()).map_err(|e| refuse(e.to_string()))?;
    let mut s = recman_pg::Session::connect(&t).map_err(|e| refuse(e.to_string()))?;
    if s.system_identifier != ctx.db.system_identifier {
        return Err(refuse(format!(
            "the server reached has system identifier {}, not the database's {}",
            s.system_identifier, ctx.db.system_identifier
        ))
        .into());
    }
    let rows = s
        .simple_query(REPLAYED)
        .map_err(|e| refuse(e.to_string()))?;
    let row = rows.into_iter().next().unwrap_or_default();
    let col = |n: usize| row.get(n).cloned().flatten();
    let count = |n: usize| col(n).and_then(|v| v.parse().ok()).unwrap_or(0);
    let position = match col(2) {
        Some(text) => Some(
            text.parse::<recman_pg::Lsn>()
                .map_err(|e| refuse(format!("position {text:?}: {e}")))?
                .0,
        ),
        None => None,
    };
    Ok(Replayed {
        position,
        standbys: count(0),
        slots: count(1),
    })
}

/// Splits `wal` into what may go and the names kept for a standby: a segment may go once it
/// ends at or before the replayed position. `sizes` holds each segment's size by name.
pub fn hold(
    wal: Vec<WalItem>,
    replayed: &Replayed,
    sizes: &HashMap<String, u64>,
) -> (Vec<WalItem>, Vec<String>) {
    let Some(upto) = replayed.position else {
        return (wal, Vec::new());
    };
    let ends = |w: &WalItem| {
        let size = *sizes.get(&w.name)?;
        Some(recman_engine::segment_lsn(&w.name, size)? + size)
    };
    let (go, kept): (Vec<WalItem>, Vec<WalItem>) = wal
        .into_iter()
        .partition(|w| ends(w).is_some_and(|end| end <= upto));
    (go, kept.into_iter().map(|w| w.name).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str) -> WalItem {
        WalItem {
            name: name.into(),
            path: format!("wal/{name}"),
            archived_at: 0,
        }
    }

    #[test]
    fn a_segment_goes_once_every_standby_replayed_past_its_end() {
        let seg = 16u64 << 20;
        let names = ["000000010000000000000001", "000000010000000000000002"];
        let sizes: HashMap<String, u64> = names.iter().map(|n| (n.to_string(), seg)).collect();
        let wal = || names.iter().map(|n| item(n)).collect::<Vec<_>>();
        let at = |position| Replayed {
            position,
            standbys: 1,
            slots: 0,
        };
        // Replayed to the end of segment 1 exactly: it goes, 2 stays.
        let (go, kept) = hold(wal(), &at(Some(2 * seg)), &sizes);
        assert_eq!(go, vec![item(names[0])]);
        assert_eq!(kept, vec![names[1].to_string()]);
        let (go, kept) = hold(wal(), &at(Some(2 * seg - 1)), &sizes);
        assert!(go.is_empty());
        assert_eq!(kept.len(), 2);
        let (go, kept) = hold(wal(), &at(None), &sizes);
        assert_eq!(
            (go.len(), kept.len()),
            (2, 0),
            "no standby holds nothing back"
        );
        // A segment of unknown size is kept: its end cannot be known.
        let (go, _) = hold(
            vec![item("000000010000000000000001")],
            &at(Some(9 * seg)),
            &HashMap::new(),
        );
        assert!(go.is_empty());
    }
}
