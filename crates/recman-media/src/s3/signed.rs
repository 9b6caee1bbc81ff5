//! A small signed S3 client for the few calls object_store does not make: writes that carry an
//! Object Lock retention, PutObjectRetention, GetObjectRetention, ListObjectVersions, the
//! deletion of one version and the bucket's lock configuration.
//!
//! It reuses what the driver already trusts: object_store's HTTP client (same TLS roots,
//! timeouts and plain-HTTP permission), its credential chain and its SigV4 signer, so no
//! second implementation of signing or of credential discovery exists in recman.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use object_store::ClientOptions;
use object_store::aws::{AwsAuthorizer, AwsCredentialProvider};
use object_store::client::{HttpClient, HttpRequestBody};

use super::S3Config;

/// Why a signed request failed, before it is named after an object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SignedError {
    #[error("cannot get credentials: {0}")]
    Credentials(String),
    #[error("cannot sign the request: {0}")]
    Sign(String),
    #[error("the request did not complete: {0}")]
    Http(String),
    #[error("http {status} {code}: {message}")]
    Status {
        status: StatusCode,
        code: String,
        message: String,
    },
    #[error("the answer could not be read: {0}")]
    Answer(String),
}

impl SignedError {
    /// The S3 error code of a refusal ("AccessDenied", "NoSuchKey"), or "" when there is none.
    pub(crate) fn code(&self) -> &str {
        match self {
            SignedError::Status { code, .. } => code,
            _ => "",
        }
    }

    pub(crate) fn status(&self) -> Option<StatusCode> {
        match self {
            SignedError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    fn transient(&self) -> bool {
        match self {
            SignedError::Http(_) => true,
            SignedError::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            _ => false,
        }
    }
}

/// An answer of the store: status, headers and the whole (small) body.
pub(crate) struct Reply {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// One request to send: what, where and with which extra headers.
pub(crate) struct Call<'a> {
    pub(crate) method: Method,
    /// The full key (prefix included), or "" for the bucket itself.
    pub(crate) key: &'a str,
    /// The raw query string, already encoded ("retention", "versions&prefix=a%2Fb").
    pub(crate) query: String,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Bytes,
}

impl<'a> Call<'a> {
    pub(crate) fn new(method: Method, key: &'a str, query: impl Into<String>) -> Call<'a> {
        Call {
            method,
            key,
            query: query.into(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The body with the Content-MD5 that Object Lock requires of every write.
    pub(crate) fn body(mut self, body: Bytes) -> Self {
        use base64::Engine;
        use md5::Digest;
        let md5 = md5::Md5::digest(&body);
        self.headers.push((
            "content-md5",
            base64::engine::general_purpose::STANDARD.encode(md5),
        ));
        self.body = body;
        self
    }
}

pub(crate) struct Signed {
    http: HttpClient,
    creds: AwsCredentialProvider,
    region: String,
    /// "http://host:port/bucket" (path style) or "https://bucket.host" (virtual-hosted).
    base: String,
    virtual_hosted: bool,
    retry: super::RetryPolicy,
}

impl std::fmt::Debug for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signed").field("base", &self.base).finish()
    }
}

impl Signed {
    pub(crate) fn new(
        cfg: &S3Config,
        client: &ClientOptions,
        creds: AwsCredentialProvider,
    ) -> Result<Signed, SignedError> {
        let http =
            crate::meter::Metered::client(client).map_err(|e| SignedError::Http(e.to_string()))?;
        Ok(Signed {
            http,
            creds,
            region: cfg.region.clone(),
            base: base_url(cfg),
            virtual_hosted: cfg.virtual_hosted,
            retry: super::RetryPolicy::of(cfg),
        })
    }

    /// Sends `call`, retrying what a retry can fix; a 4xx answer is an error with its code.
    pub(crate) async fn send(&self, call: &Call<'_>) -> Result<Reply, SignedError> {
        self.retry
            .run_while(|| self.send_once(call), SignedError::transient)
            .await
    }

    async fn send_once(&self, call: &Call<'_>) -> Result<Reply, SignedError> {
        // The bucket itself is "/bucket" in path style, "/" on a virtual host.
        let mut url = if call.key.is_empty() && !self.virtual_hosted {
            self.base.clone()
        } else {
            format!("{}/{}", self.base, encode_key(call.key))
        };
        if !call.query.is_empty() {
            url.push('?');
            url.push_str(&call.query);
        }
        let mut b = http::Request::builder()
            .method(call.method.clone())
            .uri(url.as_str());
        for (k, v) in &call.headers {
            b = b.header(*k, v);
        }
        let mut req = b
            .body(HttpRequestBody::from(call.body.clone()))
            .map_err(|e| SignedError::Sign(e.to_string()))?;
        let cred = self
            .creds
            .get_credential()
            .await
            .map_err(|e| SignedError::Credentials(e.to_string()))?;
        AwsAuthorizer::new(&cred, "s3", &self.region)
            .try_authorize(&mut req, None)
            .map_err(|e| SignedError::Sign(e.to_string()))?;
        let resp = self
            .http
            .execute(req)
            .await
            .map_err(|e| SignedError::Http(e.to_string()))?;
        let (parts, body) = resp.into_parts();
        let body = body
            .bytes()
            .await
            .map_err(|e| SignedError::Http(e.to_string()))?;
        if !parts.status.is_success() {
            let (code, message) = error_of(&body);
            return Err(SignedError::Status {
                status: parts.status,
                code,
                message,
            });
        }
        Ok(Reply {
            headers: parts.headers,
            body,
        })
    }
}

/// The bucket's address as object_store reaches it, so both clients talk to one place.
fn base_url(cfg: &S3Config) -> String {
    let ep = match &cfg.endpoint {
        Some(ep) => ep.trim_end_matches('/').to_string(),
        None => format!("https://s3.{}.amazonaws.com", cfg.region),
    };
    if cfg.virtual_hosted {
        super::bucket_endpoint(&ep, &cfg.bucket, true)
    } else {
        format!("{ep}/{}", cfg.bucket)
    }
}

/// Percent-encodes a key for the path: SigV4's canonical URI is the path exactly as sent.
pub(crate) fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encodes a query value (a '/' too).
pub(crate) fn encode_query(v: &str) -> String {
    encode_key(v).replace('/', "%2F")
}

/// The code and message of an S3 error document; empty when the body has none (a HEAD).
fn error_of(body: &[u8]) -> (String, String) {
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "PascalCase", default)]
    struct ErrorDoc {
        code: String,
        message: String,
    }
    let text = String::from_utf8_lossy(body);
    let doc: ErrorDoc = quick_xml::de::from_str(&text).unwrap_or_default();
    (doc.code, doc.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_encoded_once_and_slashes_kept_in_paths() {
        assert_eq!(
            encode_key("pg/main/wal/0000000100000000/x y"),
            "pg/main/wal/0000000100000000/x%20y"
        );
        assert_eq!(encode_query("pg/main/"), "pg%2Fmain%2F");
    }

    #[test]
    fn error_documents_give_their_code() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>locked</Message></Error>";
        assert_eq!(error_of(body), ("AccessDenied".into(), "locked".into()));
        assert_eq!(error_of(b""), (String::new(), String::new()));
    }
}
