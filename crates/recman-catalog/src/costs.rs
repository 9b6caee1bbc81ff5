//! What the repository's requests cost (issue 41): the requests and payload bytes its store
//! was sent, by kind, summed per backup and per UTC day of archiving, for `report costs`.

use recman_media::meter::{Kind, KindUsage, Usage};

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

/// What a row of costs is summed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CostScope {
    /// The backup command that made one backup; the key is the backup's id.
    Backup,
    /// archive-push and archive-get on one UTC day; the key is the day, YYYY-MM-DD.
    Archive,
}

impl CostScope {
    fn as_str(self) -> &'static str {
        match self {
            CostScope::Backup => "BACKUP",
            CostScope::Archive => "ARCHIVE",
        }
    }
}

/// The requests and bytes of one backup or one day of archiving, by kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostRecord {
    pub db_id: i64,
    pub scope: CostScope,
    pub key: String,
    pub usage: Usage,
    /// Unix microseconds of the last addition.
    pub updated_at: i64,
}

impl Catalog {
    /// Adds `usage` to the costs of `scope`/`key`: a day's archiving is many commands, and a
    /// backup's own numbers are written once.
    pub fn add_costs(
        &self,
        db_id: i64,
        scope: CostScope,
        key: &str,
        usage: &Usage,
        now_micros: i64,
    ) -> Result<(), CatalogError> {
        let ctx = "recording what the repository's requests cost";
        self.write_tx(ctx, || {
            for (kind, u) in usage.kinds() {
                self.exec(
                    ctx,
                    "INSERT INTO repo_cost (db_id, scope, scope_key, kind, requests, bytes_sent,
                       bytes_received, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (db_id, scope, scope_key, kind) DO UPDATE SET
                       requests = repo_cost.requests + excluded.requests,
                       bytes_sent = repo_cost.bytes_sent + excluded.bytes_sent,
                       bytes_received = repo_cost.bytes_received + excluded.bytes_received,
                       updated_at = excluded.updated_at",
                    vals![
                        db_id,
                        scope.as_str(),
                        key,
                        kind.as_str(),
                        u.requests as i64,
                        u.bytes_sent as i64,
                        u.bytes_received as i64,
                        now_micros
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// The costs of database `db_id`: backups, then days of archiving, each by key.
    pub fn costs(&self, db_id: i64) -> Result<Vec<CostRecord>, CatalogError> {
        let rows = self.query(
            "reading what the repository's requests cost",
            "SELECT scope, scope_key, kind, requests, bytes_sent, bytes_received, updated_at
             FROM repo_cost WHERE db_id = ?1 ORDER BY scope DESC, scope_key, kind",
            vals![db_id],
            |r| {
                Ok((
                    r.get_text(0)?,
                    r.get_text(1)?,
                    r.get_text(2)?,
                    [r.get_i64(3)?, r.get_i64(4)?, r.get_i64(5)?],
                    r.get_i64(6)?,
                ))
            },
        )?;
        let mut out: Vec<CostRecord> = Vec::new();
        for (scope, key, kind, [n, sent, received], at) in rows {
            let scope = if scope == "BACKUP" {
                CostScope::Backup
            } else {
                CostScope::Archive
            };
            let Some(kind) = Kind::parse(&kind) else {
                continue; // a kind of a newer build: not ours to show
            };
            let same = out.last().is_some_and(|c| c.scope == scope && c.key == key);
            if !same {
                out.push(CostRecord {
                    db_id,
                    scope,
                    key,
                    usage: Usage::default(),
                    updated_at: at,
                });
            }
            let last = out.last_mut().expect("a record was pushed above");
            last.updated_at = last.updated_at.max(at);
            last.usage.set(
                kind,
                KindUsage {
                    requests: n as u64,
                    bytes_sent: sent as u64,
                    bytes_received: received as u64,
                },
            );
        }
        Ok(out)
    }
}
