//! Failures the checks found (RMAN's Data Recovery Advisor: LIST FAILURE). A check reports
//! what it finds now; the catalog turns that into episodes: a failure stays OPEN, with the
//! same id, while checks keep finding it, and is CLOSED by the first check of its kind that
//! no longer does. Found again later, it is a new failure with a new id.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::{DbRow, vals};

/// One failure as recorded. Times are unix microseconds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FailureRecord {
    pub id: i64,
    pub db_id: i64,
    /// What kind of check found it (`wal-gap`, `archiving-failed`, ...).
    pub kind: String,
    /// What it is about, within its kind (a segment, a piece, the archiver): with the kind,
    /// what makes a later finding the same failure.
    pub object: String,
    /// CRITICAL, HIGH or LOW.
    pub priority: String,
    /// OPEN or CLOSED.
    pub status: String,
    pub message: String,
    pub first_seen: i64,
    pub last_seen: i64,
    pub closed_at: Option<i64>,
}

/// What one check found now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundFailure {
    pub kind: String,
    pub object: String,
    pub priority: String,
    pub message: String,
}

/// What recording a check changed: ids of failures opened and closed by it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureChanges {
    pub opened: Vec<i64>,
    pub closed: Vec<i64>,
}

const COLS: &str =
    "id, db_id, kind, object, priority, status, message, first_seen, last_seen, closed_at";

fn failure_row(r: &DbRow<'_>) -> Result<FailureRecord, CatalogError> {
    Ok(FailureRecord {
        id: r.get_i64(0)?,
        db_id: r.get_i64(1)?,
        kind: r.get_text(2)?,
        object: r.get_text(3)?,
        priority: r.get_text(4)?,
        status: r.get_text(5)?,
        message: r.get_text(6)?,
        first_seen: r.get_i64(7)?,
        last_seen: r.get_i64(8)?,
        closed_at: r.get_opt_i64(9)?,
    })
}

impl Catalog {
    /// Records a check of database `db_id` at `now`: each of `found` refreshes its open
    /// failure or opens a new one; an open failure of a kind in `checked` that is not in
    /// `found` is closed. Kinds not in `checked` (a check that could not run) stay as they are.
    pub fn record_failures(
        &self,
        db_id: i64,
        checked: &[&str],
        found: &[FoundFailure],
        now: i64,
    ) -> Result<FailureChanges, CatalogError> {
        let ctx = "recording the failures a check found";
        self.write_tx(ctx, || {
            let open = self.failures(db_id, false)?;
            let mut changes = FailureChanges::default();
            for f in found {
                let same = open
                    .iter()
                    .find(|o| o.kind == f.kind && o.object == f.object);
                match same {
                    Some(o) => {
                        self.exec(
                            ctx,
                            "UPDATE failure SET last_seen = ?2, message = ?3, priority = ?4
                             WHERE id = ?1",
                            vals![o.id, now, f.message.as_str(), f.priority.as_str()],
                        )?;
                    }
                    None => {
                        let id = self.query_opt(
                            ctx,
                            "INSERT INTO failure (db_id, kind, object, priority, status, message,
                                 first_seen, last_seen)
                             VALUES (?1, ?2, ?3, ?4, 'OPEN', ?5, ?6, ?6) RETURNING id",
                            vals![
                                db_id,
                                f.kind.as_str(),
                                f.object.as_str(),
                                f.priority.as_str(),
                                f.message.as_str(),
                                now
                            ],
                            |r| r.get_i64(0),
                        )?;
                        changes.opened.extend(id);
                    }
                }
            }
            for o in &open {
                let still = found
                    .iter()
                    .any(|f| f.kind == o.kind && f.object == o.object);
                if !still && checked.contains(&o.kind.as_str()) {
                    self.exec(
                        ctx,
                        "UPDATE failure SET status = 'CLOSED', closed_at = ?2 WHERE id = ?1",
                        vals![o.id, now],
                    )?;
                    changes.closed.push(o.id);
                }
            }
            Ok(changes)
        })
    }

    /// The failures of database `db_id` by id: the open ones, or with `all` the closed too.
    pub fn failures(&self, db_id: i64, all: bool) -> Result<Vec<FailureRecord>, CatalogError> {
        let sql = if all {
            format!("SELECT {COLS} FROM failure WHERE db_id = ?1 ORDER BY id")
        } else {
            format!("SELECT {COLS} FROM failure WHERE db_id = ?1 AND status = 'OPEN' ORDER BY id")
        };
        self.query("reading failures", &sql, vals![db_id], failure_row)
    }

    /// Failure `id`, open or closed.
    pub fn failure(&self, id: i64) -> Result<Option<FailureRecord>, CatalogError> {
        self.query_opt(
            &format!("reading failure {id}"),
            &format!("SELECT {COLS} FROM failure WHERE id = ?1"),
            vals![id],
            failure_row,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(kind: &str, object: &str) -> FoundFailure {
        FoundFailure {
            kind: kind.into(),
            object: object.into(),
            priority: "HIGH".into(),
            message: format!("{kind} of {object}"),
        }
    }

    #[test]
    fn a_failure_stays_open_until_a_check_of_its_kind_misses_it_and_reopens_as_new() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::create(&dir.path().join("catalog.db")).unwrap();
        let db = cat.register_database("main", 7, 150004, "/pg").unwrap().id;
        let a = found("archiving-failed", "pg_stat_archiver");
        let g = found("wal-gap", "000000010000000000000005");
        let kinds = ["archiving-failed", "wal-gap"];
        let c = cat
            .record_failures(db, &kinds, &[a.clone(), g.clone()], 10)
            .unwrap();
        assert_eq!(c.opened.len(), 2);
        let (ida, idg) = (c.opened[0], c.opened[1]);
        // Found again: same ids, last seen moves, nothing opened.
        let c = cat
            .record_failures(db, &kinds, &[a.clone(), g.clone()], 20)
            .unwrap();
        assert_eq!(c, FailureChanges::default());
        let f = cat.failure(ida).unwrap().unwrap();
        assert_eq!(
            (f.first_seen, f.last_seen, f.status.as_str()),
            (10, 20, "OPEN")
        );
        // A check that could not look at the archiver leaves its failure open.
        let c = cat.record_failures(db, &["wal-gap"], &[], 30).unwrap();
        assert_eq!(c.closed, vec![idg]);
        assert_eq!(cat.failures(db, false).unwrap()[0].id, ida);
        let closed = cat.failure(idg).unwrap().unwrap();
        assert_eq!(
            (closed.status.as_str(), closed.closed_at),
            ("CLOSED", Some(30))
        );
        // The gap found again after closing is a new failure.
        let c = cat.record_failures(db, &kinds, &[a, g], 40).unwrap();
        assert_eq!(c.opened.len(), 1);
        assert!(c.opened[0] > idg);
        assert_eq!(cat.failures(db, true).unwrap().len(), 3);
        assert_eq!(cat.failures(db, false).unwrap().len(), 2);
    }
}
