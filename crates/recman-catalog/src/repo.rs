//! The repository: a directory holding the marker, the catalog, the lock and the backups.
//!
//! ```text
//! <root>/recman.repo                          marker (JSON), written last by create
//! <root>/catalog.db                           the catalog (SQLite, WAL mode)
//! <root>/lock                                 flock target, names the current holder
//! <root>/<db_name>/backup/<backup_id>/...     pieces and manifest of one backup
//! <root>/<db_name>/wal/<timeline+log>/...     archived WAL, by the first 16 hex digits
//! ```

use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use crate::atomic::{AtomicFile, create_dir_all_durable};
use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::lock::RepoLock;

pub const MARKER_FILE: &str = "recman.repo";
pub const CATALOG_FILE: &str = "catalog.db";
pub const LOCK_FILE: &str = "lock";
const MARKER_FORMAT: &str = "recman-repository";
/// The repository layout version this build writes and reads.
pub const REPOSITORY_VERSION: u32 = 1;

#[derive(serde::Serialize, serde::Deserialize)]
struct Marker {
    format: String,
    version: u64,
    created: String,
}

/// An open repository with its catalog connection.
#[derive(Debug)]
pub struct Repository {
    root: PathBuf,
    catalog: Catalog,
}

impl Repository {
    /// Creates a repository in `root`, which may be missing (it is created with its parents)
    /// or an empty directory. The marker is written last, so an interrupted create never
    /// leaves something that opens as a repository.
    pub fn create(root: &Path) -> Result<Repository, CatalogError> {
        match fs::metadata(root) {
            Ok(m) if !m.is_dir() => {
                return Err(CatalogError::NotADirectory {
                    path: root.to_path_buf(),
                });
            }
            Ok(_) => {
                if root.join(MARKER_FILE).exists() {
                    return Err(CatalogError::AlreadyExists {
                        path: root.to_path_buf(),
                    });
                }
                let mut entries =
                    fs::read_dir(root).map_err(|e| CatalogError::io("read", root, e))?;
                if entries.next().is_some() {
                    return Err(CatalogError::NotEmpty {
                        path: root.to_path_buf(),
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => create_dir_all_durable(root)?,
            Err(e) => return Err(CatalogError::io("inspect", root, e)),
        }
        let abs = absolute(root)?;
        let catalog = Catalog::create(&abs.join(CATALOG_FILE))?;
        let lock = abs.join(LOCK_FILE);
        fs::File::create(&lock).map_err(|e| CatalogError::io("create", &lock, e))?;
        let marker = Marker {
            format: MARKER_FORMAT.to_string(),
            version: REPOSITORY_VERSION.into(),
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        let mut json = serde_json::to_vec_pretty(&marker).expect("the marker serializes");
        json.push(b'\n');
        let repo = Repository { root: abs, catalog };
        // write_atomic fsyncs the root, which also makes catalog.db and lock durable.
        repo.write_atomic(MARKER_FILE, &json)?;
        Ok(repo)
    }

    /// Opens an existing repository and its catalog, migrating an older catalog schema.
    pub fn open(root: &Path) -> Result<Repository, CatalogError> {
        match fs::metadata(root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(CatalogError::NotADirectory {
                    path: root.to_path_buf(),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(CatalogError::NotFound {
                    path: root.to_path_buf(),
                });
            }
            Err(e) => return Err(CatalogError::io("inspect", root, e)),
        }
        let marker_path = root.join(MARKER_FILE);
        let text = match fs::read(&marker_path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(CatalogError::NotARepository {
                    path: root.to_path_buf(),
                });
            }
            Err(e) => return Err(CatalogError::io("read", &marker_path, e)),
        };
        check_marker(&marker_path, root, &text)?;
        let abs = absolute(root)?;
        let catalog = Catalog::open(&abs.join(CATALOG_FILE))?;
        Ok(Repository { root: abs, catalog })
    }

    /// Opens an existing repository whose catalog may be missing or unreadable, for rebuilding
    /// it from the manifests (`catalog start-with`) and for nothing else: every other command
    /// must refuse a missing catalog rather than see an empty one. A damaged catalog is moved
    /// aside to `catalog.db.damaged-<unix seconds>`, never deleted. Returns the repository and
    /// whether a new, empty catalog was created.
    pub fn open_recreating_catalog(root: &Path) -> Result<(Repository, bool), CatalogError> {
        match Repository::open(root) {
            Ok(r) => return Ok((r, false)),
            Err(CatalogError::CatalogMissing { .. }) => {}
            Err(CatalogError::Corrupt { .. }) => move_aside(root)?,
            Err(CatalogError::Sqlite { source, .. }) if is_damage(&source) => move_aside(root)?,
            Err(e) => return Err(e),
        }
        let abs = absolute(root)?;
        let catalog = Catalog::create(&abs.join(CATALOG_FILE))?;
        crate::atomic::sync_dir(&abs)?;
        Ok((Repository { root: abs, catalog }, true))
    }

    /// The repository's directory, made absolute at open.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// `rel` under the root. Does not check `rel`; the writing functions do.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Takes the exclusive repository lock for a mutation that must not run twice at once
    /// (a backup), without waiting. `what` names the command in a refusal seen by others.
    pub fn lock(&self, what: &str) -> Result<RepoLock, CatalogError> {
        RepoLock::acquire(&self.root, &self.root.join(LOCK_FILE), what)
    }

    /// Starts an atomic write of `rel`, creating its parent directories.
    pub fn create_atomic(&self, rel: &str) -> Result<AtomicFile, CatalogError> {
        let path = self.checked_path(rel)?;
        if let Some(parent) = path.parent() {
            create_dir_all_durable(parent)?;
        }
        AtomicFile::create(&path)
    }

    /// Writes all of `data` to `rel` atomically and durably.
    pub fn write_atomic(&self, rel: &str, data: &[u8]) -> Result<(), CatalogError> {
        let mut f = self.create_atomic(rel)?;
        f.write_all(data)
            .map_err(|e| CatalogError::io("write", f.path().to_path_buf(), e))?;
        f.commit()
    }

    /// Where the pieces and manifest of a backup live, relative to the root.
    pub fn backup_dir(db_name: &str, backup_id: &str) -> String {
        format!("{db_name}/backup/{backup_id}")
    }

    /// Where an archived WAL segment lives, relative to the root: grouped by its first
    /// 16 hex digits (timeline and log), so no directory grows without bound.
    pub fn wal_dir(db_name: &str, segment: &str) -> String {
        let group = segment.get(..16).unwrap_or(segment);
        format!("{db_name}/wal/{group}")
    }

    /// Joins `rel` to the root, refusing anything that could leave the repository.
    fn checked_path(&self, rel: &str) -> Result<PathBuf, CatalogError> {
        let p = Path::new(rel);
        let inside = !rel.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
        if !inside {
            return Err(CatalogError::BadPath {
                rel: rel.to_string(),
            });
        }
        Ok(self.root.join(p))
    }
}

fn check_marker(marker_path: &Path, root: &Path, text: &[u8]) -> Result<(), CatalogError> {
    let bad = |detail: String| CatalogError::BadMarker {
        path: marker_path.to_path_buf(),
        detail,
    };
    let marker: Marker =
        serde_json::from_slice(text).map_err(|e| bad(format!("not valid json ({e})")))?;
    if marker.format != MARKER_FORMAT {
        return Err(bad(format!(
            "format is {:?}, not {MARKER_FORMAT:?}",
            marker.format
        )));
    }
    if marker.version != u64::from(REPOSITORY_VERSION) {
        return Err(CatalogError::UnsupportedRepositoryVersion {
            path: root.to_path_buf(),
            found: marker.version,
            supported: REPOSITORY_VERSION,
        });
    }
    Ok(())
}

fn absolute(root: &Path) -> Result<PathBuf, CatalogError> {
    std::path::absolute(root).map_err(|e| CatalogError::io("resolve", root, e))
}

fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase))
}

/// Moves a damaged catalog and its journal files out of the way, keeping them for inspection.
fn move_aside(root: &Path) -> Result<(), CatalogError> {
    let stamp = chrono::Utc::now().timestamp();
    for suffix in ["", "-wal", "-shm"] {
        let from = root.join(format!("{CATALOG_FILE}{suffix}"));
        let to = root.join(format!("{CATALOG_FILE}{suffix}.damaged-{stamp}"));
        match fs::rename(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(CatalogError::io("move aside", from, e)),
        }
    }
    Ok(())
}
