//! Opening the repository the command line names (a directory, or s3://, azure://, gs://
//! with a local catalog cache or a shared catalog), creating one, and the command context
//! built on it. Every command that reads or writes a repository starts here, so this sits
//! below all of them: it imports only the command line's options and the repository list.
//! The opening itself is the command crate's (`recman_command::open`); here the options
//! become a `RepoLocation` and the opener's notes go to stderr.

use std::path::PathBuf;

use anyhow::Result;
use recman_command::model::{Context, Immutable, Repository};
use recman_command::open::{OpenError, RepoLocation};

use crate::cli::Global;

pub use recman_command::open::{RepoSpec, is_object_store};

/// The repository the global options name, as the command crate opens it.
pub fn location(g: &Global) -> RepoLocation {
    RepoLocation {
        repo: g.repo.clone(),
        repo_cache: g.repo_cache.clone(),
        catalog: g.catalog.clone(),
        as_of: g.repo_as_of.clone(),
        db: g.db.clone(),
        pgdata: g.pgdata.clone(),
        target: g.target.clone(),
        quiet: g.quiet,
    }
}

/// An opener's error as this binary's: the catalog's and the engine's errors as themselves,
/// so that the hints are spelled for the command line and the exit status finds a stop.
fn any(e: OpenError) -> anyhow::Error {
    match e {
        OpenError::Catalog(e) => e.into(),
        OpenError::Engine(e) => (*e).into(),
        OpenError::Io(e) => e.into(),
        e => e.into(),
    }
}

/// The opener's notes, on stderr.
fn say(note: &str) {
    eprintln!("recman: {note}");
}

pub fn repo_spec(g: &Global) -> Result<RepoSpec> {
    location(g).spec().map_err(any)
}

/// Where a remote repository's catalog is cached: --repo-cache, else under the user's cache
/// directory, one directory per repository URL.
pub(crate) fn cache_dir(g: &Global, url: &str) -> Result<PathBuf> {
    location(g).cache_dir(url).map_err(any)
}

/// `create catalog --immutable`: a repository in a bucket with Object Lock.
pub fn create_immutable_repo(g: &Global, spec: Immutable) -> Result<Repository> {
    recman_command::open::create_immutable_repo(&location(g), spec, &mut say).map_err(any)
}

pub fn create_repo(g: &Global) -> Result<Repository> {
    recman_command::open::create_repo(&location(g), &mut say).map_err(any)
}

/// Opens the repository. A catalog that does not know the repository yet (a remote
/// repository's missing cache, or a shared catalog seeing it for the first time) is rebuilt
/// from the manifests first, so every command sees every backup.
pub fn open_repo(g: &Global) -> Result<Repository> {
    if g.also_repo.is_empty() {
        return open_one(g);
    }
    Ok(crate::repo_list::open_first(g, open_one)?.0)
}

/// Opens the repository `--repo` names, without falling back along the list.
pub fn open_one(g: &Global) -> Result<Repository> {
    recman_command::open::open_one(&location(g), &mut say).map_err(any)
}

/// A disk repository for CATALOG START WITH, with a new catalog when its own is missing or
/// damaged (true: it was made now).
pub fn open_recreating_catalog(root: &std::path::Path) -> Result<(Repository, bool)> {
    recman_command::open::open_recreating_catalog(root).map_err(any)
}

/// The global options a restored cluster's restore_command needs to reach this repository
/// as this command did: the config file (which may hold S3 settings) and a remote
/// repository's catalog cache.
pub fn passed_on_args(g: &Global, repo: &Repository) -> Result<Vec<String>> {
    let mut v = Vec::new();
    if let Some(c) = &g.config {
        let abs = std::path::absolute(c)?;
        v.extend(["--config".to_string(), abs.display().to_string()]);
    }
    // The restored cluster's archive-get must read the same (shared) catalog.
    if let Some(url) = &g.catalog {
        v.extend(["--catalog".to_string(), url.clone()]);
    }
    // The key's location, never the key: a passphrase reaches archive-get only through the
    // server's environment (RECMAN_PASSPHRASE).
    if repo.is_encrypted() {
        if let Some(f) = &g.key_file {
            let abs = std::path::absolute(f)?;
            v.extend(["--key-file".to_string(), abs.display().to_string()]);
        }
        if let Some(c) = &g.key_command {
            v.extend(["--key-command".to_string(), c.clone()]);
        }
    }
    // A remote repository's archive-get may rebuild its cache, which reads the manifests.
    if repo.mac_required().is_some() {
        if let Some(f) = &g.mac_key_file {
            let abs = std::path::absolute(f)?;
            v.extend(["--mac-key-file".to_string(), abs.display().to_string()]);
        }
        if let Some(c) = &g.mac_key_command {
            v.extend(["--mac-key-command".to_string(), c.clone()]);
        }
    }
    if let Some(t) = &g.repo_as_of {
        // The repository's own cache: archive-get derives the same as-of cache from it.
        let url = repo.location().to_string();
        v.extend([
            "--repo-as-of".to_string(),
            t.clone(),
            "--repo-cache".to_string(),
            std::path::absolute(cache_dir(g, &url)?)?
                .display()
                .to_string(),
        ]);
    } else if repo.is_remote() {
        v.extend([
            "--repo-cache".to_string(),
            repo.root().display().to_string(),
        ]);
    }
    if !g.also_repo.is_empty() {
        v.extend(crate::repo_list::passed_on(g, repo));
    }
    Ok(v)
}

/// The command context: the repository, the database in it, and the connection to the
/// server, as the global options give them.
pub(crate) fn context(g: &Global) -> Result<Context> {
    let repo = open_repo(g)?;
    let loc = location(g);
    let db = recman_command::open::database(&repo, &loc)?;
    let tls = crate::fleet_args::tls_files(g)?;
    Ok(recman_command::open::context(repo, db, &loc, tls))
}
