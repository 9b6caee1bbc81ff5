//! Named restore points (RMAN's CREATE RESTORE POINT): pg_create_restore_point on the target,
//! with the name's LSN and time kept in the catalog's settings so a restore can pick the
//! newest backup that ends before the point without reading the WAL.

use crate::context::Context;
use crate::error::EngineError;
use recman_pg::Lsn;

/// The catalog setting that holds a point's "LSN MICROS"; per database, since two clusters
/// may use the same names.
fn key(db_id: i64, name: &str) -> String {
    format!("restore_point.{db_id}.{name}")
}

/// Creates the point on the target and records it; returns its LSN.
pub fn create_restore_point(ctx: &Context, name: &str) -> Result<Lsn, EngineError> {
    if name.is_empty() || name.len() > 63 {
        return Err(crate::refusal::Input::RestorePointName {
            name: name.to_string(),
        }
        .into());
    }
    if ctx.repo.catalog().config(&key(ctx.db.id, name))?.is_some() {
        return Err(EngineError::Invalid(format!(
            "restore point {name:?} already exists for database {}; hint: choose another name (recovery stops at the first point of a name)",
            ctx.db.name
        )));
    }
    let target = recman_pg::resolve_conninfo(ctx.conninfo.as_deref())?;
    let mut session = recman_pg::Session::connect(&target)?;
    let sql = format!(
        "select pg_create_restore_point('{}')::text",
        name.replace('\'', "''")
    );
    let rows = session.simple_query(&sql)?;
    let text = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .ok_or_else(|| {
            EngineError::from(crate::refusal::Cluster::NoRestorePointLsn {
                server: session.target().to_string(),
            })
        })?;
    let lsn: Lsn = text.parse()?;
    let micros = chrono::Utc::now().timestamp_micros();
    ctx.repo
        .catalog()
        .set_config(&key(ctx.db.id, name), &format!("{lsn} {micros}"))?;
    Ok(lsn)
}

/// The LSN recorded for a point.
pub fn restore_point_lsn(ctx: &Context, name: &str) -> Result<Lsn, EngineError> {
    let value = ctx
        .repo
        .catalog()
        .config(&key(ctx.db.id, name))?
        .ok_or_else(|| {
            EngineError::NotFound(format!(
                "restore point {name:?} is not recorded for database {}; hint: create it with `recman create restore-point {name}` (points made by other tools are not known)",
                ctx.db.name
            ))
        })?;
    let lsn = value.split_whitespace().next().unwrap_or_default();
    Ok(lsn.parse()?)
}
