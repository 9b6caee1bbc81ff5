//! LIST BACKUP / ARCHIVELOG / INCARNATION / COPY: the catalog's and the repository's facts
//! each listing shows, gathered here; the front end lays them out (RMAN's tables, or the JSON
//! documented in docs/commands.md).

use crate::env::Env;
use crate::error::{ExecError, env};
use crate::say::Say;
use recman_catalog::{
    BackupRead, BackupRecord, BackupStatus, CopyRecord, DbRecord, MediaStatus, PieceRecord,
    WalRecord,
};
use recman_engine::{Context, EngineError, Incarnation};
use recman_format::manifest::{BackupManifest, EntryKind};

/// How LIST BACKUP is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BackupForm {
    Detailed,
    Summary,
    ByFile,
    Json,
}

/// One piece of a listed backup, with its status and every copy of it.
#[derive(Debug)]
pub struct ListedPiece {
    pub piece: PieceRecord,
    pub status: MediaStatus,
    pub copies: Vec<CopyRecord>,
}

/// One backup as LIST shows it.
#[derive(Debug)]
pub struct ListedBackup {
    pub record: BackupRecord,
    pub pieces: Vec<ListedPiece>,
    /// The device type its pieces were written to (RMAN's Device Type column).
    pub device: String,
    /// How many copies of its pieces exist: the first one plus second-tier copies.
    pub copies: usize,
    /// The backup a level 1 builds on, from its manifest (JSON only).
    pub parent: Option<String>,
    /// What it read (JSON only).
    pub read: Option<BackupRead>,
    /// For a backup imported from another tool (catalog import): where it lies.
    pub origin: Option<String>,
    /// In an immutable repository: the Object Lock on its objects.
    pub lock: Option<recman_catalog::Retention>,
}

/// A file of a backup (LIST BACKUP BY FILE).
#[derive(Debug)]
pub struct FileRow {
    pub path: String,
    pub backup: usize,
}

/// An image copy (LIST COPY).
#[derive(Debug)]
pub struct ListedCopy {
    pub tag: String,
    pub backup_id: String,
    pub stop_lsn: String,
    pub stop_time: String,
    pub path: String,
}

#[derive(Debug)]
pub enum ListOutcome {
    Backups {
        db: DbRecord,
        backups: Vec<ListedBackup>,
        form: BackupForm,
    },
    /// BY FILE: `files` index `backups`, sorted by path then backup; `unreadable` names the
    /// manifests that could not be read, with why.
    BackupFiles {
        backups: Vec<BackupRecord>,
        files: Vec<FileRow>,
        unreadable: Vec<(String, String)>,
    },
    /// Each archived file with its status and how many backups hold it.
    Archivelogs {
        db: DbRecord,
        wal: Vec<(WalRecord, MediaStatus, u32)>,
        json: bool,
    },
    Incarnations {
        db: DbRecord,
        incarnations: Vec<Incarnation>,
        json: bool,
    },
    Copies {
        db: DbRecord,
        copies: Vec<ListedCopy>,
        json: bool,
    },
}

fn cat_err(e: recman_catalog::CatalogError) -> ExecError {
    EngineError::from(e).into()
}

pub fn list_backup(
    form: BackupForm,
    e: &dyn Env,
    p: &mut (impl Say<ListOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let cat = ctx.repo.catalog();
    // A backup whose process was killed reads as FAILED here as everywhere (the catalog's
    // reads settle it).
    let records = cat.backups(ctx.db.id).map_err(cat_err)?;
    if form == BackupForm::ByFile && !records.is_empty() {
        return by_file(&ctx, records, p);
    }
    let mut backups = Vec::new();
    for b in records {
        let mut pieces = Vec::new();
        let mut device = recman_engine::devices::repository_device(&ctx.repo).to_string();
        let mut others = std::collections::BTreeSet::new();
        for (piece, status) in cat.piece_states(&b.id).map_err(cat_err)? {
            // The JSON listing shows a piece whose copies cannot be read with none.
            let copies = match form {
                BackupForm::Json => cat.copies_of(&piece.path).unwrap_or_default(),
                _ => cat.copies_of(&piece.path).map_err(cat_err)?,
            };
            for c in &copies {
                if c.primary {
                    device = c.device.clone();
                } else {
                    others.insert(c.device.clone());
                }
            }
            pieces.push(ListedPiece {
                piece,
                status,
                copies,
            });
        }
        let (parent, read) = if form == BackupForm::Json {
            (
                recman_engine::retention::parent_of(&ctx.repo, &ctx.db.name, &b),
                cat.backup_read(&b.id).map_err(cat_err)?,
            )
        } else {
            (None, None)
        };
        let origin = cat.foreign_backup(&b.id).map_err(cat_err)?.map(|f| {
            let stanza = if f.stanza.is_empty() {
                String::new()
            } else {
                format!(" stanza {}", f.stanza)
            };
            format!(
                "{} {}{stanza}, {} backup {}",
                f.tool, f.location, f.origin_type, f.label
            )
        });
        let lock = if b.status == BackupStatus::Failed {
            None
        } else {
            recman_engine::immutable::backup_lock(&ctx.repo, &ctx.db.name, &b.id)?
        };
        backups.push(ListedBackup {
            lock,
            record: b,
            pieces,
            device,
            copies: 1 + others.len(),
            parent,
            read,
            origin,
        });
    }
    p.say(ListOutcome::Backups {
        db: ctx.db,
        backups,
        form,
    });
    Ok(())
}

/// One line per file and backup, from each backup's manifest (the catalog keeps no per-file
/// rows); a backup whose manifest is unreadable is named with the reason.
fn by_file(
    ctx: &Context,
    backups: Vec<BackupRecord>,
    p: &mut (impl Say<ListOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let mut files: Vec<(String, String, usize)> = Vec::new();
    let mut unreadable = Vec::new();
    for (i, b) in backups.iter().enumerate() {
        if b.status == BackupStatus::Failed {
            continue;
        }
        let rel = recman_catalog::layout::manifest(&ctx.db.name, &b.id);
        let m: BackupManifest = match ctx
            .repo
            .media()
            .get(&rel)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_slice(&t).map_err(|e| e.to_string()))
        {
            Ok(m) => m,
            Err(e) => {
                unreadable.push((rel, e));
                continue;
            }
        };
        for e in m.entries.iter().filter(|e| e.kind == EntryKind::File) {
            files.push((e.path.clone(), b.id.clone(), i));
        }
    }
    files.sort();
    let files = files
        .into_iter()
        .map(|(path, _, backup)| FileRow { path, backup })
        .collect();
    p.say(ListOutcome::BackupFiles {
        backups,
        files,
        unreadable,
    });
    Ok(())
}

pub fn list_archivelog(
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<ListOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let cat = ctx.repo.catalog();
    let wal = cat.wal_states(ctx.db.id).map_err(cat_err)?;
    let counts = cat.wal_backup_counts(ctx.db.id).map_err(cat_err)?;
    let wal = wal
        .into_iter()
        .map(|(w, st)| {
            let n = counts.get(&w.name).copied().unwrap_or(0);
            (w, st, n)
        })
        .collect();
    p.say(ListOutcome::Archivelogs {
        db: ctx.db,
        wal,
        json,
    });
    Ok(())
}

pub fn list_incarnation(
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<ListOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let incarnations = recman_engine::incarnations(&ctx.repo, &ctx.db)?;
    p.say(ListOutcome::Incarnations {
        db: ctx.db,
        incarnations,
        json,
    });
    Ok(())
}

pub fn list_copy(
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<ListOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    // Image copies live in the repository as `<db>/copy/<TAG>/` with their copy.json.
    let mut copies = Vec::new();
    if !ctx.repo.is_remote() {
        let dir = ctx
            .repo
            .disk_path(&format!("{}/copy", ctx.db.name))
            .map_err(cat_err)?;
        let mut tags: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        tags.sort();
        for tag in tags {
            if let Some(m) = recman_engine::copy::load_copy(&ctx, &tag)? {
                let path = ctx
                    .repo
                    .disk_path(&recman_engine::copy::copy_rel(&ctx.db.name, &tag))
                    .map_err(cat_err)?
                    .join("data");
                copies.push(ListedCopy {
                    tag,
                    backup_id: m.backup_id,
                    stop_lsn: m.stop_lsn,
                    stop_time: m.stop_time,
                    path: path.display().to_string(),
                });
            }
        }
    }
    p.say(ListOutcome::Copies {
        db: ctx.db,
        copies,
        json,
    });
    Ok(())
}
