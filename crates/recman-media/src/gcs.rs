//! Google Cloud Storage: `gs://BUCKET/PREFIX`, through the same driver as S3 ([`S3Media`]).
//! Reads, listings and removals go through object_store's GoogleCloudStorage client; writes
//! go through GCS's JSON upload API ([`crate::s3`]'s resumable writer): one upload request
//! for an object smaller than a part, otherwise a resumable upload session whose object
//! appears only when its last chunk is accepted, so an object is whole or absent.
//!
//! Credentials come the usual ways: GOOGLE_APPLICATION_CREDENTIALS (a service account key
//! or a gcloud user's application default credentials), GOOGLE_SERVICE_ACCOUNT (a service
//! account key file), the metadata server of a Google Cloud host, or recman's own
//! `credentials-file` key of the config file's `[gcs]` section (RECMAN_GCS_CREDENTIALS).
//! STORAGE_EMULATOR_HOST, the variable Google's client libraries honour, points recman at an
//! emulator and sends no credentials.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use object_store::StaticCredentialProvider;
use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder};

use crate::error::MediaError;
use crate::s3::{Cloud, S3Config, S3Media, client_settings};

/// The service's address, object_store's default too.
pub const DEFAULT_ENDPOINT: &str = "https://storage.googleapis.com";
/// GCS's granularity of resumable upload chunks: every chunk but the last is a multiple.
pub const CHUNK_GRANULE: usize = 256 << 10;

const URL_HINT: &str = "write the repository as gs://BUCKET or gs://BUCKET/PREFIX; credentials go in GOOGLE_APPLICATION_CREDENTIALS (a key file), not in the url";
const KEYS_HINT: &str = "known keys: credentials-file, endpoint, anonymous, part-size, max-retries, retry-timeout, connect-timeout, request-timeout, read-ahead";

/// Where and how to reach a bucket. Only the path of a key file is kept, never its contents.
#[derive(Clone)]
pub struct GcsConfig {
    pub bucket: String,
    /// A service account key file (JSON), used instead of the ambient credentials.
    pub credentials_file: Option<PathBuf>,
    /// The service's base URL; None for Google's ("https://storage.googleapis.com").
    pub endpoint: Option<String>,
    /// Send no credentials at all: an emulator, or a bucket open to everyone.
    pub anonymous: bool,
    /// The prefix, part (chunk) size, retries, timeouts and read-ahead, shared with the S3
    /// driver (its bucket is this bucket).
    pub tuning: S3Config,
}

impl GcsConfig {
    pub fn new(bucket: &str, prefix: &str) -> GcsConfig {
        GcsConfig {
            bucket: bucket.to_string(),
            credentials_file: None,
            endpoint: None,
            anonymous: false,
            tuning: S3Config::new(bucket, prefix),
        }
    }

    /// Parses "gs://bucket" or "gs://bucket/some/prefix".
    pub fn from_url(url: &str) -> Result<GcsConfig, MediaError> {
        let shown = if url.contains('@') { "gs://…" } else { url };
        let bad = |why: &str| {
            MediaError::permanent("gcs", shown, &format!("invalid repository url: {why}"))
                .with_op("parse")
                .with_hint(URL_HINT)
        };
        let rest = url
            .strip_prefix("gs://")
            .ok_or_else(|| bad("it must start with gs://"))?;
        if rest.contains(['@', '?', '#']) {
            return Err(bad("credentials, queries and fragments are not allowed"));
        }
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if !bucket_name_ok(bucket) {
            return Err(bad(
                "a bucket name has 3 to 63 lowercase letters, digits, '-' or '_' (222 with dots), starting and ending with a letter or digit",
            ));
        }
        let prefix = prefix.trim_end_matches('/');
        if !crate::s3::prefix_is_safe(prefix) {
            return Err(bad("the prefix has an empty, '.' or '..' part"));
        }
        Ok(GcsConfig::new(bucket, prefix))
    }

    /// "gs://bucket/prefix", for messages and the catalog.
    pub fn url(&self) -> String {
        let prefix = &self.tuning.prefix;
        if prefix.is_empty() {
            format!("gs://{}", self.bucket)
        } else {
            format!("gs://{}/{prefix}", self.bucket)
        }
    }

    /// Overlays recman's GCS variables and STORAGE_EMULATOR_HOST; fails on an invalid value.
    /// The GOOGLE_* variables are read by object_store itself when the driver is opened.
    pub fn try_apply_env(&mut self) -> Result<(), MediaError> {
        self.apply_env_from(|k| std::env::var(k).ok())
    }

    /// The same, reading variables through `get`.
    pub fn apply_env_from(
        &mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<(), MediaError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let pairs = [
            ("RECMAN_GCS_CREDENTIALS", "credentials-file"),
            ("RECMAN_GCS_ENDPOINT", "endpoint"),
            ("RECMAN_GCS_PART_SIZE", "part-size"),
        ];
        for (var, key) in pairs {
            if let Some(v) = get(var) {
                self.set(key, &v)
                    .map_err(|e| e.with_op(&format!("read {var}")))?;
            }
        }
        // Google's client libraries take "host:port" (or a URL) here and then send no
        // credentials; an explicit endpoint wins.
        if self.endpoint.is_none()
            && let Some(host) = get("STORAGE_EMULATOR_HOST")
        {
            let url = if host.contains("://") {
                host
            } else {
                format!("http://{host}")
            };
            self.set("endpoint", &url)
                .map_err(|e| e.with_op("read STORAGE_EMULATOR_HOST"))?;
            self.anonymous = true;
        }
        Ok(())
    }

    /// Applies one key of the `[gcs]` section of the config file.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), MediaError> {
        let key = key.trim().to_ascii_lowercase().replace('_', "-");
        let v = value.trim();
        // A pasted key is a secret: it is never repeated.
        let shown = if v.starts_with('{') {
            "…".to_string()
        } else {
            format!("{v:?}")
        };
        let bad = |why: &str| {
            MediaError::permanent("gcs", &key, &format!("invalid value {shown}: {why}"))
                .with_op("set option")
        };
        match key.as_str() {
            "credentials-file" => {
                if v.is_empty() || v.starts_with('{') {
                    return Err(bad("expected the path of a service account key file")
                        .with_hint("name the JSON file, do not paste its contents"));
                }
                self.credentials_file = Some(PathBuf::from(v));
            }
            "endpoint" => {
                let ep = v.trim_end_matches('/');
                if !(ep.starts_with("http://") || ep.starts_with("https://")) || ep.contains('@') {
                    return Err(bad("expected http://HOST[:PORT] or https://HOST"));
                }
                self.tuning.allow_http = ep.starts_with("http://");
                self.endpoint = Some(ep.to_string());
            }
            "anonymous" => {
                self.anonymous = match v.to_ascii_lowercase().as_str() {
                    "true" | "yes" | "on" | "1" => true,
                    "false" | "no" | "off" | "0" => false,
                    _ => return Err(bad("expected true or false")),
                };
            }
            "part-size" | "max-retries" | "retry-timeout" | "connect-timeout"
            | "request-timeout" | "read-ahead" | "allow-http" => {
                self.tuning
                    .set(&key, v)
                    .map_err(|e| MediaError::permanent("gcs", &key, &e.to_string()))?;
            }
            _ => {
                return Err(MediaError::permanent("gcs", &key, "unknown option")
                    .with_op("set option")
                    .with_hint(KEYS_HINT));
            }
        }
        Ok(())
    }

    /// The base URL both clients use.
    pub fn base_url(&self) -> String {
        self.endpoint
            .clone()
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
    }

    /// The chunk size must be a multiple of GCS's granule, or the service refuses the chunk.
    fn validate(&self) -> Result<(), MediaError> {
        self.tuning.validate()?;
        if !self.tuning.part_size.is_multiple_of(CHUNK_GRANULE) {
            return Err(MediaError::permanent(
                "gcs",
                "part-size",
                &format!(
                    "invalid value {}: a resumable upload's chunks are multiples of 256K",
                    self.tuning.part_size
                ),
            )
            .with_op("set up")
            .with_hint("use a size like 8M, 16M or 64M"));
        }
        Ok(())
    }
}

/// GCS's naming rule, without the domain-name checks of dotted names.
fn bucket_name_ok(b: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let max = if b.contains('.') { 222 } else { 63 };
    (3..=max).contains(&b.len())
        && b.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
        && edge_ok(b.chars().next())
        && edge_ok(b.chars().last())
        && b.split('.')
            .all(|part| !part.is_empty() && part.len() <= 63)
}

impl fmt::Debug for GcsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GcsConfig")
            .field("bucket", &self.bucket)
            .field("prefix", &self.tuning.prefix)
            .field("credentials_file", &self.credentials_file)
            .field("endpoint", &self.endpoint)
            .field("anonymous", &self.anonymous)
            .finish()
    }
}

/// A driver for `cfg`; no request is made until the first operation.
pub fn open(cfg: GcsConfig) -> Result<S3Media, MediaError> {
    let device = cfg.url();
    let setup = |e: &dyn fmt::Display| {
        MediaError::permanent(&device, "", &format!("invalid gcs settings: {e}"))
            .with_op("set up")
            .with_hint("set GOOGLE_APPLICATION_CREDENTIALS to a service account key file (or credentials-file in the [gcs] section of the config file), or STORAGE_EMULATOR_HOST for an emulator")
    };
    cfg.validate()?;
    let mut tuning = cfg.tuning.clone();
    let base = cfg.base_url();
    tuning.allow_http |= base.starts_with("http://");
    let (retry, client) = client_settings(&tuning);
    // The GOOGLE_* variables (application default credentials, a service account key) reach
    // object_store's own credential chain; what recman was told overrides them.
    let mut b = GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(&cfg.bucket)
        .with_base_url(&base)
        .with_retry(retry)
        .with_http_connector(crate::meter::Metered)
        .with_client_options(client.clone())
        .with_skip_signature(cfg.anonymous);
    if let Some(path) = &cfg.credentials_file {
        b = b.with_service_account_path(path.to_string_lossy());
    }
    if cfg.anonymous {
        // object_store skips the signature of reads only; its deletes would still ask the
        // ambient chain, down to a cloud host's metadata server. An empty token asks nobody.
        b = b.with_credentials(Arc::new(StaticCredentialProvider::new(GcpCredential {
            bearer: String::new(),
        })));
    }
    // Builder errors name settings and files, never a key's contents.
    let store = b.build().map_err(|e| setup(&e))?;
    let creds = (!cfg.anonymous).then(|| Arc::clone(store.credentials()));
    let uploader = crate::s3::GcsUploader::new(&tuning, &client, creds, &base, &cfg.bucket)
        .map_err(|e| setup(&e))?;
    S3Media::with_store(Arc::new(store), Cloud::Gcs, device, tuning, None)
        .map(|m| m.with_gcs_uploader(uploader))
}
