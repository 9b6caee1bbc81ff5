//! Backups other tools wrote, imported to be read in place (`catalog import`), and the WAL
//! archives they came with. A foreign backup is a backup row like any other (restore chooses
//! it the same way) plus where it lies; its WAL is listed per archive so that archive-get and
//! the restore plan find each segment there. Nothing here ever names a file for deletion:
//! recman did not write them.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::records::BackupRecord;
use crate::value::{DbRow, to_i64, vals};

/// Where a foreign backup lies.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ForeignBackupRecord {
    pub backup_id: String,
    /// "pgbackrest" or "pg_basebackup".
    pub tool: String,
    /// The repository (pgBackRest) or the backup's directory (pg_basebackup).
    pub location: String,
    /// pgBackRest's stanza; empty for pg_basebackup.
    pub stanza: String,
    /// The origin's own name of the backup.
    pub label: String,
    /// The origin's own type: full, diff, incr.
    pub origin_type: String,
}

/// A WAL archive of another tool.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ForeignArchive {
    pub id: i64,
    pub db_id: i64,
    pub tool: String,
    pub location: String,
    /// pgBackRest's configuration file the passphrase is read from ("" when none): the file's
    /// name only, never the secret.
    pub config: String,
    pub stanza: String,
    /// pgBackRest's archive id (`15-1`).
    pub archive_id: String,
}

/// One file of a foreign WAL archive.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ForeignWalRecord {
    pub archive: i64,
    pub db_id: i64,
    pub name: String,
    /// Relative to the archive's location.
    pub path: String,
    pub stored_size: u64,
    /// Unix microseconds (the file's modification time).
    pub archived_at: i64,
    /// The content's checksum as the origin recorded it (hex), if it did.
    pub checksum: Option<String>,
}

const FB_COLS: &str = "backup_id, tool, location, stanza, label, origin_type";
const FA_COLS: &str = "id, db_id, tool, location, config, stanza, archive_id";
const FW_COLS: &str = "archive, db_id, name, path, stored_size, archived_at, checksum";

fn fb_row(r: &DbRow<'_>) -> Result<ForeignBackupRecord, CatalogError> {
    Ok(ForeignBackupRecord {
        backup_id: r.get_text(0)?,
        tool: r.get_text(1)?,
        location: r.get_text(2)?,
        stanza: r.get_text(3)?,
        label: r.get_text(4)?,
        origin_type: r.get_text(5)?,
    })
}

fn fa_row(r: &DbRow<'_>) -> Result<ForeignArchive, CatalogError> {
    Ok(ForeignArchive {
        id: r.get_i64(0)?,
        db_id: r.get_i64(1)?,
        tool: r.get_text(2)?,
        location: r.get_text(3)?,
        config: r.get_text(4)?,
        stanza: r.get_text(5)?,
        archive_id: r.get_text(6)?,
    })
}

fn fw_row(r: &DbRow<'_>) -> Result<ForeignWalRecord, CatalogError> {
    Ok(ForeignWalRecord {
        archive: r.get_i64(0)?,
        db_id: r.get_i64(1)?,
        name: r.get_text(2)?,
        path: r.get_text(3)?,
        stored_size: r.get_u64(4)?,
        archived_at: r.get_i64(5)?,
        checksum: r.get_opt_text(6)?,
    })
}

impl Catalog {
    /// Records an imported backup (AVAILABLE, no pieces) and where it lies, in one
    /// transaction.
    pub fn record_foreign_backup(
        &self,
        b: &BackupRecord,
        f: &ForeignBackupRecord,
    ) -> Result<(), CatalogError> {
        let ctx = format!("recording imported backup {}", b.id);
        self.write_tx(&ctx, || {
            crate::backup::insert_backup_row(self, b, &ctx)?;
            self.exec(
                &ctx,
                &format!("INSERT INTO foreign_backup ({FB_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
                vals![
                    &f.backup_id,
                    &f.tool,
                    &f.location,
                    &f.stanza,
                    &f.label,
                    &f.origin_type
                ],
            )?;
            Ok(())
        })
    }

    /// The imported backup with this origin, if it was imported before.
    pub fn foreign_backup_by_origin(
        &self,
        tool: &str,
        location: &str,
        stanza: &str,
        label: &str,
    ) -> Result<Option<ForeignBackupRecord>, CatalogError> {
        self.query_opt(
            &format!("looking up imported backup {label}"),
            &format!(
                "SELECT {FB_COLS} FROM foreign_backup
                 WHERE tool = ?1 AND location = ?2 AND stanza = ?3 AND label = ?4"
            ),
            vals![tool, location, stanza, label],
            fb_row,
        )
    }

    /// Where backup `backup_id` lies, when it is an imported one.
    pub fn foreign_backup(
        &self,
        backup_id: &str,
    ) -> Result<Option<ForeignBackupRecord>, CatalogError> {
        self.query_opt(
            &format!("reading the origin of backup {backup_id}"),
            &format!("SELECT {FB_COLS} FROM foreign_backup WHERE backup_id = ?1"),
            vals![backup_id],
            fb_row,
        )
    }

    /// Every imported backup of the repository.
    pub fn foreign_backups(&self) -> Result<Vec<ForeignBackupRecord>, CatalogError> {
        self.query(
            "reading imported backups",
            &format!("SELECT {FB_COLS} FROM foreign_backup ORDER BY backup_id"),
            vals![],
            fb_row,
        )
    }

    /// The archive `a` names (its id ignored), recorded when new; returns it with its id.
    pub fn foreign_archive(&self, a: &ForeignArchive) -> Result<ForeignArchive, CatalogError> {
        let ctx = format!("recording the wal archive at {}", a.location);
        self.write_tx(&ctx, || {
            self.exec(
                &ctx,
                "INSERT INTO foreign_archive (db_id, tool, location, config, stanza, archive_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (db_id, tool, location, stanza, archive_id)
                 DO UPDATE SET config = excluded.config",
                vals![
                    a.db_id,
                    &a.tool,
                    &a.location,
                    &a.config,
                    &a.stanza,
                    &a.archive_id
                ],
            )?;
            self.query_opt(
                &ctx,
                &format!(
                    "SELECT {FA_COLS} FROM foreign_archive WHERE db_id = ?1 AND tool = ?2
                     AND location = ?3 AND stanza = ?4 AND archive_id = ?5"
                ),
                vals![a.db_id, &a.tool, &a.location, &a.stanza, &a.archive_id],
                fa_row,
            )?
            .ok_or_else(|| CatalogError::Corrupt {
                path: self.path().to_path_buf(),
                detail: format!("{ctx}: the row just written is not there"),
            })
        })
    }

    /// The foreign WAL archives of a database.
    pub fn foreign_archives(&self, db_id: i64) -> Result<Vec<ForeignArchive>, CatalogError> {
        self.query(
            "reading imported wal archives",
            &format!("SELECT {FA_COLS} FROM foreign_archive WHERE db_id = ?1 ORDER BY id"),
            vals![db_id],
            fa_row,
        )
    }

    /// Records files of a foreign archive (those known already are left as they are);
    /// returns how many were new.
    pub fn add_foreign_wal(&self, files: &[ForeignWalRecord]) -> Result<usize, CatalogError> {
        let ctx = "recording imported wal";
        self.write_tx(ctx, || {
            let mut added = 0;
            for w in files {
                added += self.exec(
                    ctx,
                    &format!(
                        "INSERT INTO foreign_wal ({FW_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                         ON CONFLICT (archive, name) DO NOTHING"
                    ),
                    vals![
                        w.archive,
                        w.db_id,
                        &w.name,
                        &w.path,
                        to_i64("stored wal size", w.stored_size)?,
                        w.archived_at,
                        &w.checksum
                    ],
                )?;
            }
            Ok(added)
        })
    }

    /// Every copy of foreign WAL file `name` of a database, oldest archive first.
    pub fn foreign_wal(
        &self,
        db_id: i64,
        name: &str,
    ) -> Result<Vec<ForeignWalRecord>, CatalogError> {
        self.query(
            &format!("looking up imported wal {name}"),
            &format!(
                "SELECT {FW_COLS} FROM foreign_wal WHERE db_id = ?1 AND name = ?2 ORDER BY archive"
            ),
            vals![db_id, name],
            fw_row,
        )
    }

    /// Every foreign WAL file of a database, by name.
    pub fn foreign_wal_list(&self, db_id: i64) -> Result<Vec<ForeignWalRecord>, CatalogError> {
        self.query(
            "listing imported wal",
            &format!("SELECT {FW_COLS} FROM foreign_wal WHERE db_id = ?1 ORDER BY name, archive"),
            vals![db_id],
            fw_row,
        )
    }
}
