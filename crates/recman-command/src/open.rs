//! Opening the repository a front end names (a directory, or s3://, azure://, gs:// with a
//! local catalog cache or a shared catalog), creating one, and the command context built on
//! it. The front end turns its options into a [`RepoLocation`]; everything from there to an
//! open [`Repository`] is here, so that no front end calls the catalog or the engine to get
//! one. Nothing here prints: what a user should be told (a catalog cache made, a catalog
//! rebuilt) goes to the caller's `say`, unless the location is quiet.

mod as_of;
mod error;
mod location;

pub use as_of::{as_of_cache, as_of_time};
pub use error::OpenError;
pub use location::{RepoLocation, RepoSpec, is_object_store};

use recman_catalog::repo::Immutable;
use recman_catalog::{DbRecord, Repository};
use recman_engine::{Context, EngineError};
use std::path::Path;
use std::sync::Arc;

/// The config file's `[s3]`, `[azure]` and `[gcs]` tables, as key and value pairs: every
/// repository and device the process opens on those stores gets them. Set once, before the
/// first opening; a second call changes nothing.
pub fn set_store_settings(
    s3: Option<Vec<(String, String)>>,
    azure: Option<Vec<(String, String)>>,
    gcs: Option<Vec<(String, String)>>,
) {
    if let Some(s) = s3 {
        recman_engine::devices::set_s3_settings(s);
    }
    if let Some(a) = azure {
        recman_engine::devices::set_azure_settings(a);
    }
    if let Some(g) = gcs {
        recman_engine::devices::set_gcs_settings(g);
    }
}

/// Where the opener's notes for the user go (without the front end's prefix).
pub type Say<'a> = &'a mut dyn FnMut(&str);

fn remote_media(url: &str) -> Result<Arc<dyn recman_catalog::Media>, OpenError> {
    Ok(recman_engine::devices::open_spec(url)?)
}

fn note(loc: &RepoLocation, repo: &Repository, say: Say<'_>) {
    if let Some(n) = repo.cache_note()
        && !loc.quiet
    {
        say(n);
    }
}

/// `create catalog --immutable`: a repository in a bucket with Object Lock.
pub fn create_immutable_repo(
    loc: &RepoLocation,
    spec: Immutable,
    say: Say<'_>,
) -> Result<Repository, OpenError> {
    let shared = loc.shared_catalog()?;
    let RepoSpec::Remote(url) = loc.spec()? else {
        return Err(OpenError::ImmutableNotRemote);
    };
    if !url.starts_with("s3://") {
        return Err(OpenError::ImmutableNotS3(url));
    }
    let cache = loc.cache_dir(&url)?;
    let repo =
        Repository::create_remote_immutable(remote_media(&url)?, &url, &cache, shared, spec)?;
    note(loc, &repo, say);
    Ok(repo)
}

/// `create catalog`: a new repository with its catalog where `loc` says.
pub fn create_repo(loc: &RepoLocation, say: Say<'_>) -> Result<Repository, OpenError> {
    let shared = loc.shared_catalog()?;
    match loc.spec()? {
        RepoSpec::Disk(p) => Ok(Repository::create_with_catalog(&p, shared)?),
        RepoSpec::Remote(url) => {
            let cache = loc.cache_dir(&url)?;
            let repo =
                Repository::create_remote_with_catalog(remote_media(&url)?, &url, &cache, shared)?;
            note(loc, &repo, say);
            Ok(repo)
        }
    }
}

/// Opens the repository `loc` names. A catalog that does not know the repository yet (a
/// remote repository's missing cache, or a shared catalog seeing it for the first time) is
/// rebuilt from the manifests first, so every command sees every backup.
pub fn open_one(loc: &RepoLocation, say: Say<'_>) -> Result<Repository, OpenError> {
    let shared = loc.shared_catalog()?;
    let as_of = loc.as_of.as_deref().map(as_of_time).transpose()?;
    let (repo, fresh) = match (loc.spec()?, as_of) {
        (RepoSpec::Disk(p), None) => Repository::open_with_catalog(&p, shared)?,
        (RepoSpec::Disk(p), Some(_)) => return Err(OpenError::AsOfDirectory(p)),
        (RepoSpec::Remote(url), None) => {
            let cache = loc.cache_dir(&url)?;
            match Repository::open_remote_with_catalog(remote_media(&url)?, &url, &cache, shared) {
                Err(recman_catalog::CatalogError::NotARepository { .. })
                    if url.starts_with("s3://") =>
                {
                    return Err(OpenError::NotARepository(url));
                }
                r => r?,
            }
        }
        // The usual cache (or shared catalog) may describe what an attacker left: a cache of
        // its own, rebuilt from the versions of that time.
        (RepoSpec::Remote(url), Some(at)) => {
            let cache = as_of_cache(&loc.cache_dir(&url)?, at);
            let media = recman_engine::devices::open_spec_as_of(&url, at)?;
            Repository::open_remote_with_catalog(media, &url, &cache, None)?
        }
    };
    if as_of.is_none() {
        recman_engine::immutable::arm(&repo)?;
    }
    note(loc, &repo, say);
    if fresh {
        let _lock = repo.lock("catalog rebuild")?;
        let r = recman_engine::rebuild_catalog(&repo, "")?;
        if !loc.quiet {
            let what = if shared.is_some() {
                "shared catalog"
            } else {
                "catalog cache"
            };
            say(&format!(
                "{what} {} was empty: cataloged {} backup(s) and {} archived log(s) from {}",
                repo.catalog().path().display(),
                r.backups_added.len(),
                r.wal_added,
                repo.location()
            ));
        }
    }
    Ok(repo)
}

/// A disk repository for CATALOG START WITH, with a new catalog when its own is missing or
/// damaged (true: it was made now).
pub fn open_recreating_catalog(root: &Path) -> Result<(Repository, bool), OpenError> {
    Ok(Repository::open_recreating_catalog(root)?)
}

/// The registered database of `repo` that `loc` names: by --db when given, else the only
/// one, else the one whose system identifier matches --pgdata.
pub fn database(repo: &Repository, loc: &RepoLocation) -> Result<DbRecord, EngineError> {
    recman_engine::resolve_database(repo, loc.db.as_deref(), loc.pgdata.as_deref())
}

/// The command context: the repository, the database in it, and the connection to the
/// server, as `loc` gives them.
pub fn context(
    repo: Repository,
    db: DbRecord,
    loc: &RepoLocation,
    tls: Option<recman_remote::TlsFiles>,
) -> Context {
    Context {
        repo,
        db,
        pgdata: loc.pgdata.clone(),
        conninfo: loc.target.clone(),
        tls,
    }
}
