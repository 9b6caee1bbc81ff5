//! Remote repositories (S3): the objects on the medium, the catalog and lock in a local cache
//! directory, or the catalog in a shared PostgreSQL catalog.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use recman_media::Media;

use super::{
    CACHE_FILE, CATALOG_FILE, Immutable, LOCK_FILE, MARKER_FILE, Marker, Repository, absolute,
    check_marker, marker_json_with,
};
use crate::atomic::create_dir_all_durable;
use crate::catalog::Catalog;
use crate::error::CatalogError;

impl Repository {
    /// Creates a repository on a remote medium (an empty bucket prefix), with its catalog in
    /// `cache`. The marker object is written last.
    pub fn create_remote(
        media: Arc<dyn Media>,
        location: &str,
        cache: &Path,
    ) -> Result<Repository, CatalogError> {
        Repository::create_remote_with_catalog(media, location, cache, None)
    }

    /// Like [`Repository::create_remote`], with the catalog in the shared catalog `catalog`
    /// when given (the cache then holds the lock only).
    pub fn create_remote_with_catalog(
        media: Arc<dyn Media>,
        location: &str,
        cache: &Path,
        catalog: Option<&str>,
    ) -> Result<Repository, CatalogError> {
        Repository::create_remote_inner(media, location, cache, catalog, None)
    }

    pub(super) fn create_remote_inner(
        media: Arc<dyn Media>,
        location: &str,
        cache: &Path,
        catalog: Option<&str>,
        immutable: Option<Immutable>,
    ) -> Result<Repository, CatalogError> {
        if media.stat(MARKER_FILE)?.is_some() {
            return Err(CatalogError::AlreadyExists {
                path: PathBuf::from(location),
            });
        }
        if !media.list("")?.is_empty() {
            return Err(CatalogError::NotEmpty {
                path: PathBuf::from(location),
            });
        }
        let (json, marker) = marker_json_with(location, immutable)?;
        // A new repository: whatever a cache at this place holds is of another one (a bucket
        // emptied and made again under the same URL), however its owner line reads.
        let repo = Repository::remote(media, location, cache, true, catalog, &marker)?;
        repo.media.put(MARKER_FILE, &json)?;
        Ok(repo)
    }

    /// Opens a remote repository. Returns whether its cached catalog was missing and has been
    /// created empty, in which case the caller rebuilds it from the manifests before use.
    pub fn open_remote(
        media: Arc<dyn Media>,
        location: &str,
        cache: &Path,
    ) -> Result<(Repository, bool), CatalogError> {
        Repository::open_remote_with_catalog(media, location, cache, None)
    }

    /// Like [`Repository::open_remote`], with the catalog in the shared catalog `catalog` when
    /// given; then the returned flag says whether the shared catalog did not know the
    /// repository yet.
    pub fn open_remote_with_catalog(
        media: Arc<dyn Media>,
        location: &str,
        cache: &Path,
        catalog: Option<&str>,
    ) -> Result<(Repository, bool), CatalogError> {
        let text = match media.get(MARKER_FILE) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => {
                return Err(CatalogError::NotARepository {
                    path: PathBuf::from(location),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let marker = check_marker(Path::new(location), Path::new(location), &text)?;
        let note = if catalog.is_none() {
            discard_foreign_cache(cache, location, &marker)?
        } else {
            None
        };
        // The cached catalog is only a cache: an empty, foreign or damaged one is set aside
        // and refilled from the repository's manifests, like a missing one.
        let cached = cache.join(CATALOG_FILE);
        if catalog.is_none() && cached.exists() {
            match Catalog::open(&cached) {
                Ok(_) => {}
                Err(CatalogError::Corrupt { .. }) => super::move_aside(cache)?,
                Err(CatalogError::Sqlite { source, .. }) if super::is_damage(&source) => {
                    super::move_aside(cache)?
                }
                Err(e) => return Err(e),
            }
        }
        let fresh = catalog.is_none() && !cached.exists();
        let mut repo = Repository::remote(media, location, cache, fresh, catalog, &marker)?;
        repo.cache_note = note;
        let fresh = fresh || repo.catalog.fresh();
        Ok((repo, fresh))
    }

    fn remote(
        media: Arc<dyn Media>,
        location: &str,
        cache: &Path,
        fresh: bool,
        shared: Option<&str>,
        marker: &Marker,
    ) -> Result<Repository, CatalogError> {
        create_dir_all_durable(cache)?;
        let abs = absolute(cache)?;
        let mut note = None;
        match read_owner(&abs)? {
            Some((o, _)) if o != location => {
                return Err(CatalogError::CacheMismatch {
                    cache: abs,
                    owner: o,
                    location: location.to_string(),
                });
            }
            // A catalog being made anew (create catalog, or a cache without one) for a
            // repository other than the one the owner file names: what is left of the old
            // catalog must not be reused.
            Some((_, id)) if fresh && shared.is_none() && id != marker.id => {
                note = drop_cache(&abs, location, id.as_deref(), marker)?;
                write_owner(&abs, location, marker)?;
            }
            Some(_) => {}
            None => write_owner(&abs, location, marker)?,
        }
        let lock = abs.join(LOCK_FILE);
        if !lock.exists() {
            recman_media::modes::open_private(&lock, recman_media::modes::PRIVATE_MODE, false)
                .map_err(|e| CatalogError::io("create", &lock, e))?;
        }
        let db = abs.join(CATALOG_FILE);
        let catalog = match shared {
            Some(url) => Catalog::open_postgres(url, location)?,
            None if fresh => Catalog::create(&db)?,
            None => Catalog::open(&db)?,
        };
        crate::atomic::sync_dir(&abs)?;
        // Armed before anything is written, the marker included: no object of an immutable
        // repository is ever written without its lock.
        if let Some(spec) = &marker.immutable {
            super::immutable::arm(&media, spec, location)?;
        }
        let (media, keys) = super::crypt::open_sealed(media, location)?;
        Ok(Repository {
            root: abs,
            location: location.to_string(),
            media,
            remote: true,
            catalog,
            keys,
            id: marker.id.clone(),
            mac: super::mac::MacState::of(marker),
            cache_note: note,
            immutable: marker.immutable,
        })
    }
}

/// The owner file of a cache: the repository URL, then the id of the repository the cached
/// catalog was filled from (absent in caches of before ids, and for repositories without one).
fn read_owner(cache: &Path) -> Result<Option<(String, Option<String>)>, CatalogError> {
    let owner = cache.join(CACHE_FILE);
    match fs::read_to_string(&owner) {
        Ok(text) => {
            let mut lines = text.lines();
            let location = lines.next().unwrap_or("").trim().to_string();
            let id = lines
                .find_map(|l| l.strip_prefix("id "))
                .map(|s| s.trim().to_string());
            Ok(Some((location, id)))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CatalogError::io("read", &owner, e)),
    }
}

fn write_owner(cache: &Path, location: &str, marker: &Marker) -> Result<(), CatalogError> {
    let owner = cache.join(CACHE_FILE);
    let mut text = format!("{location}\n");
    if let Some(id) = &marker.id {
        text.push_str(&format!("id {id}\n"));
    }
    // Through a temporary name: a torn owner file would make the next open drop a good cache.
    let tmp = cache.join(format!("{CACHE_FILE}.tmp"));
    fs::write(&tmp, text)
        .and_then(|()| recman_media::modes::set_path_mode(&tmp, recman_media::modes::FILE_MODE))
        .and_then(|()| fs::rename(&tmp, &owner))
        .map_err(|e| CatalogError::io("write", &owner, e))
}

/// Removes the cached catalog filled from another repository than `marker`'s; says why, when
/// there was one.
fn drop_cache(
    cache: &Path,
    location: &str,
    cached_id: Option<&str>,
    marker: &Marker,
) -> Result<Option<String>, CatalogError> {
    if !cache.join(CATALOG_FILE).exists() {
        return Ok(None);
    }
    for suffix in ["", "-wal", "-shm"] {
        let f = cache.join(format!("{CATALOG_FILE}{suffix}"));
        match fs::remove_file(&f) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(CatalogError::io("remove", f, e)),
        }
    }
    Ok(Some(format!(
        "catalog cache {} was filled from another repository at {location} (id {}; the repository now there has id {}): discarded",
        cache.display(),
        cached_id.unwrap_or("unknown"),
        marker.id.as_deref().unwrap_or("unknown"),
    )))
}

/// On open: the cache's owner file names the repository id the cached catalog was filled from;
/// when it is not the marker's, the repository at this URL was made anew since, and the cached
/// catalog describes backups that are gone. It is removed (the caller rebuilds it from the
/// repository) and the owner file is brought up to date.
fn discard_foreign_cache(
    cache: &Path,
    location: &str,
    marker: &Marker,
) -> Result<Option<String>, CatalogError> {
    let Ok(abs) = absolute(cache) else {
        return Ok(None);
    };
    let Some((owner, cached_id)) = read_owner(&abs)? else {
        return Ok(None);
    };
    // A cache of another URL is refused later, naming both; one of before ids is kept (there is
    // nothing to compare), and a marker without an id is a repository of before ids.
    if owner != location || cached_id == marker.id || marker.id.is_none() && cached_id.is_none() {
        return Ok(None);
    }
    let note = drop_cache(&abs, location, cached_id.as_deref(), marker)?;
    write_owner(&abs, location, marker)?;
    Ok(note)
}
