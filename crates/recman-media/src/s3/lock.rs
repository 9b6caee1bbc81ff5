//! S3 Object Lock: the retention every write of an immutable repository carries, and the calls
//! that read, extend and respect it (docs/immutable.md).

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::Method;

use super::signed::{Call, Signed, SignedError, encode_query};
use crate::retention::Retention;

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase", default)]
struct LockConfigDoc {
    object_lock_enabled: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InitiateDoc {
    upload_id: String,
}

fn version_query(base: &str, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("{base}&versionId={}", encode_query(v)),
        None => base.to_string(),
    }
}

fn xml<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, SignedError> {
    quick_xml::de::from_str(&String::from_utf8_lossy(body))
        .map_err(|e| SignedError::Answer(e.to_string()))
}

impl Signed {
    /// PUT of a whole object under `r`, with the Content-MD5 Object Lock requires.
    pub(crate) async fn put_locked(
        &self,
        key: &str,
        data: Bytes,
        r: Retention,
    ) -> Result<(), SignedError> {
        let call = Call::new(Method::PUT, key, "")
            .header("x-amz-object-lock-mode", r.mode.s3())
            .header("x-amz-object-lock-retain-until-date", r.date())
            .body(data);
        self.send(&call).await.map(|_| ())
    }

    /// Starts a multipart upload whose object will carry `r`; its parts and completion go
    /// through object_store like any other upload.
    pub(crate) async fn create_multipart_locked(
        &self,
        key: &str,
        r: Retention,
        tag: (&'static str, &str),
    ) -> Result<String, SignedError> {
        let call = Call::new(Method::POST, key, "uploads")
            .header("x-amz-object-lock-mode", r.mode.s3())
            .header("x-amz-object-lock-retain-until-date", r.date())
            .header(tag.0, tag.1);
        let reply = self.send(&call).await?;
        Ok(xml::<InitiateDoc>(&reply.body)?.upload_id)
    }

    /// PutObjectRetention: sets (in practice extends) the retention of a version, the current
    /// one without `version`.
    pub(crate) async fn put_retention(
        &self,
        key: &str,
        version: Option<&str>,
        r: Retention,
    ) -> Result<(), SignedError> {
        let body = format!(
            "<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Mode>{}</Mode><RetainUntilDate>{}</RetainUntilDate></Retention>",
            r.mode.s3(),
            r.date()
        );
        let call = Call::new(Method::PUT, key, version_query("retention", version))
            .body(Bytes::from(body));
        self.send(&call).await.map(|_| ())
    }

    /// The retention of a version (the current one without `version`), from the headers of a
    /// HEAD: every store that has Object Lock sends them, while GetObjectRetention is missing
    /// from some (moto answers it with a 500). None for a version without one, or no object.
    pub(crate) async fn get_retention(
        &self,
        key: &str,
        version: Option<&str>,
    ) -> Result<Option<Retention>, SignedError> {
        let query = version
            .map(|v| format!("versionId={}", encode_query(v)))
            .unwrap_or_default();
        let call = Call::new(Method::HEAD, key, query);
        let reply = match self.send(&call).await {
            Ok(r) => r,
            Err(e) if e.status().is_some_and(|s| s.as_u16() == 404) => return Ok(None),
            Err(e) => return Err(e),
        };
        let header = |n: &str| reply.headers.get(n).and_then(|v| v.to_str().ok());
        let (Some(mode), Some(until)) = (
            header("x-amz-object-lock-mode"),
            header("x-amz-object-lock-retain-until-date"),
        ) else {
            return Ok(None);
        };
        let mode = mode.parse().map_err(SignedError::Answer)?;
        let until = DateTime::parse_from_rfc3339(until.trim())
            .map_err(|e| SignedError::Answer(format!("retain-until date {until:?}: {e}")))?
            .with_timezone(&Utc);
        Ok(Some(Retention { mode, until }))
    }

    /// Whether the bucket was made with Object Lock enabled.
    pub(crate) async fn bucket_lock_enabled(&self) -> Result<bool, SignedError> {
        let call = Call::new(Method::GET, "", "object-lock");
        match self.send(&call).await {
            Ok(reply) => {
                let doc: LockConfigDoc = xml(&reply.body)?;
                Ok(doc.object_lock_enabled.eq_ignore_ascii_case("enabled"))
            }
            Err(e) if e.status().is_some_and(|s| s.as_u16() == 404) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes one version (or delete marker) of a key for good; a lock refuses.
    pub(crate) async fn delete_version(&self, key: &str, version: &str) -> Result<(), SignedError> {
        let call = Call::new(
            Method::DELETE,
            key,
            format!("versionId={}", encode_query(version)),
        );
        self.send(&call).await.map(|_| ())
    }

    /// Creates the bucket, with Object Lock enabled when `object_lock` (tests and setup
    /// scripts; recman itself never creates buckets).
    pub(crate) async fn create_bucket(&self, object_lock: bool) -> Result<(), SignedError> {
        let mut call = Call::new(Method::PUT, "", "");
        if object_lock {
            call = call.header("x-amz-bucket-object-lock-enabled", "true");
        }
        self.send(&call).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_configuration_documents_parse() {
        let c: LockConfigDoc = xml(b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>").unwrap();
        assert_eq!(c.object_lock_enabled, "Enabled");
    }
}
