//! [`RepoLocation`]: the repository a front end names, as plain data, and what follows from
//! it without opening anything: directory or object store, the remote catalog's cache
//! directory, the shared catalog's URL.

use crate::open::error::OpenError;
use std::path::PathBuf;

/// Where the repository is and how to read it: the front end's options (the CLI's --repo,
/// --repo-cache, --catalog, --repo-as-of, --db, --pgdata, --target, --quiet).
#[derive(Debug, Clone, Default)]
pub struct RepoLocation {
    pub repo: Option<PathBuf>,
    pub repo_cache: Option<PathBuf>,
    pub catalog: Option<String>,
    pub as_of: Option<String>,
    pub db: Option<String>,
    pub pgdata: Option<PathBuf>,
    pub target: Option<String>,
    /// No notes on stderr-like channels: the opener's `say` is not called.
    pub quiet: bool,
}

/// A repository as --repo names it.
pub enum RepoSpec {
    Disk(PathBuf),
    Remote(String),
}

/// Whether a repository URL names an object store (S3, Azure or GCS), whose device type is S3.
pub fn is_object_store(url: &str) -> bool {
    url.starts_with("s3://") || url.starts_with("azure://") || url.starts_with("gs://")
}

impl RepoLocation {
    /// The repository as a directory (absolute) or an object store's URL.
    pub fn spec(&self) -> Result<RepoSpec, OpenError> {
        let p = self.repo.clone().ok_or(OpenError::NoRepository)?;
        let s = p.to_string_lossy();
        if is_object_store(&s) {
            return Ok(RepoSpec::Remote(s.trim_end_matches('/').to_string()));
        }
        if let Some((scheme, _)) = s.split_once("://") {
            return Err(OpenError::UnknownScheme {
                spec: s.to_string(),
                scheme: scheme.to_string(),
            });
        }
        Ok(RepoSpec::Disk(if p.is_absolute() {
            p
        } else {
            std::env::current_dir()?.join(p)
        }))
    }

    /// Where a remote repository's catalog is cached: --repo-cache, else under the user's
    /// cache directory, one directory per repository URL.
    pub fn cache_dir(&self, url: &str) -> Result<PathBuf, OpenError> {
        if let Some(c) = &self.repo_cache {
            return Ok(c.clone());
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .ok_or_else(|| OpenError::NoCacheDir(url.to_string()))?;
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

    /// The shared catalog --catalog names, checked for its scheme.
    pub fn shared_catalog(&self) -> Result<Option<&str>, OpenError> {
        match self.catalog.as_deref() {
            None => Ok(None),
            Some(u) if u.starts_with("postgresql://") || u.starts_with("postgres://") => {
                Ok(Some(u))
            }
            Some(u) => Err(OpenError::NotPostgresUrl(u.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_are_named_for_the_url_and_s3_keeps_its_old_names() {
        let loc = RepoLocation::default();
        // The base is the runner's own cache directory; without one there is none to name.
        let Some(home) = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        else {
            return;
        };
        let base = home.join("recman");
        assert_eq!(loc.cache_dir("s3://b/p").unwrap(), base.join("b_p"));
        assert_eq!(loc.cache_dir("gs://b/p").unwrap(), base.join("gs_b_p"));
        let given = RepoLocation {
            repo_cache: Some("/c".into()),
            ..Default::default()
        };
        assert_eq!(given.cache_dir("s3://b/p").unwrap(), PathBuf::from("/c"));
    }

    #[test]
    fn a_scheme_not_known_is_refused_by_name() {
        let loc = RepoLocation {
            repo: Some("ftp://h/p".into()),
            ..Default::default()
        };
        let e = loc.spec().err().unwrap().to_string();
        assert!(
            e.starts_with("repository ftp://h/p: unknown scheme ftp://"),
            "{e}"
        );
    }
}
