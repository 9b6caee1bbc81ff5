//! Turns object_store errors into media errors with a class and a hint.
//!
//! object_store 0.14 keeps its request error type private, so the HTTP status and the S3
//! error code are read from the Display text of the error chain ("status code: 403",
//! "<Code>SignatureDoesNotMatch</Code>"); transport failures are found by type.

use std::error::Error as StdError;

use object_store::Error as OsError;
use object_store::client::{HttpError, HttpErrorKind};

use crate::error::{ErrorClass, MediaError};

const CREDENTIALS_HINT: &str = "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or access-key-id and secret-access-key in the [s3] section of the config file), AWS_SESSION_TOKEN for temporary keys, and that the key may use this bucket";
const AZURE_CREDENTIALS_HINT: &str = "check AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or account and access-key in the [azure] section of the config file), and that the key may use this container";
const AZURE_ENDPOINT_HINT: &str = "check the endpoint (AZURE_STORAGE_ENDPOINT, AZURITE_BLOB_STORAGE_URL with AZURE_STORAGE_USE_EMULATOR, or endpoint in the [azure] section of the config file) and that the store is running and reachable";
const GCS_CREDENTIALS_HINT: &str = "check GOOGLE_APPLICATION_CREDENTIALS (or credentials-file in the [gcs] section of the config file) and that the account may use this bucket";
const GCS_ENDPOINT_HINT: &str = "check the endpoint (RECMAN_GCS_ENDPOINT, STORAGE_EMULATOR_HOST, or endpoint in the [gcs] section of the config file) and that the service is running and reachable";
const ENDPOINT_HINT: &str = "check the endpoint (AWS_ENDPOINT_URL, or endpoint in the [s3] section of the config file) and that the store is running and reachable";

/// What went wrong, as far as the error chain tells.
#[derive(Debug, Default)]
pub(crate) struct Failure {
    status: Option<u16>,
    code: Option<String>,
    s3_message: Option<String>,
    transport: Option<HttpErrorKind>,
    refused: bool,
    /// Why the store's TLS certificate was refused (rustls's words), if it was.
    certificate: Option<String>,
    not_found: bool,
    denied: bool,
    text: String,
}

impl Failure {
    pub(crate) fn of(e: &OsError) -> Failure {
        let mut f = Failure {
            not_found: matches!(e, OsError::NotFound { .. }),
            denied: matches!(
                e,
                OsError::PermissionDenied { .. } | OsError::Unauthenticated { .. }
            ),
            text: e.to_string(),
            ..Failure::default()
        };
        let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
        while let Some(err) = cur {
            if let Some(h) = err.downcast_ref::<HttpError>() {
                f.transport.get_or_insert(h.kind());
            }
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                f.refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
            }
            let s = err.to_string();
            f.refused |= s.contains("Connection refused") || s.contains("connection refused");
            if f.certificate.is_none()
                && let Some(at) = s.find("invalid peer certificate: ")
            {
                f.certificate = Some(s[at + "invalid peer certificate: ".len()..].to_string());
            }
            if f.status.is_none() {
                f.status = status_in(&s);
            }
            if f.code.is_none() {
                f.code = xml_tag(&s, "Code");
                f.s3_message = xml_tag(&s, "Message");
            }
            cur = err.source();
        }
        f
    }

    fn code_is(&self, codes: &[&str]) -> bool {
        self.code.as_deref().is_some_and(|c| codes.contains(&c))
    }

    pub(crate) fn is_not_found(&self) -> bool {
        (self.not_found || self.status == Some(404))
            && !self.code_is(&["NoSuchBucket", "ContainerNotFound"])
    }

    fn is_server_side(&self) -> bool {
        self.status
            .is_some_and(|s| s >= 500 || s == 429 || s == 408)
            || self.code_is(&[
                "SlowDown",
                "InternalError",
                "ServiceUnavailable",
                "RequestTimeout",
            ])
    }

    /// A failure worth another attempt that object_store gives up on without exhausting its
    /// retries: a response cut after its status line, a body read timing out. Errors with a
    /// status and failed connects were already retried to the limit.
    pub(crate) fn retry_outside(&self) -> bool {
        self.status.is_none()
            && self.code.is_none()
            && !self.refused
            && self.transport.is_some_and(|k| k != HttpErrorKind::Connect)
    }

    fn status_text(&self) -> String {
        match (self.status, &self.code) {
            (Some(s), Some(c)) => format!("http {s} ({c})"),
            (Some(s), None) => format!("http {s}"),
            (None, Some(c)) => c.clone(),
            (None, None) => "no status".to_string(),
        }
    }

    /// The media error for `op` on `object`.
    pub(crate) fn to_media(&self, device: &str, object: &str, op: &str) -> MediaError {
        let err = |class, message: String| MediaError::new(class, device, object, op, message);
        let detail = self
            .s3_message
            .as_deref()
            .map(|m| format!(": {}", m.to_lowercase()))
            .unwrap_or_default();
        if self.code_is(&["NoSuchBucket"]) {
            return err(ErrorClass::Permanent, "the bucket does not exist".into()).with_hint(
                "create the bucket first (e.g. `aws s3 mb s3://BUCKET`), or fix the bucket name in the repository url",
            );
        }
        if self.code_is(&["ContainerNotFound"]) {
            return err(ErrorClass::Permanent, "the container does not exist".into()).with_hint(
                "create the container first (e.g. `az storage container create --name CONTAINER`), or fix the container name in the repository url",
            );
        }
        if self.is_not_found() {
            return MediaError::not_found(device, object).with_op(op);
        }
        let credentials = [
            "AccessDenied",
            "SignatureDoesNotMatch",
            "InvalidAccessKeyId",
            "ExpiredToken",
            "InvalidToken",
        ];
        if self.denied || matches!(self.status, Some(401 | 403)) || self.code_is(&credentials) {
            let msg = format!("the store refused access: {}{detail}", self.status_text());
            return err(ErrorClass::Permanent, msg).with_hint(CREDENTIALS_HINT);
        }
        if self.is_server_side() {
            let msg = format!(
                "the store kept failing after retries: {}",
                self.status_text()
            );
            return err(ErrorClass::Transient, msg).with_hint(
                "the store is overloaded or unavailable (a cluster that lost its quorum answers 503 too); check its health, try again later, or lower parts-in-flight",
            );
        }
        if matches!(self.status, Some(301 | 307)) || self.text.contains("redirect") {
            return err(
                ErrorClass::Permanent,
                "the store redirected the request".into(),
            )
            .with_hint("check the region (AWS_REGION), the endpoint and virtual-hosted");
        }
        if let Some(why) = &self.certificate {
            let why = match why.as_str() {
                "UnknownIssuer" => "it is not signed by a trusted CA (unknown issuer)".to_string(),
                w if w.contains("NotValidForName") => {
                    format!("it does not name the endpoint's host ({w})")
                }
                w => w.to_string(),
            };
            return err(
                ErrorClass::Permanent,
                format!("the store's TLS certificate was refused: {why}"),
            )
            .with_hint("give the CA that signed the store's certificate in ca-file (the [s3] section of the config file) or RECMAN_S3_CA_FILE / AWS_CA_BUNDLE, and make the endpoint's host one the certificate names");
        }
        if self.refused {
            let msg = "cannot connect to the store after retries: connection refused".into();
            return err(ErrorClass::Transient, msg).with_hint(ENDPOINT_HINT);
        }
        if let Some(kind) = self.transport {
            let (msg, hint) = match kind {
                HttpErrorKind::Connect => {
                    ("cannot connect to the store after retries", ENDPOINT_HINT)
                }
                HttpErrorKind::Timeout => (
                    "the request timed out after retries",
                    "check the network path to the store, or raise request-timeout",
                ),
                _ => (
                    "the connection to the store failed after retries",
                    "check the network path to the store",
                ),
            };
            return err(ErrorClass::Transient, msg.into()).with_hint(hint);
        }
        if self.status.is_some() {
            let msg = format!(
                "the store rejected the request: {}{detail}",
                self.status_text()
            );
            return err(ErrorClass::Permanent, msg);
        }
        err(ErrorClass::Permanent, lower_first(&self.text))
    }
}

/// The same error with hints that name Azure's settings instead of AWS's.
pub(crate) fn azure_hints(e: MediaError) -> MediaError {
    match e.hint() {
        Some(CREDENTIALS_HINT) => e.with_hint(AZURE_CREDENTIALS_HINT),
        Some(ENDPOINT_HINT) => e.with_hint(AZURE_ENDPOINT_HINT),
        Some(h) if h.contains("AWS_REGION") => e.with_hint(AZURE_ENDPOINT_HINT),
        _ => e,
    }
}

/// The same error with hints that name Google Cloud Storage's settings instead of AWS's.
pub(crate) fn gcs_hints(e: MediaError) -> MediaError {
    match e.hint() {
        Some(CREDENTIALS_HINT) => e.with_hint(GCS_CREDENTIALS_HINT),
        Some(ENDPOINT_HINT) => e.with_hint(GCS_ENDPOINT_HINT),
        Some(h) if h.contains("AWS_REGION") => e.with_hint(GCS_ENDPOINT_HINT),
        Some(h) if h.contains("parts-in-flight") => {
            e.with_hint("the service is overloaded or unavailable; check its health or try again later")
        }
        Some(h) if h.contains("aws s3 mb") => e.with_hint(
            "create the bucket first (e.g. `gcloud storage buckets create gs://BUCKET`), or fix the bucket name in the repository url",
        ),
        _ => e,
    }
}

/// The media error for a failed object_store call.
pub(crate) fn media_error(device: &str, object: &str, op: &str, e: &OsError) -> MediaError {
    Failure::of(e).to_media(device, object, op)
}

fn status_in(s: &str) -> Option<u16> {
    let at = s.find("status code: ")? + "status code: ".len();
    s.get(at..at + 3)?.parse().ok()
}

fn xml_tag(s: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = s.find(&open)? + open.len();
    let len = s[start..].find(&format!("</{tag}>"))?;
    Some(s[start..start + len].trim().to_string())
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_status_and_code_from_text() {
        let s = "Server returned non-2xx status code: 403 Forbidden: <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature</Message></Error>";
        assert_eq!(status_in(s), Some(403));
        assert_eq!(xml_tag(s, "Code").as_deref(), Some("SignatureDoesNotMatch"));
        assert_eq!(lower_first("The x"), "the x");
    }

    #[test]
    fn denied_is_permanent_with_the_credentials_hint() {
        let f = Failure {
            status: Some(403),
            code: Some("AccessDenied".into()),
            ..Failure::default()
        };
        let e = f.to_media("s3://b/p", "obj", "commit");
        assert_eq!(e.class, ErrorClass::Permanent);
        assert!(e.to_string().contains("AWS_SECRET_ACCESS_KEY"), "{e}");
        assert!(e.to_string().contains("obj"), "{e}");
    }
}
