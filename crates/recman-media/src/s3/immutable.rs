//! The driver's side of immutable repositories and of reading as of a time: locked writes,
//! the refusal to overwrite, removal of every version of a key once no lock holds it, and the
//! read-only view of the bucket as it was.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::signed::{Signed, SignedError};
use super::{AsOfView, S3Media, versions};
use crate::error::{ErrorClass, MediaError};
use crate::media::{ObjectInfo, ObjectLock};
use crate::retention::Retention;

/// A signed call's failure as a media error naming the object.
pub(crate) fn signed_error(device: &str, name: &str, op: &str, e: &SignedError) -> MediaError {
    let class = match e {
        SignedError::Http(_) => ErrorClass::Transient,
        SignedError::Status { status, .. } if status.as_u16() == 404 => ErrorClass::NotFound,
        SignedError::Status { status, .. } if status.is_server_error() => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    };
    let err = MediaError::new(class, device, name, op, e.to_string());
    match e.code() {
        "AccessDenied" | "SignatureDoesNotMatch" | "InvalidAccessKeyId" => err.with_hint(
            "a version under an Object Lock retention cannot be removed or overwritten until it ends; otherwise check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY and the key's rights (s3:PutObjectRetention, s3:ListBucketVersions, s3:DeleteObjectVersion)",
        ),
        "InvalidRequest" | "ObjectLockConfigurationNotFoundError" => err.with_hint(
            "an immutable repository needs a bucket made with Object Lock enabled (x-amz-bucket-object-lock-enabled: true)",
        ),
        _ => err,
    }
}

/// An immutable repository never replaces an object: a second manifest or WAL segment of one
/// name is a mistake (or an attack) to report, not to resolve by overwriting.
pub(crate) fn overwrite_refused(device: &str, name: &str) -> MediaError {
    MediaError::permanent(
        device,
        name,
        "the object already exists, and an immutable repository never overwrites an object",
    )
    .with_op("create")
    .with_hint("something of this name was written before: if another cluster archives into this repository, give each its own registration or repository; `recman list backup` and `list archivelog` show what is there")
}

fn locked(device: &str, name: &str, r: Retention) -> MediaError {
    MediaError::permanent(device, name, &format!("the object is locked ({r})"))
        .with_op("remove")
        .with_hint("an object under an Object Lock retention can be removed only after the retention ends; `recman list backup` shows each backup's lock")
}

impl AsOfView {
    pub(crate) fn list(&self, prefix: &str) -> Vec<ObjectInfo> {
        self.objects
            .range(prefix.to_string()..)
            .take_while(|(n, _)| n.starts_with(prefix))
            .map(|(n, p)| ObjectInfo {
                name: n.clone(),
                size: p.size,
            })
            .collect()
    }
}

impl S3Media {
    fn signed(&self, name: &str, op: &str) -> Result<Arc<Signed>, MediaError> {
        self.ctx.signed.clone().ok_or_else(|| {
            MediaError::permanent(
                &self.ctx.device,
                name,
                "object lock and versions need an s3 bucket",
            )
            .with_op(op)
        })
    }

    /// The same bucket, read as it was at `at` (`--repo-as-of`): each object's newest version
    /// written before `at`, and no writes. Lists every version under the prefix once.
    pub fn as_of(&self, at: DateTime<Utc>) -> Result<S3Media, MediaError> {
        let c = &self.ctx;
        let signed = self.signed("", "read as of")?;
        let prefix = if c.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", c.prefix)
        };
        let p = prefix.clone();
        let all = c
            .block(async move { signed.list_versions(&p).await })
            .map_err(|e| signed_error(&c.device, "", "list versions", &e))?;
        let objects = versions::as_of(all, at)
            .into_iter()
            .filter_map(|(k, pin)| Some((k.strip_prefix(&prefix)?.to_string(), pin)))
            .collect();
        Ok(S3Media {
            ctx: Arc::clone(&self.ctx),
            as_of: Some(Arc::new(AsOfView { at, objects })),
        })
    }

    /// Refuses any change while the bucket is read as of a time.
    pub(crate) fn refuse_write(&self, name: &str, op: &str) -> Result<(), MediaError> {
        let Some(view) = &self.as_of else {
            return Ok(());
        };
        Err(MediaError::permanent(
            &self.ctx.device,
            name,
            &format!(
                "the repository is read as of {} (--repo-as-of): nothing is written or removed",
                view.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        )
        .with_op(op)
        .with_hint("run the command without --repo-as-of to change the repository"))
    }

    /// Removes every version and delete marker of `name`, unless a version is still locked:
    /// in a versioned bucket a plain DELETE only hides an object behind a marker.
    pub(crate) fn remove_versions(&self, name: &str) -> Result<bool, MediaError> {
        let c = &self.ctx;
        let signed = self.signed(name, "remove")?;
        let key = c.full_key(name);
        let now = Utc::now();
        let outcome: Result<Result<bool, Retention>, SignedError> = c.block(async move {
            let all: Vec<versions::Version> = signed
                .list_versions(&key)
                .await?
                .into_iter()
                .filter(|v| v.key == key)
                .collect();
            for v in all.iter().filter(|v| !v.delete_marker) {
                if let Some(r) = signed.get_retention(&key, Some(&v.version_id)).await?
                    && r.holds_at(now)
                {
                    return Ok(Err(r));
                }
            }
            for v in &all {
                signed.delete_version(&key, &v.version_id).await?;
            }
            Ok(Ok(all.iter().any(|v| !v.delete_marker)))
        });
        match outcome {
            Ok(Ok(existed)) => Ok(existed),
            Ok(Err(r)) => Err(locked(&c.device, name, r)),
            Err(e) => Err(signed_error(&c.device, name, "remove", &e)),
        }
    }
}

impl ObjectLock for S3Media {
    fn bucket_lock_enabled(&self) -> Result<bool, MediaError> {
        let c = &self.ctx;
        let signed = self.signed("", "check object lock")?;
        c.block(async move { signed.bucket_lock_enabled().await })
            .map_err(|e| signed_error(&c.device, "", "check object lock", &e))
    }

    fn lock_writes(&self, r: Option<Retention>) {
        *self
            .ctx
            .write_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = r;
    }

    fn retention(&self, name: &str) -> Result<Option<Retention>, MediaError> {
        let c = &self.ctx;
        let signed = self.signed(name, "read retention")?;
        let key = c.full_key(name);
        let version = match &self.as_of {
            Some(view) => match view.objects.get(name) {
                Some(pin) => Some(pin.version_id.clone()),
                None => return Ok(None),
            },
            None => None,
        };
        c.block(async move { signed.get_retention(&key, version.as_deref()).await })
            .map_err(|e| signed_error(&c.device, name, "read retention", &e))
    }

    fn extend(&self, name: &str, r: Retention) -> Result<(), MediaError> {
        self.refuse_write(name, "extend retention")?;
        // A retention can only grow (COMPLIANCE refuses a shorter one): leave a longer one be.
        if self
            .retention(name)?
            .is_some_and(|cur| cur.until >= r.until)
        {
            return Ok(());
        }
        let c = &self.ctx;
        let signed = self.signed(name, "extend retention")?;
        let key = c.full_key(name);
        c.block(async move { signed.put_retention(&key, None, r).await })
            .map_err(|e| signed_error(&c.device, name, "extend retention", &e))
    }
}
