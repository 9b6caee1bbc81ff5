//! [`OpenError`]: why the repository the front end names cannot be opened or created. Its
//! own variants are the front end's naming mistakes; the catalog's and the engine's errors
//! pass through unchanged, so a front end may hand on the inner error itself.

use recman_catalog::CatalogError;
use recman_engine::EngineError;
use std::path::PathBuf;

/// Why a repository could not be opened, created or read as of a time.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "no repository given; hint: pass --repo PATH, --repo s3://BUCKET/PREFIX, --repo azure://CONTAINER/PREFIX or --repo gs://BUCKET/PREFIX, set RECMAN_REPO, or name it in the --config file"
    )]
    NoRepository,
    #[error(
        "repository {spec}: unknown scheme {scheme}://; hint: use a directory, s3://BUCKET/PREFIX, azure://CONTAINER/PREFIX or gs://BUCKET/PREFIX"
    )]
    UnknownScheme { spec: String, scheme: String },
    #[error("no cache directory for repository {0}; hint: pass --repo-cache DIR")]
    NoCacheDir(String),
    #[error(
        "catalog {0}: not a PostgreSQL URL; hint: pass --catalog postgresql://USER@HOST:PORT/DATABASE, or leave it out for the repository's own catalog"
    )]
    NotPostgresUrl(String),
    #[error(
        "an immutable repository needs an s3 bucket with Object Lock; hint: pass --repo s3://BUCKET/PREFIX, the bucket created with Object Lock enabled"
    )]
    ImmutableNotRemote,
    #[error(
        "repository {0}: an immutable repository needs an s3 bucket with Object Lock; hint: pass --repo s3://BUCKET/PREFIX"
    )]
    ImmutableNotS3(String),
    #[error(
        "repository {}: --repo-as-of reads a versioned s3 bucket; a directory keeps no older versions; hint: leave out --repo-as-of",
        .0.display()
    )]
    AsOfDirectory(PathBuf),
    #[error(
        "{0} is not a recman repository: it holds no marker recman.repo; hint: create it with `recman create catalog`, or, if it was a repository whose objects were deleted, read it as it was with --repo-as-of TIME (docs/immutable.md)"
    )]
    NotARepository(String),
    #[error("--repo-as-of {0:?} is not a time; hint: write it as 2026-11-21T14:30:00Z")]
    AsOfNotATime(String),
    #[error("--repo-as-of {0:?} is out of range; hint: write it as 2026-11-21T14:30:00Z")]
    AsOfOutOfRange(String),
    #[error("--repo-as-of {0:?} is in the future; hint: name a time before the damage was done")]
    AsOfFuture(String),
    /// The working directory a relative repository path is taken from.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Engine(Box<EngineError>),
}

impl From<EngineError> for OpenError {
    fn from(e: EngineError) -> Self {
        OpenError::Engine(Box::new(e))
    }
}
