//! Remote repositories (S3): the objects on the medium, the catalog and lock in a local cache
//! directory, or the catalog in a shared PostgreSQL catalog.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use recman_media::Media;

use super::{
    CACHE_FILE, CATALOG_FILE, LOCK_FILE, MARKER_FILE, Marker, Repository, absolute, check_marker,
    marker_json,
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
        let (json, marker) = marker_json(location)?;
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
        let repo = Repository::remote(media, location, cache, fresh, catalog, &marker)?;
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
        let owner = abs.join(CACHE_FILE);
        match fs::read_to_string(&owner) {
            Ok(o) if o.trim() != location => {
                return Err(CatalogError::CacheMismatch {
                    cache: abs,
                    owner: o.trim().to_string(),
                    location: location.to_string(),
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::write(&owner, format!("{location}\n"))
                    .and_then(|()| {
                        recman_media::modes::set_path_mode(&owner, recman_media::modes::FILE_MODE)
                    })
                    .map_err(|e| CatalogError::io("write", &owner, e))?;
            }
            Err(e) => return Err(CatalogError::io("read", &owner, e)),
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
            cache_note: None,
        })
    }
}
