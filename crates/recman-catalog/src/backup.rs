//! Backups, their pieces and the corrupt blocks they found.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OptionalExtension, Row, named_params};

use crate::catalog::{Catalog, to_i64};
use crate::error::CatalogError;
use crate::records::{BackupRecord, BackupStatus, CorruptBlock, PieceRecord};

impl ToSql for BackupStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for BackupStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        value
            .as_str()?
            .parse()
            .map_err(|e| FromSqlError::Other(Box::new(e)))
    }
}

const BACKUP_COLS: &str = "id, db_id, tag, backup_type, status, start_lsn, stop_lsn, timeline, \
    start_wal, stop_wal, start_time, stop_time, stop_next_xid, db_bytes, written_bytes, \
    file_count, channels, compression, filesperset, maxopenfiles, pid, host, error";

const INSERT_BACKUP: &str = "INSERT INTO backup (id, db_id, tag, backup_type, status, start_lsn, \
    stop_lsn, timeline, start_wal, stop_wal, start_time, stop_time, stop_next_xid, db_bytes, \
    written_bytes, file_count, channels, compression, filesperset, maxopenfiles, pid, host, error)
    VALUES (:id, :db_id, :tag, :backup_type, :status, :start_lsn, :stop_lsn, :timeline, \
    :start_wal, :stop_wal, :start_time, :stop_time, :stop_next_xid, :db_bytes, :written_bytes, \
    :file_count, :channels, :compression, :filesperset, :maxopenfiles, :pid, :host, :error)";

pub(crate) const UPDATE_BACKUP: &str = "UPDATE backup SET db_id = :db_id, tag = :tag, \
    backup_type = :backup_type, status = :status, start_lsn = :start_lsn, stop_lsn = :stop_lsn, \
    timeline = :timeline, start_wal = :start_wal, stop_wal = :stop_wal, \
    start_time = :start_time, stop_time = :stop_time, stop_next_xid = :stop_next_xid, \
    db_bytes = :db_bytes, written_bytes = :written_bytes, file_count = :file_count, \
    channels = :channels, compression = :compression, filesperset = :filesperset, \
    maxopenfiles = :maxopenfiles, pid = :pid, host = :host, error = :error WHERE id = :id";

/// Runs INSERT_BACKUP or UPDATE_BACKUP for `b` on `conn` (the catalog's connection or a
/// transaction on it); returns the number of rows changed.
pub(crate) fn write_backup(
    cat: &Catalog,
    conn: &Connection,
    sql: &str,
    b: &BackupRecord,
    context: &str,
) -> Result<usize, CatalogError> {
    let opt = |what, v: Option<u64>| v.map(|v| to_i64(what, v)).transpose();
    let start_lsn = to_i64("start lsn", b.start_lsn)?;
    let stop_lsn = opt("stop lsn", b.stop_lsn)?;
    let stop_next_xid = opt("next xid", b.stop_next_xid)?;
    let db_bytes = to_i64("database size", b.db_bytes)?;
    let written_bytes = to_i64("written size", b.written_bytes)?;
    let file_count = to_i64("file count", b.file_count)?;
    let tag = normalize_tag(&b.tag);
    let mut stmt = conn.prepare_cached(sql).map_err(cat.sql(context))?;
    stmt.execute(named_params! {
        ":id": b.id, ":db_id": b.db_id, ":tag": tag, ":backup_type": b.backup_type,
        ":status": b.status, ":start_lsn": start_lsn, ":stop_lsn": stop_lsn,
        ":timeline": b.timeline, ":start_wal": b.start_wal, ":stop_wal": b.stop_wal,
        ":start_time": b.start_time, ":stop_time": b.stop_time, ":stop_next_xid": stop_next_xid,
        ":db_bytes": db_bytes, ":written_bytes": written_bytes, ":file_count": file_count,
        ":channels": b.channels, ":compression": b.compression, ":filesperset": b.filesperset,
        ":maxopenfiles": b.maxopenfiles, ":pid": b.pid, ":host": b.host, ":error": b.error,
    })
    .map_err(cat.sql(context))
}

/// Tags are case-insensitive, as in RMAN; storing them uppercase makes lookups exact.
fn normalize_tag(tag: &str) -> String {
    tag.to_uppercase()
}

fn backup_row(r: &Row<'_>) -> rusqlite::Result<BackupRecord> {
    Ok(BackupRecord {
        id: r.get(0)?,
        db_id: r.get(1)?,
        tag: r.get(2)?,
        backup_type: r.get(3)?,
        status: r.get(4)?,
        start_lsn: r.get(5)?,
        stop_lsn: r.get(6)?,
        timeline: r.get(7)?,
        start_wal: r.get(8)?,
        stop_wal: r.get(9)?,
        start_time: r.get(10)?,
        stop_time: r.get(11)?,
        stop_next_xid: r.get(12)?,
        db_bytes: r.get(13)?,
        written_bytes: r.get(14)?,
        file_count: r.get(15)?,
        channels: r.get(16)?,
        compression: r.get(17)?,
        filesperset: r.get(18)?,
        maxopenfiles: r.get(19)?,
        pid: r.get(20)?,
        host: r.get(21)?,
        error: r.get(22)?,
    })
}

impl Catalog {
    /// Records a new backup, normally RUNNING, before any piece is written: a crash then
    /// leaves a RUNNING row that [`Catalog::fail_running_backups`] later marks FAILED.
    pub fn insert_backup(&self, b: &BackupRecord) -> Result<(), CatalogError> {
        let ctx = format!("recording backup {}", b.id);
        write_backup(self, &self.conn, INSERT_BACKUP, b, &ctx)?;
        Ok(())
    }

    /// Replaces the whole row of backup `b.id`.
    pub fn update_backup(&self, b: &BackupRecord) -> Result<(), CatalogError> {
        let ctx = format!("updating backup {}", b.id);
        let n = write_backup(self, &self.conn, UPDATE_BACKUP, b, &ctx)?;
        if n == 0 {
            return Err(CatalogError::BackupNotFound { id: b.id.clone() });
        }
        Ok(())
    }

    pub fn backup(&self, id: &str) -> Result<Option<BackupRecord>, CatalogError> {
        let sql = format!("SELECT {BACKUP_COLS} FROM backup WHERE id = ?1");
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut s| s.query_row([id], backup_row).optional())
            .map_err(self.sql(format!("reading backup {id}")))
    }

    /// The backups of one database, oldest first: ordered by start time, then id (ids carry
    /// their creation time, so of two backups of the same start the later-made comes last).
    pub fn backups(&self, db_id: i64) -> Result<Vec<BackupRecord>, CatalogError> {
        self.query_backups("WHERE db_id = ?1", (db_id,), "reading backups")
    }

    /// The backups of one database carrying `tag` (any case), oldest first.
    pub fn backup_by_tag(&self, db_id: i64, tag: &str) -> Result<Vec<BackupRecord>, CatalogError> {
        let tag = normalize_tag(tag);
        let ctx = format!("reading backups tagged {tag}");
        self.query_backups("WHERE db_id = ?1 AND tag = ?2", (db_id, &tag), &ctx)
    }

    fn query_backups(
        &self,
        filter: &str,
        params: impl rusqlite::Params,
        context: &str,
    ) -> Result<Vec<BackupRecord>, CatalogError> {
        let sql = format!("SELECT {BACKUP_COLS} FROM backup {filter} ORDER BY start_time, id");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(self.sql(context))?;
        let rows = stmt
            .query_map(params, backup_row)
            .map_err(self.sql(context))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(context))
    }

    /// Marks every RUNNING backup of this database FAILED with `reason`. Called under the
    /// repository lock, so none of them can still be running. Returns their ids.
    pub fn fail_running_backups(
        &self,
        db_id: i64,
        reason: &str,
    ) -> Result<Vec<String>, CatalogError> {
        let ctx = "marking interrupted backups failed";
        let tx = self.write_tx(ctx)?;
        let ids = {
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE backup SET status = 'FAILED', error = ?2
                     WHERE db_id = ?1 AND status = 'RUNNING' RETURNING id",
                )
                .map_err(self.sql(ctx))?;
            let rows = stmt
                .query_map((db_id, reason), |r| r.get::<_, String>(0))
                .map_err(self.sql(ctx))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.sql(ctx))?
        };
        tx.commit().map_err(self.sql(ctx))?;
        let mut ids = ids;
        ids.sort();
        Ok(ids)
    }

    /// Records the set's pieces, corrupt blocks and the backup's final row in one
    /// transaction, so a backup becomes AVAILABLE together with its pieces or not at all.
    pub fn complete_backup(
        &self,
        b: &BackupRecord,
        pieces: &[PieceRecord],
        corrupt: &[CorruptBlock],
    ) -> Result<(), CatalogError> {
        let ctx = format!("completing backup {}", b.id);
        let tx = self.write_tx(&ctx)?;
        let n = write_backup(self, &tx, UPDATE_BACKUP, b, &ctx)?;
        if n == 0 {
            return Err(CatalogError::BackupNotFound { id: b.id.clone() });
        }
        insert_pieces_on(self, &tx, b, pieces, corrupt, &ctx)?;
        tx.commit().map_err(self.sql(ctx))?;
        Ok(())
    }

    /// The pieces of a backup, by set then piece number.
    pub fn pieces(&self, backup_id: &str) -> Result<Vec<PieceRecord>, CatalogError> {
        let ctx = format!("reading the pieces of backup {backup_id}");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT backup_id, set_no, piece_no, channel, path, size, crc32c, file_count,
                     raw_bytes
                 FROM piece WHERE backup_id = ?1 ORDER BY set_no, piece_no",
            )
            .map_err(self.sql(ctx.as_str()))?;
        let rows = stmt
            .query_map([backup_id], |r| {
                Ok(PieceRecord {
                    backup_id: r.get(0)?,
                    set_no: r.get(1)?,
                    piece_no: r.get(2)?,
                    channel: r.get(3)?,
                    path: r.get(4)?,
                    size: r.get(5)?,
                    crc32c: r.get(6)?,
                    file_count: r.get(7)?,
                    raw_bytes: r.get(8)?,
                })
            })
            .map_err(self.sql(ctx.as_str()))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }

    /// The corrupt blocks a backup found, by file and block.
    pub fn corrupt_blocks(&self, backup_id: &str) -> Result<Vec<CorruptBlock>, CatalogError> {
        let ctx = format!("reading the corrupt blocks of backup {backup_id}");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT backup_id, path, block, kind, relation, detail
                 FROM corrupt_block WHERE backup_id = ?1 ORDER BY path, block, id",
            )
            .map_err(self.sql(ctx.as_str()))?;
        let rows = stmt
            .query_map([backup_id], |r| {
                Ok(CorruptBlock {
                    backup_id: r.get(0)?,
                    path: r.get(1)?,
                    block: r.get(2)?,
                    kind: r.get(3)?,
                    relation: r.get(4)?,
                    detail: r.get(5)?,
                })
            })
            .map_err(self.sql(ctx.as_str()))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }
}

/// Inserts a backup row on `conn` (a transaction of the caller's).
pub(crate) fn insert_backup_on(
    cat: &Catalog,
    conn: &Connection,
    b: &BackupRecord,
    ctx: &str,
) -> Result<(), CatalogError> {
    write_backup(cat, conn, INSERT_BACKUP, b, ctx)?;
    Ok(())
}

/// Inserts the pieces and corrupt blocks of backup `b` on `conn` (a transaction of the
/// caller's).
pub(crate) fn insert_pieces_on(
    cat: &Catalog,
    tx: &Connection,
    b: &BackupRecord,
    pieces: &[PieceRecord],
    corrupt: &[CorruptBlock],
    ctx: &str,
) -> Result<(), CatalogError> {
    {
        let mut ins = tx
            .prepare_cached(
                "INSERT INTO piece (backup_id, set_no, piece_no, channel, path, size, crc32c,
                         file_count, raw_bytes)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .map_err(cat.sql(ctx))?;
        for p in pieces {
            let size = to_i64("piece size", p.size)?;
            let raw = to_i64("piece raw size", p.raw_bytes)?;
            ins.execute((
                &p.backup_id,
                p.set_no,
                p.piece_no,
                p.channel,
                &p.path,
                size,
                p.crc32c,
                p.file_count,
                raw,
            ))
            .map_err(cat.sql(format!("recording piece {} of backup {}", p.path, b.id)))?;
        }
        let mut ins = tx
            .prepare_cached(
                "INSERT INTO corrupt_block (backup_id, path, block, kind, relation, detail)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(cat.sql(ctx))?;
        for c in corrupt {
            ins.execute((
                &c.backup_id,
                &c.path,
                c.block,
                &c.kind,
                &c.relation,
                &c.detail,
            ))
            .map_err(cat.sql(format!(
                "recording corrupt block {} of {} in backup {}",
                c.block, c.path, b.id
            )))?;
        }
    }
    Ok(())
}
