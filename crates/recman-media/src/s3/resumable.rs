//! Writes to Google Cloud Storage through its JSON upload API: one `uploadType=media` request
//! for an object smaller than a part, otherwise a resumable upload session fed chunk by chunk.
//! GCS makes the object visible only when the chunk naming the total size is accepted, and an
//! abandoned session expires unseen, which is the commit contract of [`crate::MediaWriter`].
//!
//! object_store writes GCS objects through the XML API (a PUT, or an XML multipart upload);
//! recman uses the JSON API instead because it is the API every GCS implementation has: the
//! emulator the tests run (fake-gcs-server) answers neither the XML PUT nor XML multipart
//! uploads, and would store the request of an XML multipart start as an object.
//!
//! Chunks of one session go in order, so a writer keeps one chunk in flight while it fills
//! the next. A chunk is sent again only when its request never reached the service (the
//! connection failed): after a partial send only a status query could tell where to resume,
//! and the emulator takes such a query as the end of the upload. Such a failure fails the
//! write, transiently, and nothing appears.

use std::io::{self, Write};
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, StatusCode};
use object_store::ClientOptions;
use object_store::client::{HttpClient, HttpErrorKind, HttpRequestBody};
use object_store::gcp::GcpCredentialProvider;
use tokio::task::JoinHandle;

use super::{Ctx, S3Config, wait};
use crate::error::{ErrorClass, MediaError};
use crate::media::MediaWriter;

const CREDENTIALS_HINT: &str = "check GOOGLE_APPLICATION_CREDENTIALS (or credentials-file in the [gcs] section of the config file) and that the account may write objects in this bucket";
const ENDPOINT_HINT: &str = "check the endpoint (RECMAN_GCS_ENDPOINT, STORAGE_EMULATOR_HOST, or endpoint in the [gcs] section of the config file) and that the service is reachable";

/// Why an upload request failed, before it is named after an object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UploadError {
    #[error("cannot get credentials: {0}")]
    Credentials(String),
    #[error("the request did not complete: {message}")]
    Http { connect: bool, message: String },
    #[error("http {}: {message}", status.as_u16())]
    Status { status: StatusCode, message: String },
    #[error("the answer could not be read: {0}")]
    Answer(String),
}

/// The error of a bucket that does not exist, found before or at the first write.
pub(crate) fn no_bucket(device: &str, object: &str, op: &str) -> MediaError {
    MediaError::new(
        ErrorClass::Permanent,
        device,
        object,
        op,
        "the bucket does not exist".into(),
    )
    .with_hint("create the bucket first (e.g. `gcloud storage buckets create gs://BUCKET`), or fix the bucket name in the repository url")
}

impl UploadError {
    /// Worth another attempt of an idempotent request.
    fn transient(&self) -> bool {
        match self {
            UploadError::Http { .. } => true,
            UploadError::Status { status, .. } => {
                status.is_server_error()
                    || *status == StatusCode::TOO_MANY_REQUESTS
                    || *status == StatusCode::REQUEST_TIMEOUT
            }
            _ => false,
        }
    }

    /// The request never reached the service, so sending it again cannot duplicate data.
    fn unsent(&self) -> bool {
        matches!(self, UploadError::Http { connect: true, .. })
    }

    /// The media error for `op` on `object` of `device`.
    pub(crate) fn to_media(&self, device: &str, object: &str, op: &str) -> MediaError {
        let err = |class, msg: String| MediaError::new(class, device, object, op, msg);
        match self {
            UploadError::Status { status, .. } if status.as_u16() == 404 => {
                no_bucket(device, object, op)
            }
            UploadError::Status { status, message } if matches!(status.as_u16(), 401 | 403) => err(
                ErrorClass::Permanent,
                format!(
                    "the service refused access: http {}: {message}",
                    status.as_u16()
                ),
            )
            .with_hint(CREDENTIALS_HINT),
            UploadError::Credentials(_) => {
                err(ErrorClass::Permanent, self.to_string()).with_hint(CREDENTIALS_HINT)
            }
            UploadError::Http { .. } => err(
                ErrorClass::Transient,
                format!("the upload failed after retries: {self}"),
            )
            .with_hint(ENDPOINT_HINT),
            e if e.transient() => err(
                ErrorClass::Transient,
                format!("the service kept failing after retries: {e}"),
            )
            .with_hint("the service is overloaded or unavailable; try again later"),
            e => err(
                ErrorClass::Permanent,
                format!("the service rejected the upload: {e}"),
            ),
        }
    }

    /// The media error of a chunk: there a 404 means the session is gone, not the bucket.
    pub(crate) fn to_media_in_session(&self, device: &str, object: &str, op: &str) -> MediaError {
        match self {
            UploadError::Status { status, .. } if matches!(status.as_u16(), 404 | 410) => {
                MediaError::new(
                    ErrorClass::Transient,
                    device,
                    object,
                    op,
                    "the upload session ended before the object was complete".into(),
                )
                .with_hint("write the object again: nothing of this upload is visible")
            }
            _ => self.to_media(device, object, op),
        }
    }
}

/// The JSON upload API of one bucket, over object_store's HTTP client and credentials.
pub struct GcsUploader {
    http: HttpClient,
    /// None: requests carry no Authorization (an emulator, a public bucket).
    creds: Option<GcpCredentialProvider>,
    /// "https://storage.googleapis.com/upload/storage/v1/b/BUCKET/o".
    upload_url: String,
    /// "https://storage.googleapis.com/storage/v1/b/BUCKET/o".
    object_url: String,
    /// "https://storage.googleapis.com/storage/v1/b/BUCKET".
    bucket_url: String,
    retry: super::RetryPolicy,
}

impl std::fmt::Debug for GcsUploader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcsUploader")
            .field("upload_url", &self.upload_url)
            .finish()
    }
}

/// An answer: status, headers and the whole (small) body.
struct Reply {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Bytes,
}

impl GcsUploader {
    pub(crate) fn new(
        cfg: &S3Config,
        client: &ClientOptions,
        creds: Option<GcpCredentialProvider>,
        base: &str,
        bucket: &str,
    ) -> Result<GcsUploader, UploadError> {
        let http = crate::meter::Metered::client(client).map_err(|e| UploadError::Http {
            connect: false,
            message: e.to_string(),
        })?;
        let base = base.trim_end_matches('/');
        let bucket = encode(bucket);
        Ok(GcsUploader {
            http,
            creds,
            upload_url: format!("{base}/upload/storage/v1/b/{bucket}/o"),
            object_url: format!("{base}/storage/v1/b/{bucket}/o"),
            bucket_url: format!("{base}/storage/v1/b/{bucket}"),
            retry: super::RetryPolicy::of(cfg),
        })
    }

    async fn send_once(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<Reply, UploadError> {
        let mut b = http::Request::builder().method(method).uri(url);
        for (k, v) in headers {
            b = b.header(*k, v);
        }
        if let Some(creds) = &self.creds {
            let c = creds
                .get_credential()
                .await
                .map_err(|e| UploadError::Credentials(e.to_string()))?;
            // An emulator's key file may turn OAuth off: an empty token means no header.
            if !c.bearer.is_empty() {
                b = b.header("authorization", format!("Bearer {}", c.bearer));
            }
        }
        let req = b
            .body(HttpRequestBody::from(body))
            .map_err(|e| UploadError::Answer(e.to_string()))?;
        let resp = self
            .http
            .execute(req)
            .await
            .map_err(|e| UploadError::Http {
                connect: e.kind() == HttpErrorKind::Connect,
                message: e.to_string(),
            })?;
        let (parts, body) = resp.into_parts();
        let body = body.bytes().await.map_err(|e| UploadError::Http {
            connect: false,
            message: e.to_string(),
        })?;
        // 308 is how a resumable session says "more please", not a failure.
        if !parts.status.is_success() && parts.status != StatusCode::PERMANENT_REDIRECT {
            return Err(UploadError::Status {
                status: parts.status,
                message: error_message(&body),
            });
        }
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// Sends a request again while `again` says the failure allows it, within the limits.
    async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Bytes,
        again: fn(&UploadError) -> bool,
    ) -> Result<Reply, UploadError> {
        self.retry
            .run_while(
                || self.send_once(method.clone(), url, headers, body.clone()),
                again,
            )
            .await
    }

    /// Stores `data` as `key` in one request; sending it again is harmless.
    pub(crate) async fn put_whole(&self, key: &str, data: Bytes) -> Result<(), UploadError> {
        let url = format!("{}?uploadType=media&name={}", self.upload_url, encode(key));
        let headers = [("content-type", "application/octet-stream".to_string())];
        self.send(Method::POST, &url, &headers, data, UploadError::transient)
            .await
            .map(|_| ())
    }

    /// Opens a resumable session for `key`; its URL is where the chunks go. An unused
    /// session is harmless, so the start is retried.
    pub(crate) async fn start(&self, key: &str) -> Result<String, UploadError> {
        let url = format!(
            "{}?uploadType=resumable&name={}",
            self.upload_url,
            encode(key)
        );
        let headers = [("x-upload-content-type", "application/octet-stream".into())];
        let r = self
            .send(
                Method::POST,
                &url,
                &headers,
                Bytes::new(),
                UploadError::transient,
            )
            .await?;
        r.headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| UploadError::Answer("the session start named no location".into()))
    }

    /// Sends `data`, the bytes at `offset` of the object; `total` is the object's size when
    /// this is the last chunk. Ok(true) when the object now exists.
    pub(crate) async fn put_chunk(
        &self,
        session: &str,
        data: Bytes,
        offset: u64,
        total: Option<u64>,
    ) -> Result<bool, UploadError> {
        let headers = [
            ("content-range", content_range(offset, data.len(), total)),
            ("content-type", "application/octet-stream".to_string()),
        ];
        let r = self
            .send(Method::PUT, session, &headers, data, UploadError::unsent)
            .await?;
        Ok(r.status != StatusCode::PERMANENT_REDIRECT)
    }

    /// Ends a session without an object; best effort, GCS expires forgotten ones.
    pub(crate) async fn cancel(&self, session: &str) {
        let _ = self
            .send_once(Method::DELETE, session, &[], Bytes::new())
            .await;
    }

    /// Whether the service says the bucket does not exist. Any other answer, a refusal of
    /// an account allowed objects only included, says nothing.
    pub(crate) async fn bucket_missing(&self) -> bool {
        matches!(
            self.send_once(Method::GET, &self.bucket_url, &[], Bytes::new()).await,
            Err(UploadError::Status { status, .. }) if status == StatusCode::NOT_FOUND
        )
    }

    /// Whether `key` holds an object of `size` bytes whose CRC32C is `crc`: the last chunk's
    /// answer can be lost after the service committed the object.
    pub(crate) async fn landed(&self, key: &str, size: u64, crc: u32) -> Result<bool, UploadError> {
        use base64::Engine;
        #[derive(serde::Deserialize)]
        struct Meta {
            size: String,
            crc32c: Option<String>,
        }
        let url = format!("{}/{}", self.object_url, encode(key));
        let r = match self
            .send(Method::GET, &url, &[], Bytes::new(), UploadError::transient)
            .await
        {
            Err(UploadError::Status { status, .. }) if status == StatusCode::NOT_FOUND => {
                return Ok(false);
            }
            r => r?,
        };
        let m: Meta =
            serde_json::from_slice(&r.body).map_err(|e| UploadError::Answer(e.to_string()))?;
        let want = base64::engine::general_purpose::STANDARD.encode(crc.to_be_bytes());
        Ok(m.size == size.to_string() && m.crc32c.as_deref() == Some(want.as_str()))
    }
}

/// The Content-Range of `len` bytes at `offset`; `total` on the last chunk. A last chunk
/// with no bytes (never sent by the writer, which keeps the last bytes back) names only the
/// total, as an empty range cannot be written.
fn content_range(offset: u64, len: usize, total: Option<u64>) -> String {
    let total = total.map_or("*".to_string(), |t| t.to_string());
    match len {
        0 => format!("bytes */{total}"),
        n => format!("bytes {offset}-{}/{total}", offset + n as u64 - 1),
    }
}

/// Percent-encodes a path segment or query value, '/' included.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The message of a JSON error answer, else the start of the body.
fn error_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Doc {
        error: Inner,
    }
    #[derive(serde::Deserialize)]
    struct Inner {
        message: String,
    }
    match serde_json::from_slice::<Doc>(body) {
        Ok(d) => d.error.message.to_lowercase(),
        Err(_) => String::from_utf8_lossy(&body[..body.len().min(200)])
            .trim()
            .to_lowercase(),
    }
}

/// A resumable session in progress.
struct Session {
    url: String,
    /// Bytes handed to chunks so far.
    sent: u64,
    in_flight: Option<JoinHandle<Result<bool, MediaError>>>,
}

pub(super) struct GcsWriter {
    ctx: Arc<Ctx>,
    up: Arc<GcsUploader>,
    key: String,
    name: String,
    /// The chunk being filled; empty (unallocated) until the next write.
    buf: Vec<u8>,
    session: Option<Session>,
    written: u64,
    /// CRC32C of every byte written, to recognise our object if the last answer is lost.
    crc: u32,
    /// The first failure; the writer refuses everything after it.
    failed: Option<MediaError>,
    finished: bool,
}

impl GcsWriter {
    pub(super) fn new(ctx: Arc<Ctx>, up: Arc<GcsUploader>, key: String, name: &str) -> Self {
        GcsWriter {
            ctx,
            up,
            key,
            name: name.to_string(),
            buf: Vec::new(),
            session: None,
            written: 0,
            crc: 0,
            failed: None,
            finished: false,
        }
    }

    fn media_err(&self, op: &str, e: &UploadError) -> MediaError {
        e.to_media(&self.ctx.device, &self.name, op)
    }

    /// Sends the full buffer as the next chunk once the previous one is through, so that one
    /// chunk uploads while the next fills.
    fn ship_chunk(&mut self) -> Result<(), MediaError> {
        if self.session.is_none() {
            let (up, key) = (Arc::clone(&self.up), self.key.clone());
            let url = self
                .ctx
                .block(async move { up.start(&key).await })
                .map_err(|e| self.media_err("start upload", &e))?;
            self.session = Some(Session {
                url,
                sent: 0,
                in_flight: None,
            });
        }
        self.finish_in_flight()?;
        let data = Bytes::from(std::mem::take(&mut self.buf));
        let Some(s) = self.session.as_mut() else {
            unreachable!("the session was just started")
        };
        let (up, url, offset) = (Arc::clone(&self.up), s.url.clone(), s.sent);
        s.sent += data.len() as u64;
        let (device, name) = (self.ctx.device.clone(), self.name.clone());
        s.in_flight = Some(self.ctx.spawn(async move {
            let op = format!("upload bytes from {offset}");
            up.put_chunk(&url, data, offset, None)
                .await
                .map_err(|e| e.to_media_in_session(&device, &name, &op))
        }));
        Ok(())
    }

    fn finish_in_flight(&mut self) -> Result<(), MediaError> {
        let Some(h) = self.session.as_mut().and_then(|s| s.in_flight.take()) else {
            return Ok(());
        };
        if wait(h)? {
            // The service ended the upload before the last chunk: never expected.
            return Err(MediaError::permanent(
                &self.ctx.device,
                &self.name,
                "the service ended the upload early",
            )
            .with_op("write"));
        }
        Ok(())
    }

    fn put_whole(&mut self) -> Result<(), MediaError> {
        let data = Bytes::from(std::mem::take(&mut self.buf));
        let (up, key) = (Arc::clone(&self.up), self.key.clone());
        self.ctx
            .block(async move { up.put_whole(&key, data).await })
            .map_err(|e| self.media_err("commit", &e))
    }

    /// Sends the last chunk with the total size, which commits the object.
    fn complete(&mut self) -> Result<(), MediaError> {
        self.finish_in_flight()?;
        let data = Bytes::from(std::mem::take(&mut self.buf));
        let Some(s) = self.session.as_ref() else {
            unreachable!("complete is only called with a session")
        };
        let (up, url, offset) = (Arc::clone(&self.up), s.url.clone(), s.sent);
        let (key, total, crc) = (self.key.clone(), self.written, self.crc);
        let done = self.ctx.block(async move {
            match up.put_chunk(&url, data, offset, Some(total)).await {
                Ok(done) => Ok(done),
                // The answer may be what got lost: the object tells.
                Err(e) => match up.landed(&key, total, crc).await {
                    Ok(true) => Ok(true),
                    _ => Err(e),
                },
            }
        });
        match done {
            Ok(true) => {
                self.session = None;
                Ok(())
            }
            Ok(false) => Err(MediaError::permanent(
                &self.ctx.device,
                &self.name,
                "the service did not finish the upload after its last chunk",
            )
            .with_op("commit")),
            Err(e) => Err(e.to_media_in_session(&self.ctx.device, &self.name, "commit")),
        }
    }

    /// Stops the chunk in flight and cancels the session; best effort.
    fn abort_session(&mut self) {
        let Some(s) = self.session.take() else {
            return;
        };
        if let Some(h) = s.in_flight {
            h.abort();
            // Waiting makes sure no chunk lands after the cancel.
            let _ = futures::executor::block_on(h);
        }
        let up = Arc::clone(&self.up);
        self.ctx.block(async move { up.cancel(&s.url).await });
    }

    fn fail(&mut self, e: MediaError) -> io::Error {
        self.failed = Some(e.clone());
        e.into_io()
    }
}

impl Write for GcsWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Some(e) = &self.failed {
            return Err(e.clone().into_io());
        }
        if data.is_empty() {
            return Ok(0);
        }
        let part_size = self.ctx.cfg.part_size;
        // A full chunk ships only once more data comes, so the last chunk is never empty
        // and an object of exactly one chunk is a single request.
        if self.buf.len() == part_size
            && let Err(e) = self.ship_chunk()
        {
            return Err(self.fail(e));
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(part_size);
        }
        let n = data.len().min(part_size - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        self.crc = crc32c::crc32c_append(self.crc, &data[..n]);
        self.written += n as u64;
        Ok(n)
    }

    /// Nothing to do: GCS takes chunks in multiples of 256 KiB only.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl MediaWriter for GcsWriter {
    fn commit(mut self: Box<Self>) -> Result<u64, MediaError> {
        if let Some(e) = self.failed.take() {
            return Err(e); // Drop cancels the session.
        }
        if self.session.is_none() {
            self.put_whole()?;
        } else {
            self.complete()?;
        }
        self.finished = true;
        Ok(self.written)
    }

    fn abort(self: Box<Self>) {}
}

impl Drop for GcsWriter {
    fn drop(&mut self) {
        if !self.finished {
            self.abort_session();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_whole_and_errors_read() {
        assert_eq!(encode("pg/main/x y"), "pg%2Fmain%2Fx%20y");
        let body = br#"{"error":{"code":403,"message":"Access Denied"}}"#;
        assert_eq!(error_message(body), "access denied");
        assert_eq!(error_message(b"Not Found"), "not found");
    }

    /// The emulator reads neither a chunk's offset nor its end (it appends what comes and
    /// commits when the range reaches the total), so the ranges are checked here.
    #[test]
    fn chunk_ranges_name_offset_end_and_the_total_on_the_last() {
        let mib = 1 << 20;
        assert_eq!(content_range(0, 5 * mib, None), "bytes 0-5242879/*");
        assert_eq!(
            content_range(5 << 20, 3, Some((5 << 20) + 3)),
            "bytes 5242880-5242882/5242883"
        );
        assert_eq!(
            content_range(10 << 20, 0, Some(10 << 20)),
            "bytes */10485760"
        );
    }

    #[test]
    fn only_an_unsent_chunk_is_sent_again() {
        let refused = UploadError::Http {
            connect: true,
            message: "refused".into(),
        };
        let cut = UploadError::Http {
            connect: false,
            message: "reset".into(),
        };
        assert!(refused.unsent() && !cut.unsent() && cut.transient());
        let e = UploadError::Status {
            status: StatusCode::FORBIDDEN,
            message: "no".into(),
        }
        .to_media("gs://b/p", "obj", "commit");
        assert_eq!(e.class, ErrorClass::Permanent);
        assert!(
            e.to_string().contains("GOOGLE_APPLICATION_CREDENTIALS"),
            "{e}"
        );
    }
}
