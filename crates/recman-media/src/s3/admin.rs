//! Bucket administration recman itself never does, for setup scripts and tests: making a
//! bucket with Object Lock, and looking at or deleting single versions as an operator (or an
//! attacker holding the same keys) would. Keys here are whole bucket keys, prefix included.

use std::sync::Arc;

use super::signed::Signed;
use super::{Retention, S3Config, S3Media, Version, immutable::signed_error};
use crate::error::MediaError;

/// Blocking calls on one bucket, with the settings of a repository URL.
pub struct S3Admin {
    media: S3Media,
}

impl S3Admin {
    pub fn new(cfg: S3Config) -> Result<S3Admin, MediaError> {
        Ok(S3Admin {
            media: S3Media::new(cfg)?,
        })
    }

    fn signed(&self) -> Arc<Signed> {
        Arc::clone(
            self.media
                .ctx
                .signed
                .as_ref()
                .expect("an s3 driver has a signed client"),
        )
    }

    fn device(&self) -> &str {
        &self.media.ctx.device
    }

    /// Creates the bucket; with `object_lock`, with Object Lock enabled (and so versioning).
    pub fn create_bucket(&self, object_lock: bool) -> Result<(), MediaError> {
        let s = self.signed();
        self.media
            .ctx
            .block(async move { s.create_bucket(object_lock).await })
            .map_err(|e| signed_error(self.device(), "", "create bucket", &e))
    }

    /// Every version and delete marker under `prefix`.
    pub fn list_versions(&self, prefix: &str) -> Result<Vec<Version>, MediaError> {
        let (s, p) = (self.signed(), prefix.to_string());
        self.media
            .ctx
            .block(async move { s.list_versions(&p).await })
            .map_err(|e| signed_error(self.device(), prefix, "list versions", &e))
    }

    /// DeleteObject of one version: refused while a retention holds it.
    pub fn delete_version(&self, key: &str, version: &str) -> Result<(), MediaError> {
        let (s, k, v) = (self.signed(), key.to_string(), version.to_string());
        self.media
            .ctx
            .block(async move { s.delete_version(&k, &v).await })
            .map_err(|e| signed_error(self.device(), key, "delete version", &e))
    }

    /// The retention of one version.
    pub fn retention(&self, key: &str, version: &str) -> Result<Option<Retention>, MediaError> {
        let (s, k, v) = (self.signed(), key.to_string(), version.to_string());
        self.media
            .ctx
            .block(async move { s.get_retention(&k, Some(&v)).await })
            .map_err(|e| signed_error(self.device(), key, "read retention", &e))
    }
}
