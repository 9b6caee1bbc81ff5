//! The archiving check: PostgreSQL's own view of its archiver (pg_stat_archiver). It needs the
//! server; when the server does not answer the check is skipped, saying so, and a failure it
//! found before stays open (nothing shows that it was fixed).

use super::checks::Checked;
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

pub(crate) fn archiving(ctx: &Context, out: &mut Checked) {
    let rows = recman_pg::resolve_conninfo(ctx.conninfo.as_deref())
        .and_then(|t| recman_pg::Session::connect(&t))
        .and_then(|mut s| s.simple_query(QUERY));
    let rows = match rows {
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
    out.findings.push(super::checks::Finding {
        kind: Kind::ArchivingFailed,
        object: "archive_command".into(),
        message: format!(
            "archiving of database {} is failing (archive_mode {mode}): archive_command failed on segment {failed_wal} at {failed_at} ({failed_count} failures so far) and has not succeeded since; {last}. WAL piles up in pg_wal and is not in the repository",
            ctx.db.name
        ),
        segments: Vec::new(),
    });
}
