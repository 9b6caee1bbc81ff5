//! What a repository costs (issue 41): the object-store requests of each backup and of each
//! day of archiving, recorded in the catalog from the process's request meter, and REPORT
//! COSTS, which shows them so that a retention or archiving policy can be priced.

use recman_catalog::meter::{self, Kind, Usage};
use recman_catalog::{CostRecord, CostScope, Repository};
use recman_engine::EngineError;

use crate::env::Env;
use crate::error::{ExecError, env};

/// One backup's or one archiving day's requests and bytes, by kind.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CostRow {
    pub database: String,
    pub scope: CostScope,
    /// The backup's id, or the UTC day (YYYY-MM-DD).
    pub key: String,
    pub requests: Requests,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Requests and bytes of each kind that had any.
    pub by_kind: Vec<KindRow>,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Requests {
    pub put: u64,
    pub get: u64,
    pub head: u64,
    pub list: u64,
    pub delete: u64,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KindRow {
    pub kind: &'static str,
    #[serde(flatten)]
    pub usage: meter::KindUsage,
}

impl CostRow {
    pub fn of(database: &str, r: &CostRecord) -> CostRow {
        let n = |k| r.usage.of(k).requests;
        CostRow {
            database: database.to_string(),
            scope: r.scope,
            key: r.key.clone(),
            requests: Requests {
                put: n(Kind::Put),
                get: n(Kind::Get),
                head: n(Kind::Head),
                list: n(Kind::List),
                delete: n(Kind::Delete),
            },
            bytes_sent: r.usage.total().bytes_sent,
            bytes_received: r.usage.total().bytes_received,
            by_kind: r
                .usage
                .kinds()
                .map(|(k, usage)| KindRow {
                    kind: k.as_str(),
                    usage,
                })
                .collect(),
        }
    }
}

/// Records what this process sent to the store since `before` as backup `id`'s cost. A
/// backup that is done stays done: a failure to record is a warning, not the backup's.
pub fn record_backup(repo: &Repository, db_id: i64, id: &str, before: &Usage) -> Option<String> {
    add(repo, db_id, CostScope::Backup, id, before)
}

/// Adds what this process sent to the store since `before` to today's (UTC) archiving of
/// database `db_id`; a warning when it cannot be recorded.
pub fn record_archiving(repo: &Repository, db_id: i64, before: &Usage) -> Option<String> {
    let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
    add(repo, db_id, CostScope::Archive, &day, before)
}

fn add(
    repo: &Repository,
    db_id: i64,
    scope: CostScope,
    key: &str,
    before: &Usage,
) -> Option<String> {
    let usage = meter::snapshot().since(before);
    if usage.is_empty() {
        return None; // a disk or tape repository: no request is billed
    }
    let now = crate::clock::now_micros();
    repo.catalog()
        .add_costs(db_id, scope, key, &usage, now)
        .err()
        .map(|e| {
            format!(
                "the object-store requests of {key} were not recorded in the catalog: {e}; hint: the work itself is done; report costs and the cost metrics lack these requests"
            )
        })
}

/// REPORT COSTS's rows: every backup's and every archiving day's requests, of the database the front
/// end names or of all.
pub fn report_costs(e: &dyn Env) -> Result<Vec<CostRow>, ExecError> {
    let repo = env(e.repository())?;
    let dbs = crate::env::reported_databases(&repo, e)?;
    let mut rows = Vec::new();
    for db in dbs {
        let recs = repo.catalog().costs(db.id).map_err(EngineError::from)?;
        rows.extend(recs.iter().map(|r| CostRow::of(&db.name, r)));
    }
    Ok(rows)
}
