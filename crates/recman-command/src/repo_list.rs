//! The repository list's reads and copies (docs/repositories.md): which backups a repository
//! holds, a backup copied from one repository of the list to another, and what `report
//! repositories` shows of each. The list itself, its order and its fallback are the front
//! end's; it opens each repository through [`crate::open`].

use recman_catalog::{BackupStatus, CatalogError, Repository};
use recman_engine::EngineError;

/// The ids of database `db_id`'s AVAILABLE backups in `repo`.
pub fn available_backups(repo: &Repository, db_id: i64) -> Result<Vec<String>, CatalogError> {
    Ok(repo
        .catalog()
        .backups(db_id)?
        .into_iter()
        .filter(|b| b.status == BackupStatus::Available)
        .map(|b| b.id)
        .collect())
}

/// Copies backup `id` of database `db` from `from` to `to`; the bytes copied.
pub fn copy_backup(
    from: &Repository,
    to: &Repository,
    db: &str,
    id: &str,
) -> Result<u64, EngineError> {
    recman_engine::copy_backup_between(from, to, db, id)
}

/// One database of a repository, as `report repositories` shows it.
pub struct Newest {
    pub database: String,
    /// The newest archived WAL file's name.
    pub wal: Option<String>,
    /// The newest backup's id.
    pub backup: Option<String>,
}

/// Each database of `repo` with its newest archived WAL file and backup.
pub fn newest(repo: &Repository) -> Result<Vec<Newest>, CatalogError> {
    let cat = repo.catalog();
    let mut out = Vec::new();
    for db in cat.databases()? {
        let wal = cat.wal_list(db.id)?.into_iter().map(|w| w.name).max();
        let backup = cat.backups(db.id)?.into_iter().map(|b| b.id).max();
        out.push(Newest {
            database: db.name,
            wal,
            backup,
        });
    }
    Ok(out)
}
