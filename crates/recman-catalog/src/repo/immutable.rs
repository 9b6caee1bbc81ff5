//! Immutable repositories (docs/immutable.md): the marker says that every object is written
//! under an S3 Object Lock retention, in which mode and for at least how long. The marker is
//! written once, so an attacker holding the repository's keys cannot turn the setting off
//! without it showing (a new marker version, which `--repo-as-of` reads past).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use recman_media::{LockMode, Media, MediaError, Retention};

use super::{MARKER_FILE, Repository};
use crate::error::CatalogError;

/// The marker's `immutable` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Immutable {
    pub mode: LockMode,
    /// The shortest retention of an object, in seconds; the recovery window, when longer,
    /// lengthens it (recman_engine::immutable).
    pub min_retention_secs: u64,
}

impl Immutable {
    /// The retention of an object written at `now` when nothing asks for longer.
    pub fn retention_from(&self, now: DateTime<Utc>) -> Retention {
        Retention {
            mode: self.mode,
            until: now + chrono::Duration::seconds(self.min_retention_secs as i64),
        }
    }
}

fn no_lock(location: &str, why: &str) -> CatalogError {
    MediaError::permanent(location, "", why)
        .with_op("make immutable")
        .with_hint("an immutable repository needs an s3 bucket created with Object Lock enabled (aws s3api create-bucket --object-lock-enabled-for-bucket, or x-amz-bucket-object-lock-enabled: true); Object Lock cannot be turned on for objects already written")
        .into()
}

/// Makes every write of `media` carry the repository's retention from now on.
pub(super) fn arm(
    media: &Arc<dyn Media>,
    spec: &Immutable,
    location: &str,
) -> Result<(), CatalogError> {
    let lock = media
        .object_lock()
        .ok_or_else(|| no_lock(location, "this medium has no object lock"))?;
    lock.lock_writes(Some(spec.retention_from(Utc::now())));
    Ok(())
}

/// Before `create catalog --immutable`: the bucket must have Object Lock, or nothing is made.
pub(super) fn check_bucket(media: &Arc<dyn Media>, location: &str) -> Result<(), CatalogError> {
    let lock = media.object_lock().ok_or_else(|| {
        no_lock(
            location,
            "only an s3 bucket can hold an immutable repository",
        )
    })?;
    if !lock.bucket_lock_enabled()? {
        return Err(no_lock(
            location,
            "the bucket has no Object Lock configuration",
        ));
    }
    Ok(())
}

impl Repository {
    /// The marker's immutable setting, when the repository is immutable.
    pub fn immutable(&self) -> Option<&Immutable> {
        self.immutable.as_ref()
    }

    /// Raises the retention of every object written from now on to `until` (never below the
    /// repository's minimum), and extends the marker's own lock as far: the marker must
    /// outlive every backup, and each command that writes keeps it locked.
    pub fn lock_writes_until(
        &self,
        until: DateTime<Utc>,
    ) -> Result<Option<Retention>, CatalogError> {
        let Some(spec) = &self.immutable else {
            return Ok(None);
        };
        let Some(lock) = self.media.object_lock() else {
            return Err(no_lock(&self.location, "this medium has no object lock"));
        };
        let mut r = spec.retention_from(Utc::now());
        r.until = r.until.max(until);
        lock.lock_writes(Some(r));
        // Extending the marker at every command would cost a PutObjectRetention per WAL
        // segment archived; a quarter of the minimum ahead is as safe and rarely due.
        let slack = chrono::Duration::seconds((spec.min_retention_secs / 4) as i64);
        if lock
            .retention(MARKER_FILE)?
            .is_none_or(|cur| cur.until + slack < r.until)
        {
            lock.extend(MARKER_FILE, r)?;
        }
        Ok(Some(r))
    }

    /// The retention on object `rel`, in an immutable repository.
    pub fn retention_of(&self, rel: &str) -> Result<Option<Retention>, CatalogError> {
        match (&self.immutable, self.media.object_lock()) {
            (Some(_), Some(lock)) => Ok(lock.retention(rel)?),
            _ => Ok(None),
        }
    }

    /// Extends the retention of object `rel` to `r` (CHANGE … KEEP in an immutable repository).
    pub fn extend_retention(&self, rel: &str, r: Retention) -> Result<(), CatalogError> {
        match (&self.immutable, self.media.object_lock()) {
            (Some(_), Some(lock)) => Ok(lock.extend(rel, r)?),
            _ => Ok(()),
        }
    }

    /// Creates an immutable repository in a bucket with Object Lock: as
    /// [`Repository::create_remote_with_catalog`], the marker (written last) locked too.
    pub fn create_remote_immutable(
        media: Arc<dyn Media>,
        location: &str,
        cache: &std::path::Path,
        catalog: Option<&str>,
        spec: Immutable,
    ) -> Result<Repository, CatalogError> {
        check_bucket(&media, location)?;
        if spec.min_retention_secs == 0 {
            return Err(CatalogError::from(
                MediaError::permanent(
                    location,
                    "",
                    "an immutable repository needs a retention above zero",
                )
                .with_op("make immutable")
                .with_hint("give --lock-days DAYS (fractions allowed), e.g. --lock-days 14"),
            ));
        }
        Repository::create_remote_inner(media, location, cache, catalog, Some(spec))
    }
}
