//! The repository: the marker, the catalog, the lock and the backups.
//!
//! A disk repository is one directory holding all of it. A remote repository (S3) holds the
//! marker, the manifests, the pieces and the archived WAL as objects; its catalog and lock
//! live in a local cache directory, because the manifests are the truth and the catalog is an
//! index of them that can be rebuilt at any time (`catalog start-with`), which a fresh cache
//! does on first open. The lock therefore serializes commands on one host only.
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
use std::path::{Path, PathBuf};
use std::sync::Arc;

use recman_media::disk::DiskMedia;
use recman_media::{Media, MediaReader, MediaWriter, ObjectInfo};

use crate::atomic::create_dir_all_durable;
use crate::catalog::{Catalog, CatalogSpec};
use crate::error::CatalogError;
use crate::lock::RepoLock;

mod crypt;
mod immutable;
mod mac;
mod remote;

pub use immutable::Immutable;
pub use mac::MarkerMac;

pub const MARKER_FILE: &str = "recman.repo";
pub const CATALOG_FILE: &str = "catalog.db";
pub const LOCK_FILE: &str = "lock";
/// In a remote repository's cache: which repository the cache belongs to.
pub const CACHE_FILE: &str = "recman.cache";
const MARKER_FORMAT: &str = "recman-repository";
/// The repository layout version this build writes and reads.
pub const REPOSITORY_VERSION: u32 = 1;

#[derive(serde::Serialize, serde::Deserialize)]
struct Marker {
    format: String,
    version: u64,
    created: String,
    /// Random, made at `create catalog`: tells a repository from another made later at the
    /// same place (a bucket emptied and used again), which the cache of a remote repository
    /// must not mistake for the one it was filled from. Absent in repositories of before ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// Present when every manifest and archived WAL object must carry a MAC under the named
    /// key. The key itself is never here: whoever can write the repository must not be able
    /// to forge a MAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mac: Option<MarkerMac>,
    /// Present in an immutable repository: every object is written under this Object Lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    immutable: Option<Immutable>,
}

/// An open repository with its catalog connection.
#[derive(Debug)]
pub struct Repository {
    /// The local directory: the repository itself, or a remote repository's cache.
    root: PathBuf,
    /// What users name the repository by: its directory or its URL.
    location: String,
    media: Arc<dyn Media>,
    remote: bool,
    catalog: Catalog,
    /// The opened key record of an encrypted repository (then `media` seals and opens).
    keys: Option<Arc<recman_media::crypt::Keyring>>,
    /// The marker's repository id, when it has one.
    id: Option<String>,
    /// Whether manifests carry MACs, and the key once it was asked for.
    mac: mac::MacState,
    /// Why a remote repository's cached catalog was thrown away at this open, if it was.
    cache_note: Option<String>,
    /// The marker's Object Lock setting, in an immutable repository.
    immutable: Option<Immutable>,
}

impl Repository {
    /// Creates a repository in `root`, which may be missing (it is created with its parents)
    /// or an empty directory. The marker is written last, so an interrupted create never
    /// leaves something that opens as a repository.
    pub fn create(root: &Path) -> Result<Repository, CatalogError> {
        Repository::create_with_catalog(root, None)
    }

    /// Like [`Repository::create`]; with `catalog` (a `postgresql://` URL), the repository's
    /// catalog is its part of that shared catalog. `catalog.db` is still made, empty, so the
    /// repository keeps its layout and can get an embedded catalog back by `catalog start-with`.
    pub fn create_with_catalog(
        root: &Path,
        catalog: Option<&str>,
    ) -> Result<Repository, CatalogError> {
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
        // Before anything is made: a MAC key that cannot be used must leave nothing behind.
        let (json, marker) = marker_json(&abs.display().to_string())?;
        let embedded = Catalog::create(&abs.join(CATALOG_FILE))?;
        let catalog = match catalog {
            Some(url) => Catalog::open_postgres(url, &abs.display().to_string())?,
            None => embedded,
        };
        let lock = abs.join(LOCK_FILE);
        recman_media::modes::open_private(&lock, recman_media::modes::PRIVATE_MODE, false)
            .map_err(|e| CatalogError::io("create", &lock, e))?;
        // The root may be a directory the user made under a permissive umask: what is in it
        // is nobody else's business.
        close_to_others(&abs)?;
        let repo = Repository::disk(abs, catalog, &marker)?;
        // write_atomic fsyncs the root, which also makes catalog.db and lock durable.
        repo.write_atomic(MARKER_FILE, &json)?;
        Ok(repo)
    }

    /// Opens an existing repository and its catalog, migrating an older catalog schema.
    pub fn open(root: &Path) -> Result<Repository, CatalogError> {
        Ok(Repository::open_with_catalog(root, None)?.0)
    }

    /// Like [`Repository::open`]; with `catalog` (a `postgresql://` URL), the catalog is the
    /// repository's part of that shared catalog. Returns whether the shared catalog did not
    /// know the repository yet, in which case the caller rebuilds it from the manifests.
    pub fn open_with_catalog(
        root: &Path,
        catalog: Option<&str>,
    ) -> Result<(Repository, bool), CatalogError> {
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
        let marker = check_marker(&marker_path, root, &text)?;
        let abs = absolute(root)?;
        let catalog = match catalog {
            Some(url) => Catalog::open_postgres(url, &abs.display().to_string())?,
            None => Catalog::open(&abs.join(CATALOG_FILE))?,
        };
        let fresh = catalog.fresh();
        Ok((Repository::disk(abs, catalog, &marker)?, fresh))
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
        // Repository::open read the marker and found it good before it found the catalog bad.
        let marker_path = abs.join(MARKER_FILE);
        let text = fs::read(&marker_path).map_err(|e| CatalogError::io("read", &marker_path, e))?;
        let marker = check_marker(&marker_path, root, &text)?;
        let catalog = Catalog::create(&abs.join(CATALOG_FILE))?;
        crate::atomic::sync_dir(&abs)?;
        Ok((Repository::disk(abs, catalog, &marker)?, true))
    }

    fn disk(root: PathBuf, catalog: Catalog, marker: &Marker) -> Result<Repository, CatalogError> {
        let location = root.display().to_string();
        let (media, keys) = crypt::open_sealed(Arc::new(DiskMedia::new(&root)?), &location)?;
        Ok(Repository {
            location,
            root,
            media,
            remote: false,
            catalog,
            keys,
            id: marker.id.clone(),
            mac: mac::MacState::of(marker),
            cache_note: None,
            immutable: None,
        })
    }

    /// The repository's id from its marker (None for a repository of before ids).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// When this open threw a remote repository's cached catalog away (it was filled from
    /// another repository at the same URL), why: the caller rebuilds it and says so.
    pub fn cache_note(&self) -> Option<&str> {
        self.cache_note.as_deref()
    }

    /// The local directory: the repository itself, or a remote repository's cache.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What another thread needs to open the same repository with its own catalog
    /// connection (catalog connections are not shared between threads).
    pub fn handle(&self) -> RepoHandle {
        RepoHandle {
            root: self.root.clone(),
            location: self.location.clone(),
            media: Arc::clone(&self.media),
            remote: self.remote,
            catalog: self.catalog.spec().clone(),
            keys: self.keys.clone(),
            id: self.id.clone(),
            mac: self.mac.clone(),
            immutable: self.immutable,
        }
    }

    /// The repository as users name it, for messages: its directory or its URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The driver that stores the repository's objects.
    pub fn media(&self) -> &Arc<dyn Media> {
        &self.media
    }

    pub fn is_remote(&self) -> bool {
        self.remote
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The file behind object `rel` of a disk repository, for what only works on files (image
    /// copies, which PostgreSQL can use in place). A remote repository refuses.
    pub fn disk_path(&self, rel: &str) -> Result<PathBuf, CatalogError> {
        if self.remote {
            return Err(CatalogError::NeedsDisk {
                location: self.location.clone(),
                what: rel.to_string(),
            });
        }
        recman_media::check_name(&self.location, rel)?;
        crypt::refuse_plain_files(self, rel)?;
        Ok(self.root.join(rel))
    }

    /// Opens object `rel` for reading.
    pub fn open_object(&self, rel: &str) -> Result<Box<dyn MediaReader>, CatalogError> {
        Ok(self.media.open(rel)?)
    }

    /// Reads a whole (small) object, or None when it does not exist.
    pub fn read_object(&self, rel: &str) -> Result<Option<Vec<u8>>, CatalogError> {
        match self.media.get(rel) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub fn object_size(&self, rel: &str) -> Result<Option<u64>, CatalogError> {
        Ok(self.media.stat(rel)?)
    }

    pub fn list_objects(&self, prefix: &str) -> Result<Vec<ObjectInfo>, CatalogError> {
        Ok(self.media.list(prefix)?)
    }

    /// Removes object `rel`; false when it was already gone.
    pub fn remove_object(&self, rel: &str) -> Result<bool, CatalogError> {
        Ok(self.media.remove(rel)?)
    }

    /// Removes every object under the directory-like prefix `dir` (e.g. a failed backup's
    /// pieces); returns how many there were.
    pub fn remove_prefix(&self, dir: &str) -> Result<usize, CatalogError> {
        let objects = self
            .media
            .list(&format!("{}/", dir.trim_end_matches('/')))?;
        for o in &objects {
            self.media.remove(&o.name)?;
        }
        if !self.remote {
            // What is left on disk is debris: temporary files of writers that were killed
            // (never listed as objects) and the directories.
            let path = self.root.join(dir.trim_end_matches('/'));
            match fs::remove_dir_all(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(CatalogError::io("remove", path, e)),
            }
        }
        Ok(objects.len())
    }

    /// Takes the exclusive repository lock for a mutation that must not run twice at once
    /// (a backup), without waiting. `what` names the command in a refusal seen by others.
    pub fn lock(&self, what: &str) -> Result<RepoLock, CatalogError> {
        RepoLock::acquire(&self.root, &self.root.join(LOCK_FILE), what)
    }

    /// Who holds the repository lock now (None: nobody), read without taking it.
    pub fn lock_holder(&self) -> Result<Option<crate::error::LockHolder>, CatalogError> {
        let path = self.root.join(LOCK_FILE);
        crate::lock::current_holder(&path)
            .map_err(|e| CatalogError::io("read the holder of", path, e))
    }

    /// Starts an atomic write of object `rel`: nothing is visible until commit.
    pub fn create_atomic(&self, rel: &str) -> Result<Box<dyn MediaWriter>, CatalogError> {
        Ok(self.media.create(rel)?)
    }

    /// Writes all of `data` to object `rel` atomically and durably.
    pub fn write_atomic(&self, rel: &str, data: &[u8]) -> Result<(), CatalogError> {
        let mut f = self.create_atomic(rel)?;
        f.write_all(data)
            .map_err(|e| recman_media::MediaError::io(&self.location, rel, "write", e))?;
        f.commit()?;
        Ok(())
    }

    /// Where the pieces and manifest of a backup live, relative to the root.
    pub fn backup_dir(db_name: &str, backup_id: &str) -> String {
        crate::layout::backup_dir(db_name, backup_id)
    }

    /// Where an archived WAL segment lives, relative to the root: grouped by its first
    /// 16 hex digits (timeline and log), so no directory grows without bound.
    pub fn wal_dir(db_name: &str, segment: &str) -> String {
        crate::layout::wal_dir(db_name, segment)
    }
}

/// An open repository's identity, shareable between threads; see [`Repository::handle`].
#[derive(Clone, Debug)]
pub struct RepoHandle {
    root: PathBuf,
    location: String,
    media: Arc<dyn Media>,
    remote: bool,
    catalog: CatalogSpec,
    keys: Option<Arc<recman_media::crypt::Keyring>>,
    id: Option<String>,
    mac: mac::MacState,
    immutable: Option<Immutable>,
}

impl RepoHandle {
    /// Opens the repository again, with a new catalog connection.
    pub fn open(&self) -> Result<Repository, CatalogError> {
        Ok(Repository {
            root: self.root.clone(),
            location: self.location.clone(),
            media: Arc::clone(&self.media),
            remote: self.remote,
            catalog: Catalog::open_spec(&self.catalog)?,
            keys: self.keys.clone(),
            id: self.id.clone(),
            mac: self.mac.clone(),
            cache_note: None,
            immutable: self.immutable,
        })
    }
}

/// A new repository's marker: a fresh id, and the MAC key's id when a MAC key was given.
fn marker_json(location: &str) -> Result<(Vec<u8>, Marker), CatalogError> {
    marker_json_with(location, None)
}

fn marker_json_with(
    location: &str,
    immutable: Option<Immutable>,
) -> Result<(Vec<u8>, Marker), CatalogError> {
    let id = recman_media::crypt::try_random::<16>().map_err(|e| {
        CatalogError::io(
            "make an id for",
            location,
            io::Error::other(format!("the system gave no random bytes: {e}")),
        )
    })?;
    let marker = Marker {
        format: MARKER_FORMAT.to_string(),
        version: REPOSITORY_VERSION.into(),
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        id: Some(id.iter().map(|b| format!("{b:02x}")).collect()),
        mac: mac::for_new_repository(location)?,
        immutable,
    };
    let mut json = serde_json::to_vec_pretty(&marker).expect("the marker serializes");
    json.push(b'\n');
    Ok((json, marker))
}

fn check_marker(marker_path: &Path, root: &Path, text: &[u8]) -> Result<Marker, CatalogError> {
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
    if let Some(m) = &marker.mac {
        m.check().map_err(bad)?;
    }
    Ok(marker)
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

/// Takes the read, write and search bits of "others" off the repository's root directory.
fn close_to_others(root: &Path) -> Result<(), CatalogError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(root)
        .map_err(|e| CatalogError::io("inspect", root, e))?
        .permissions()
        .mode();
    if mode & 0o007 != 0 {
        recman_media::modes::set_path_mode(root, mode & 0o770)
            .map_err(|e| CatalogError::io("set the mode of", root, e))?;
    }
    Ok(())
}
