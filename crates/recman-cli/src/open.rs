//! Opening the repository the command line names (a directory, or s3://, azure://, gs://
//! with a local catalog cache or a shared catalog), creating one, and the command context
//! built on it. Every command that reads or writes a repository starts here, so this sits
//! below all of them: it imports only the command line's options, the repository list and
//! the `--repo-as-of` helpers of immutable repositories.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use recman_catalog::Repository;
use recman_engine::Context;

use crate::cli::Global;

/// A repository as --repo names it.
pub enum RepoSpec {
    Disk(PathBuf),
    Remote(String),
}

/// Whether a repository URL names an object store (S3, Azure or GCS), whose device type is S3.
pub fn is_object_store(url: &str) -> bool {
    url.starts_with("s3://") || url.starts_with("azure://") || url.starts_with("gs://")
}

pub fn repo_spec(g: &Global) -> Result<RepoSpec> {
    let p = g.repo.clone().ok_or_else(|| anyhow!("no repository given; hint: pass --repo PATH, --repo s3://BUCKET/PREFIX, --repo azure://CONTAINER/PREFIX or --repo gs://BUCKET/PREFIX, set RECMAN_REPO, or name it in the --config file"))?;
    let s = p.to_string_lossy();
    if is_object_store(&s) {
        return Ok(RepoSpec::Remote(s.trim_end_matches('/').to_string()));
    }
    if let Some((scheme, _)) = s.split_once("://") {
        bail!(
            "repository {s}: unknown scheme {scheme}://; hint: use a directory, s3://BUCKET/PREFIX, azure://CONTAINER/PREFIX or gs://BUCKET/PREFIX"
        );
    }
    Ok(RepoSpec::Disk(if p.is_absolute() {
        p
    } else {
        std::env::current_dir()?.join(p)
    }))
}

/// Where a remote repository's catalog is cached: --repo-cache, else under the user's cache
/// directory, one directory per repository URL.
pub(crate) fn cache_dir(g: &Global, url: &str) -> Result<PathBuf> {
    if let Some(c) = &g.repo_cache {
        return Ok(c.clone());
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| {
            anyhow!("no cache directory for repository {url}; hint: pass --repo-cache DIR")
        })?;
    // S3's caches keep the name they always had; other schemes are named with theirs.
    let bare = url
        .strip_prefix("s3://")
        .map_or_else(|| url.replacen("://", "_", 1), str::to_string);
    let name: String = bare
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(base.join("recman").join(name))
}

fn remote_media(url: &str) -> Result<Arc<dyn recman_catalog::Media>> {
    Ok(recman_engine::devices::open_spec(url)?)
}

/// The shared catalog --catalog names, checked for its scheme.
fn shared_catalog(g: &Global) -> Result<Option<&str>> {
    match g.catalog.as_deref() {
        None => Ok(None),
        Some(u) if u.starts_with("postgresql://") || u.starts_with("postgres://") => Ok(Some(u)),
        Some(u) => bail!(
            "catalog {u}: not a PostgreSQL URL; hint: pass --catalog postgresql://USER@HOST:PORT/DATABASE, or leave it out for the repository's own catalog"
        ),
    }
}

/// `create catalog --immutable`: a repository in a bucket with Object Lock.
pub fn create_immutable_repo(
    g: &Global,
    spec: recman_catalog::repo::Immutable,
) -> Result<Repository> {
    let shared = shared_catalog(g)?;
    let RepoSpec::Remote(url) = repo_spec(g)? else {
        bail!(
            "an immutable repository needs an s3 bucket with Object Lock; hint: pass --repo s3://BUCKET/PREFIX, the bucket created with Object Lock enabled"
        );
    };
    if !url.starts_with("s3://") {
        bail!(
            "repository {url}: an immutable repository needs an s3 bucket with Object Lock; hint: pass --repo s3://BUCKET/PREFIX"
        );
    }
    let cache = cache_dir(g, &url)?;
    let repo =
        Repository::create_remote_immutable(remote_media(&url)?, &url, &cache, shared, spec)?;
    if let Some(note) = repo.cache_note()
        && !g.quiet
    {
        eprintln!("recman: {note}");
    }
    Ok(repo)
}

pub fn create_repo(g: &Global) -> Result<Repository> {
    let shared = shared_catalog(g)?;
    match repo_spec(g)? {
        RepoSpec::Disk(p) => Ok(Repository::create_with_catalog(&p, shared)?),
        RepoSpec::Remote(url) => {
            let cache = cache_dir(g, &url)?;
            let repo =
                Repository::create_remote_with_catalog(remote_media(&url)?, &url, &cache, shared)?;
            if let Some(note) = repo.cache_note()
                && !g.quiet
            {
                eprintln!("recman: {note}");
            }
            Ok(repo)
        }
    }
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
    let shared = shared_catalog(g)?;
    let as_of = g
        .repo_as_of
        .as_deref()
        .map(crate::catalog_cmds::immutable::as_of_time)
        .transpose()?;
    let (repo, fresh) = match (repo_spec(g)?, as_of) {
        (RepoSpec::Disk(p), None) => Repository::open_with_catalog(&p, shared)?,
        (RepoSpec::Disk(p), Some(_)) => bail!(
            "repository {}: --repo-as-of reads a versioned s3 bucket; a directory keeps no older versions; hint: leave out --repo-as-of",
            p.display()
        ),
        (RepoSpec::Remote(url), None) => {
            let cache = cache_dir(g, &url)?;
            match Repository::open_remote_with_catalog(remote_media(&url)?, &url, &cache, shared) {
                Err(recman_catalog::CatalogError::NotARepository { .. })
                    if url.starts_with("s3://") =>
                {
                    bail!(
                        "{url} is not a recman repository: it holds no marker recman.repo; hint: create it with `recman create catalog`, or, if it was a repository whose objects were deleted, read it as it was with --repo-as-of TIME (docs/immutable.md)"
                    )
                }
                r => r?,
            }
        }
        // The usual cache (or shared catalog) may describe what an attacker left: a cache of
        // its own, rebuilt from the versions of that time.
        (RepoSpec::Remote(url), Some(at)) => {
            let cache = crate::catalog_cmds::immutable::as_of_cache(&cache_dir(g, &url)?, at);
            let media = recman_engine::devices::open_spec_as_of(&url, at)?;
            Repository::open_remote_with_catalog(media, &url, &cache, None)?
        }
    };
    if as_of.is_none() {
        recman_engine::immutable::arm(&repo)?;
    }
    if let Some(note) = repo.cache_note()
        && !g.quiet
    {
        eprintln!("recman: {note}");
    }
    if fresh {
        let _lock = repo.lock("catalog rebuild")?;
        let r = recman_engine::rebuild_catalog(&repo, "")?;
        if !g.quiet {
            let what = if shared.is_some() {
                "shared catalog"
            } else {
                "catalog cache"
            };
            eprintln!(
                "recman: {what} {} was empty: cataloged {} backup(s) and {} archived log(s) from {}",
                repo.catalog().path().display(),
                r.backups_added.len(),
                r.wal_added,
                repo.location()
            );
        }
    }
    Ok(repo)
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
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    Ok(Context {
        repo,
        db,
        pgdata: g.pgdata.clone(),
        conninfo: g.target.clone(),
        tls: crate::fleet_args::tls_files(g)?,
    })
}
