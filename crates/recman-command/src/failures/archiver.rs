//! The archiving checks: PostgreSQL's own view of its archiver (pg_stat_archiver), and how long
//! the oldest segment has waited for it (the `.ready` files of pg_wal/archive_status), which
//! catches an archiver that is behind without failing (an empty archive_command, a slow one).
//! They need the server; when it does not answer they are skipped, saying so, and a failure
//! found before stays open (nothing shows that it was fixed).

use super::finding::{CheckInputs, Checked, Finding};
use super::kind::Kind;
use recman_engine::Context;

/// pg_stat_archiver's row, as text.
const QUERY: &str = "select failed_count::text, coalesce(last_failed_wal, ''),
       coalesce(last_archived_wal, ''),
       coalesce(to_char(last_failed_time, 'YYYY-MM-DD HH24:MI:SS TZ'), ''),
       (last_failed_time is not null
        and (last_archived_time is null or last_failed_time > last_archived_time))::text,
       current_setting('archive_mode')
  from pg_stat_archiver";

/// The segments waiting for the archiver: how many, and the age of the oldest in seconds.
const WAITING: &str = "select count(*)::text,
       coalesce(extract(epoch from now() - min(modification))::bigint, 0)::text
  from pg_ls_archive_statusdir()
 where name like '%.ready'";

/// An hour: without an RPO target, a segment waiting longer than this is behind by any
/// measure (the archiver tries each one within seconds).
const BEHIND_WITHOUT_TARGET: i64 = 3_600_000_000;

pub(crate) fn archiving(ctx: &Context, i: &CheckInputs, out: &mut Checked) {
    let session = recman_pg::resolve_conninfo(ctx.conninfo.as_deref())
        .and_then(|t| recman_pg::Session::connect(&t));
    let rows = match session {
        Ok(mut s) => s.simple_query(QUERY).map(|r| (r, s.simple_query(WAITING))),
        Err(e) => Err(e),
    };
    let (rows, waiting) = match rows {
        Ok(r) => r,
        Err(e) => {
            out.skipped.push(format!(
                "archiving was not checked: the database server did not answer ({e}); hint: pass --target with a connection string to the cluster"
            ));
            return;
        }
    };
    out.server_up = true;
    out.ran.push(Kind::ArchivingFailed);
    match &waiting {
        Ok(w) => {
            let row = w.first().cloned().unwrap_or_default();
            let col = |n: usize| row.get(n).cloned().flatten().unwrap_or_default();
            let (count, oldest) = (col(0).parse().unwrap_or(0), col(1).parse().unwrap_or(0));
            behind(ctx, i, count, oldest, out);
        }
        Err(e) => out.skipped.push(format!(
            "the archiver's backlog was not checked: pg_ls_archive_statusdir() failed ({e}); hint: connect as a superuser or a member of pg_monitor"
        )),
    }
    let Some(r) = rows.first() else {
        return;
    };
    let col = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
    let (failed_count, failed_wal, archived_wal, failed_at, failing, mode) =
        (col(0), col(1), col(2), col(3), col(4), col(5));
    if failing != "true" {
        return;
    }
    let last = if archived_wal.is_empty() {
        "nothing was archived since the statistics were reset".to_string()
    } else {
        format!("the last segment archived was {archived_wal}")
    };
    out.findings.push(Finding {
        kind: Kind::ArchivingFailed,
        object: "archive_command".into(),
        message: format!(
            "archiving of database {} is failing (archive_mode {mode}): archive_command failed on segment {failed_wal} at {failed_at} ({failed_count} failures so far) and has not succeeded since; {last}. WAL piles up in pg_wal and is not in the repository",
            ctx.db.name
        ),
        segments: Vec::new(),
    });
}

/// `count` segments wait for the archiver, the oldest for `oldest_secs`: behind when that is
/// longer than the RPO target (an hour without one), since the repository then lacks WAL the
/// target promises.
fn behind(ctx: &Context, i: &CheckInputs, count: u64, oldest_secs: i64, out: &mut Checked) {
    let limit = i.rpo_target.unwrap_or(BEHIND_WITHOUT_TARGET);
    if count == 0 || oldest_secs * 1_000_000 <= limit {
        return;
    }
    let limit_of = match i.rpo_target {
        Some(_) => "the RPO target",
        None => "an hour (no RPO target is configured)",
    };
    out.findings.push(Finding::new(
        Kind::ArchivingFailed,
        "archive-lag",
        format!(
            "archiving of database {} is behind: {count} segment(s) wait in pg_wal for the archiver, the oldest for {oldest_secs}s, longer than {limit_of} of {}s; archive_command may be empty or too slow",
            ctx.db.name,
            limit / 1_000_000
        ),
    ));
}
