//! BACKUP CURRENT CONTROLFILE and RESTORE CONTROLFILE FROM: the catalog (RMAN's recovery
//! catalog and control file in one) copied consistently, with the cluster's pg_control, into
//! one self-describing piece that can live anywhere (a FORMAT directory, a share, a tape's
//! export) and brings the catalog back without the repository's help.

use std::path::{Path, PathBuf};

use recman_catalog::Repository;
use recman_format::{Compression, PieceHeader, SetFile};

use crate::error::EngineError;
use crate::piece_format::{PieceFormat, PieceVars};
use crate::pipeline::{OutputShape, SetWriter};
use crate::util::now_micros;

/// The name of the catalog copy inside a control file piece.
pub const CATALOG_ENTRY: &str = "catalog.db";
/// pg_control inside a control file piece.
pub const PG_CONTROL_ENTRY: &str = "global/pg_control";
const CHUNK: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct ControlfileReport {
    /// Where the piece is: its file for a FORMAT directory, else its repository object.
    pub piece: String,
    pub bytes: u64,
    pub with_pg_control: bool,
}

/// Writes the catalog of `repo` (and `pgdata`'s pg_control when given) as one piece: in the
/// FORMAT directory when given, else under `controlfile/` in the repository.
pub fn backup_controlfile(
    repo: &Repository,
    db_name: &str,
    system_identifier: u64,
    pgdata: Option<&Path>,
    format: Option<&PieceFormat>,
) -> Result<ControlfileReport, EngineError> {
    let started = now_micros();
    let id = format!("controlfile-{started}");
    let tmp = tempdir_near(repo)?;
    let copy = tmp.join(CATALOG_ENTRY);
    repo.catalog().snapshot_into(&copy)?;
    let catalog = std::fs::read(&copy).map_err(|e| io_err("read the catalog copy", &copy, e))?;
    let _ = std::fs::remove_dir_all(&tmp);
    let pg_control = match pgdata {
        Some(d) => {
            let p = d.join(PG_CONTROL_ENTRY);
            Some(std::fs::read(&p).map_err(|e| io_err("read", &p, e))?)
        }
        None => None,
    };
    let mut files = vec![SetFile {
        index: 0,
        path: CATALOG_ENTRY.into(),
    }];
    if pg_control.is_some() {
        files.push(SetFile {
            index: 1,
            path: PG_CONTROL_ENTRY.into(),
        });
    }
    let header = PieceHeader {
        backup_id: id.clone(),
        db_name: db_name.to_string(),
        system_identifier,
        set_no: 1,
        piece_no: 1,
        compression: Compression::None,
        created_unix: started / 1_000_000,
        mac: None,
        files,
    };
    let (media, name, shown) = match format {
        Some(f) => {
            std::fs::create_dir_all(&f.dir)
                .map_err(|e| io_err("create FORMAT directory", &f.dir, e))?;
            let name = f.expand(&PieceVars {
                backup_id: &id,
                db_name,
                system_identifier,
                set_no: 1,
                piece_no: 1,
                created_unix: started / 1_000_000,
            })?;
            let shown = f.dir.join(&name).display().to_string();
            (crate::devices::media_for(repo, &f.device())?, name, shown)
        }
        None => {
            let name = format!("controlfile/ctl_{}.rbf", started / 1_000_000);
            let shown = format!("{} in repository {}", name, repo.location());
            (std::sync::Arc::clone(repo.media()), name, shown)
        }
    };
    let mut w = SetWriter::create(
        media.as_ref(),
        repo.location(),
        &name,
        &header,
        OutputShape::default(),
    )?;
    w.whole_file(0, &catalog, CHUNK)?;
    if let Some(c) = &pg_control {
        w.whole_file(1, c, CHUNK)?;
    }
    let piece = w.finish()?;
    Ok(ControlfileReport {
        piece: shown,
        bytes: piece.size,
        with_pg_control: pg_control.is_some(),
    })
}

/// Puts the catalog held by control file piece `from` (a file) into the repository at
/// `root`. A catalog already there is kept beside it as `catalog.db.replaced-<seconds>`
/// (with its -wal and -shm files), never deleted. Returns where the old one went.
pub fn restore_controlfile(from: &Path, root: &Path) -> Result<Option<PathBuf>, EngineError> {
    let (Some(dir), Some(file)) = (from.parent(), from.file_name().and_then(|f| f.to_str())) else {
        return Err(crate::refusal::Backups::ControlfileNamesNoFile {
            from: from.display().to_string(),
        }
        .into());
    };
    if !root.join(recman_catalog::repo::MARKER_FILE).exists() {
        return Err(crate::refusal::Backups::NotRepository {
            root: root.display().to_string(),
        }
        .into());
    }
    let media = crate::devices::open_spec(&dir.display().to_string())?;
    let reader = media.open(file)?;
    let (data, _) = crate::archive::read_file_from_piece(reader, CATALOG_ENTRY)
        .map_err(|why| {
            EngineError::from(crate::refusal::Backups::NotControlfilePiece {
                from: from.display().to_string(),
                why: why.to_string(),
            })
        })?
        .ok_or_else(|| {
            EngineError::from(crate::refusal::Backups::PieceHoldsNoCatalog {
                from: from.display().to_string(),
            })
        })?;
    let target = root.join(recman_catalog::repo::CATALOG_FILE);
    let tmp = root.join(format!("{}.restoring", recman_catalog::repo::CATALOG_FILE));
    crate::util::write_private(&tmp, &data)
        .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
        .map_err(|e| io_err("write", &tmp, e))?;
    let mut aside = None;
    if target.exists() {
        let stamp = now_micros() / 1_000_000;
        for suffix in ["", "-wal", "-shm"] {
            let old = root.join(format!("{}{suffix}", recman_catalog::repo::CATALOG_FILE));
            if old.exists() {
                let to = root.join(format!(
                    "{}.replaced-{stamp}{suffix}",
                    recman_catalog::repo::CATALOG_FILE
                ));
                std::fs::rename(&old, &to).map_err(|e| io_err("move aside", &old, e))?;
                if suffix.is_empty() {
                    aside = Some(to);
                }
            }
        }
    }
    std::fs::rename(&tmp, &target).map_err(|e| io_err("rename", &tmp, e))?;
    if let Ok(d) = std::fs::File::open(root) {
        let _ = d.sync_all();
    }
    Ok(aside)
}

fn tempdir_near(repo: &Repository) -> Result<PathBuf, EngineError> {
    let base = if repo.is_remote() {
        std::env::temp_dir()
    } else {
        repo.root().to_path_buf()
    };
    let d = base.join(format!(
        ".controlfile-{}-{}",
        std::process::id(),
        now_micros()
    ));
    std::fs::create_dir_all(&d).map_err(|e| io_err("create", &d, e))?;
    Ok(d)
}

fn io_err(action: &str, path: &Path, e: std::io::Error) -> EngineError {
    EngineError::Invalid(format!(
        "cannot {action} {}: {e}; hint: check the path and its permissions",
        path.display()
    ))
}
