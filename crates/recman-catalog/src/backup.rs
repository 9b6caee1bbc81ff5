//! Backups, their pieces and the corrupt blocks they found.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::records::{BackupRecord, BackupStatus, CorruptBlock, PieceRecord};
use crate::value::{DbRow, Value, to_i64, vals};

const BACKUP_COLS: &str = "id, db_id, tag, backup_type, status, start_lsn, stop_lsn, timeline, \
    start_wal, stop_wal, start_time, stop_time, stop_next_xid, db_bytes, written_bytes, \
    file_count, channels, compression, filesperset, maxopenfiles, pid, host, error";

/// Parameters ?1..?23 are the columns of [`BACKUP_COLS`] in order (see [`backup_params`]).
const INSERT_BACKUP: &str = "INSERT INTO backup (id, db_id, tag, backup_type, status, start_lsn, \
    stop_lsn, timeline, start_wal, stop_wal, start_time, stop_time, stop_next_xid, db_bytes, \
    written_bytes, file_count, channels, compression, filesperset, maxopenfiles, pid, host, error)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
    ?19, ?20, ?21, ?22, ?23)";

pub(crate) const UPDATE_BACKUP: &str = "UPDATE backup SET db_id = ?2, tag = ?3, \
    backup_type = ?4, status = ?5, start_lsn = ?6, stop_lsn = ?7, timeline = ?8, \
    start_wal = ?9, stop_wal = ?10, start_time = ?11, stop_time = ?12, stop_next_xid = ?13, \
    db_bytes = ?14, written_bytes = ?15, file_count = ?16, channels = ?17, compression = ?18, \
    filesperset = ?19, maxopenfiles = ?20, pid = ?21, host = ?22, error = ?23 WHERE id = ?1";

fn backup_params(b: &BackupRecord) -> Result<Vec<Value>, CatalogError> {
    let opt = |what, v: Option<u64>| v.map(|v| to_i64(what, v)).transpose();
    Ok(vals![
        &b.id,
        b.db_id,
        normalize_tag(&b.tag),
        &b.backup_type,
        b.status.as_str(),
        to_i64("start lsn", b.start_lsn)?,
        opt("stop lsn", b.stop_lsn)?,
        b.timeline,
        &b.start_wal,
        &b.stop_wal,
        b.start_time,
        b.stop_time,
        opt("next xid", b.stop_next_xid)?,
        to_i64("database size", b.db_bytes)?,
        to_i64("written size", b.written_bytes)?,
        to_i64("file count", b.file_count)?,
        b.channels,
        &b.compression,
        b.filesperset,
        b.maxopenfiles,
        b.pid,
        &b.host,
        &b.error,
    ]
    .to_vec())
}

/// Runs INSERT_BACKUP or UPDATE_BACKUP for `b` (inside the caller's transaction, if any);
/// returns the number of rows changed.
pub(crate) fn write_backup(
    cat: &Catalog,
    sql: &str,
    b: &BackupRecord,
    context: &str,
) -> Result<usize, CatalogError> {
    cat.exec(context, sql, &backup_params(b)?)
}

/// Tags are case-insensitive, as in RMAN; storing them uppercase makes lookups exact.
fn normalize_tag(tag: &str) -> String {
    tag.to_uppercase()
}

fn backup_row(r: &DbRow<'_>) -> Result<BackupRecord, CatalogError> {
    let mut b = BackupRecord {
        id: r.get_text(0)?,
        db_id: r.get_i64(1)?,
        tag: r.get_text(2)?,
        backup_type: r.get_text(3)?,
        status: r.get_parsed(4)?,
        start_lsn: r.get_u64(5)?,
        stop_lsn: r.get_opt_u64(6)?,
        timeline: r.get_u32(7)?,
        start_wal: r.get_text(8)?,
        stop_wal: r.get_opt_text(9)?,
        start_time: r.get_i64(10)?,
        stop_time: r.get_opt_i64(11)?,
        stop_next_xid: r.get_opt_u64(12)?,
        db_bytes: r.get_u64(13)?,
        written_bytes: r.get_u64(14)?,
        file_count: r.get_u64(15)?,
        channels: r.get_u32(16)?,
        compression: r.get_text(17)?,
        filesperset: r.get_u32(18)?,
        maxopenfiles: r.get_u32(19)?,
        pid: r.get_u32(20)?,
        host: r.get_text(21)?,
        error: r.get_opt_text(22)?,
    };
    settle_interrupted(&mut b);
    Ok(b)
}

/// A RUNNING backup whose process on this host is gone (SIGKILL, a crash) reads as FAILED for
/// every reader — list, validate, report, delete — so they all agree; the row itself is
/// rewritten by the next backup under the repository lock, which also removes its pieces.
pub fn settle_interrupted(b: &mut BackupRecord) {
    if b.status != BackupStatus::Running {
        return;
    }
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    if b.host == here && !std::path::Path::new(&format!("/proc/{}", b.pid)).exists() {
        b.status = BackupStatus::Failed;
        b.error = Some(format!(
            "interrupted: process {} ended before the backup completed",
            b.pid
        ));
    }
}

pub(crate) fn piece_row(r: &DbRow<'_>) -> Result<PieceRecord, CatalogError> {
    Ok(PieceRecord {
        backup_id: r.get_text(0)?,
        set_no: r.get_u32(1)?,
        piece_no: r.get_u32(2)?,
        channel: r.get_u32(3)?,
        path: r.get_text(4)?,
        size: r.get_u64(5)?,
        crc32c: r.get_u32(6)?,
        file_count: r.get_u32(7)?,
        raw_bytes: r.get_u64(8)?,
    })
}

impl Catalog {
    /// Records a new backup, normally RUNNING, before any piece is written: a crash then
    /// leaves a RUNNING row that [`Catalog::fail_running_backups`] later marks FAILED.
    pub fn insert_backup(&self, b: &BackupRecord) -> Result<(), CatalogError> {
        let ctx = format!("recording backup {}", b.id);
        write_backup(self, INSERT_BACKUP, b, &ctx)?;
        Ok(())
    }

    /// Replaces the whole row of backup `b.id`.
    pub fn update_backup(&self, b: &BackupRecord) -> Result<(), CatalogError> {
        let ctx = format!("updating backup {}", b.id);
        let n = write_backup(self, UPDATE_BACKUP, b, &ctx)?;
        if n == 0 {
            return Err(CatalogError::BackupNotFound { id: b.id.clone() });
        }
        Ok(())
    }

    pub fn backup(&self, id: &str) -> Result<Option<BackupRecord>, CatalogError> {
        let sql = format!("SELECT {BACKUP_COLS} FROM backup WHERE id = ?1");
        self.query_opt(&format!("reading backup {id}"), &sql, vals![id], backup_row)
    }

    /// The backups of one database, oldest first: ordered by start time, then id (ids carry
    /// their creation time, so of two backups of the same start the later-made comes last).
    pub fn backups(&self, db_id: i64) -> Result<Vec<BackupRecord>, CatalogError> {
        self.query_backups("WHERE db_id = ?1", vals![db_id], "reading backups")
    }

    /// The backups of one database carrying `tag` (any case), oldest first.
    pub fn backup_by_tag(&self, db_id: i64, tag: &str) -> Result<Vec<BackupRecord>, CatalogError> {
        let tag = normalize_tag(tag);
        let ctx = format!("reading backups tagged {tag}");
        self.query_backups("WHERE db_id = ?1 AND tag = ?2", vals![db_id, &tag], &ctx)
    }

    fn query_backups(
        &self,
        filter: &str,
        params: &[Value],
        context: &str,
    ) -> Result<Vec<BackupRecord>, CatalogError> {
        let sql = format!("SELECT {BACKUP_COLS} FROM backup {filter} ORDER BY start_time, id");
        self.query(context, &sql, params, backup_row)
    }

    /// Marks every RUNNING backup of this database FAILED with `reason`. Called under the
    /// repository lock, so none of them can still be running. Returns their ids.
    pub fn fail_running_backups(
        &self,
        db_id: i64,
        reason: &str,
    ) -> Result<Vec<String>, CatalogError> {
        let ctx = "marking interrupted backups failed";
        let mut ids = self.write_tx(ctx, || {
            self.query(
                ctx,
                "UPDATE backup SET status = 'FAILED', error = ?2
                 WHERE db_id = ?1 AND status = 'RUNNING' RETURNING id",
                vals![db_id, reason],
                |r| r.get_text(0),
            )
        })?;
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
        self.write_tx(&ctx, || {
            let n = write_backup(self, UPDATE_BACKUP, b, &ctx)?;
            if n == 0 {
                return Err(CatalogError::BackupNotFound { id: b.id.clone() });
            }
            insert_pieces(self, b, pieces, corrupt)
        })
    }

    /// The pieces of a backup, by set then piece number.
    pub fn pieces(&self, backup_id: &str) -> Result<Vec<PieceRecord>, CatalogError> {
        self.query(
            &format!("reading the pieces of backup {backup_id}"),
            "SELECT backup_id, set_no, piece_no, channel, path, size, crc32c, file_count,
                 raw_bytes
             FROM piece WHERE backup_id = ?1 ORDER BY set_no, piece_no",
            vals![backup_id],
            piece_row,
        )
    }

    /// The corrupt blocks a backup found, by file and block.
    pub fn corrupt_blocks(&self, backup_id: &str) -> Result<Vec<CorruptBlock>, CatalogError> {
        self.query(
            &format!("reading the corrupt blocks of backup {backup_id}"),
            "SELECT backup_id, path, block, kind, relation, detail
             FROM corrupt_block WHERE backup_id = ?1 ORDER BY path, block, id",
            vals![backup_id],
            |r| {
                Ok(CorruptBlock {
                    backup_id: r.get_text(0)?,
                    path: r.get_text(1)?,
                    block: r.get_u32(2)?,
                    kind: r.get_text(3)?,
                    relation: r.get_opt_text(4)?,
                    detail: r.get_text(5)?,
                })
            },
        )
    }
}

/// Inserts a backup row (inside the caller's transaction).
pub(crate) fn insert_backup_row(
    cat: &Catalog,
    b: &BackupRecord,
    ctx: &str,
) -> Result<(), CatalogError> {
    write_backup(cat, INSERT_BACKUP, b, ctx)?;
    Ok(())
}

/// Inserts the pieces and corrupt blocks of backup `b` (inside the caller's transaction).
pub(crate) fn insert_pieces(
    cat: &Catalog,
    b: &BackupRecord,
    pieces: &[PieceRecord],
    corrupt: &[CorruptBlock],
) -> Result<(), CatalogError> {
    for p in pieces {
        cat.exec(
            &format!("recording piece {} of backup {}", p.path, b.id),
            "INSERT INTO piece (backup_id, set_no, piece_no, channel, path, size, crc32c,
                 file_count, raw_bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            vals![
                &p.backup_id,
                p.set_no,
                p.piece_no,
                p.channel,
                &p.path,
                to_i64("piece size", p.size)?,
                p.crc32c,
                p.file_count,
                to_i64("piece raw size", p.raw_bytes)?,
            ],
        )?;
    }
    for c in corrupt {
        cat.exec(
            &format!(
                "recording corrupt block {} of {} in backup {}",
                c.block, c.path, b.id
            ),
            "INSERT INTO corrupt_block (backup_id, path, block, kind, relation, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            vals![
                &c.backup_id,
                &c.path,
                c.block,
                &c.kind,
                &c.relation,
                &c.detail
            ],
        )?;
    }
    Ok(())
}
