//! Settings of the S3 driver, from the repository URL, the environment and the config file.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::MediaError;

/// S3 refuses smaller parts (except the last one), so a smaller setting could never work.
pub const MIN_PART_SIZE: usize = 5 << 20;
/// S3's largest part.
pub const MAX_PART_SIZE: usize = 5 << 30;
/// S3's largest part count; with the part size it bounds the size of one object.
pub const MAX_PARTS: usize = 10_000;

const URL_HINT: &str = "write the repository as s3://BUCKET or s3://BUCKET/PREFIX, e.g. s3://backups/pg/main; keys go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, not in the url";
const KEYS_HINT: &str = "known keys: endpoint, ca-file, region, access-key-id, secret-access-key, session-token, part-size, parts-in-flight, virtual-hosted, allow-http, max-retries, retry-timeout, connect-timeout, request-timeout, read-ahead";

/// Where and how to reach an S3-compatible store. Secrets are kept here only in memory: the
/// `Debug` output and [`S3Config::url`] leave them out, and nothing here is ever written down.
#[derive(Clone)]
pub struct S3Config {
    pub bucket: String,
    /// Key prefix of the repository, without leading or trailing '/' ("" for the bucket root).
    pub prefix: String,
    /// "https://host:port" of a non-AWS store; None for AWS itself.
    pub endpoint: Option<String>,
    /// PEM file of CAs trusted for an https endpoint, besides the system's (a private CA).
    pub ca_file: Option<PathBuf>,
    pub region: String,
    /// Without keys, object_store falls back to the instance or container role of the host.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// Bucket in the host name (bucket.host) rather than in the path (host/bucket).
    pub virtual_hosted: bool,
    pub allow_http: bool,
    /// Size of one multipart part, also the size below which an object is one PUT.
    pub part_size: usize,
    /// Parts uploading at once per writer; a writer holds at most this many parts plus one.
    pub parts_in_flight: usize,
    pub max_retries: usize,
    /// No retry starts after this long since the first attempt of a request.
    pub retry_timeout: Duration,
    pub connect_timeout: Duration,
    /// Limit of one whole request, body included.
    pub request_timeout: Duration,
    /// Bytes fetched per ranged GET when reading.
    pub read_ahead: usize,
    /// An invalid environment value seen by [`S3Config::apply_env`], reported by `validate`.
    deferred: Option<MediaError>,
}

impl S3Config {
    /// Defaults for `bucket` and `prefix`: AWS region us-east-1, path-style requests, 16 MiB
    /// parts, 4 in flight, 10 retries within 3 minutes.
    pub fn new(bucket: &str, prefix: &str) -> S3Config {
        S3Config {
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
            endpoint: None,
            ca_file: None,
            region: "us-east-1".to_string(),
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            virtual_hosted: false,
            allow_http: false,
            part_size: 16 << 20,
            parts_in_flight: 4,
            max_retries: 10,
            retry_timeout: Duration::from_secs(180),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
            read_ahead: 8 << 20,
            deferred: None,
        }
    }

    /// Parses "s3://bucket" or "s3://bucket/some/prefix".
    pub fn from_url(url: &str) -> Result<S3Config, MediaError> {
        // A url carrying credentials must not be repeated in an error message.
        let shown = if url.contains('@') { "s3://…" } else { url };
        let bad = |why: &str| {
            MediaError::permanent("s3", shown, &format!("invalid repository url: {why}"))
                .with_op("parse")
                .with_hint(URL_HINT)
        };
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| bad("it must start with s3://"))?;
        if rest.contains(['@', '?', '#']) {
            return Err(bad("credentials, queries and fragments are not allowed"));
        }
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("the bucket name is missing"));
        }
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !bucket_ok {
            return Err(bad(
                "a bucket name has 3 to 63 letters, digits, '.', '-' or '_'",
            ));
        }
        let prefix = prefix.trim_end_matches('/');
        if !prefix_is_safe(prefix) {
            return Err(bad("the prefix has an empty, '.' or '..' part"));
        }
        Ok(S3Config::new(bucket, prefix))
    }

    /// "s3://bucket/prefix", for messages and the catalog.
    pub fn url(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }

    /// Overlays the AWS variables and recman's own. An invalid value is reported later, by
    /// `S3Media::new`, so callers can chain this without handling an error here.
    pub fn apply_env(&mut self) {
        if let Err(e) = self.try_apply_env() {
            self.deferred = Some(e);
        }
    }

    /// [`S3Config::apply_env`], failing at once on an invalid value.
    pub fn try_apply_env(&mut self) -> Result<(), MediaError> {
        self.apply_env_from(|k| std::env::var(k).ok())
    }

    /// The same, reading variables through `get` (tests cannot set the environment safely).
    pub fn apply_env_from(
        &mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<(), MediaError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let first = |keys: &[&'static str]| keys.iter().find_map(|&k| get(k).map(|v| (k, v)));
        for (var, key) in [
            ("AWS_ACCESS_KEY_ID", "access-key-id"),
            ("AWS_SECRET_ACCESS_KEY", "secret-access-key"),
            ("AWS_SESSION_TOKEN", "session-token"),
            ("RECMAN_S3_PART_SIZE", "part-size"),
            ("RECMAN_S3_PARTS_IN_FLIGHT", "parts-in-flight"),
            ("RECMAN_S3_VIRTUAL_HOSTED", "virtual-hosted"),
        ] {
            if let Some(v) = get(var) {
                self.set(key, &v)
                    .map_err(|e| e.with_op(&format!("read {var}")))?;
            }
        }
        if let Some((var, v)) = first(&["AWS_REGION", "AWS_DEFAULT_REGION"]) {
            self.set("region", &v)
                .map_err(|e| e.with_op(&format!("read {var}")))?;
        }
        if let Some((var, v)) = first(&["RECMAN_S3_CA_FILE", "AWS_CA_BUNDLE"]) {
            self.set("ca-file", &v)
                .map_err(|e| e.with_op(&format!("read {var}")))?;
        }
        // The most specific variable wins.
        if let Some((var, v)) = first(&[
            "RECMAN_S3_ENDPOINT",
            "AWS_ENDPOINT_URL_S3",
            "AWS_ENDPOINT_URL",
        ]) {
            self.set("endpoint", &v)
                .map_err(|e| e.with_op(&format!("read {var}")))?;
        }
        Ok(())
    }

    /// Applies one key of the `[s3]` section of the config file ("part-size", "16M").
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), MediaError> {
        let key = key.trim().to_ascii_lowercase().replace('_', "-");
        let v = value.trim();
        let secret = matches!(key.as_str(), "secret-access-key" | "session-token");
        let bad = |why: &str| {
            let shown = if secret {
                "…".to_string()
            } else {
                format!("{v:?}")
            };
            MediaError::permanent("s3", &key, &format!("invalid value {shown}: {why}"))
                .with_op("set option")
        };
        let int = || {
            v.parse::<usize>()
                .map_err(|_| bad("expected a whole number"))
        };
        let secs = || match v.trim_end_matches('s').parse::<f64>() {
            Ok(s) if s > 0.0 && s.is_finite() => Ok(Duration::from_secs_f64(s)),
            _ => Err(bad("expected a number of seconds above 0")),
        };
        let size = || {
            crate::size::parse_size(v)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad("expected a size such as 16M, 512K or 1G"))
        };
        match key.as_str() {
            "endpoint" => {
                let ep = v.trim_end_matches('/');
                if !(ep.starts_with("http://") || ep.starts_with("https://")) || ep.contains('@') {
                    return Err(bad("expected http://HOST[:PORT] or https://HOST[:PORT]")
                        .with_hint("credentials belong in access-key-id and secret-access-key"));
                }
                self.allow_http = ep.starts_with("http://");
                self.endpoint = Some(ep.to_string());
            }
            "ca-file" => self.ca_file = Some(PathBuf::from(v)),
            "region" => self.region = v.to_string(),
            "access-key-id" => self.access_key_id = Some(v.to_string()),
            "secret-access-key" => self.secret_access_key = Some(v.to_string()),
            "session-token" => self.session_token = Some(v.to_string()),
            "part-size" => self.part_size = size()?,
            "parts-in-flight" => self.parts_in_flight = int()?,
            "read-ahead" => self.read_ahead = size()?,
            "max-retries" => self.max_retries = int()?,
            "retry-timeout" => self.retry_timeout = secs()?,
            "connect-timeout" => self.connect_timeout = secs()?,
            "request-timeout" => self.request_timeout = secs()?,
            "virtual-hosted" | "allow-http" => {
                let b = match v.to_ascii_lowercase().as_str() {
                    "true" | "yes" | "on" | "1" => true,
                    "false" | "no" | "off" | "0" => false,
                    _ => return Err(bad("expected true or false")),
                };
                if key == "allow-http" {
                    self.allow_http = b;
                } else {
                    self.virtual_hosted = b;
                }
            }
            _ => {
                return Err(MediaError::permanent("s3", &key, "unknown option")
                    .with_op("set option")
                    .with_hint(KEYS_HINT));
            }
        }
        self.validate()
    }

    /// Checks the limits S3 imposes and reports a value `apply_env` could not use.
    pub fn validate(&self) -> Result<(), MediaError> {
        if let Some(e) = &self.deferred {
            return Err(e.clone());
        }
        let bad = |key: &str, why: &str| {
            Err(MediaError::permanent("s3", key, why).with_op("check option"))
        };
        if self.bucket.is_empty() {
            return bad("bucket", "no bucket given");
        }
        if !(MIN_PART_SIZE..=MAX_PART_SIZE).contains(&self.part_size) {
            return bad("part-size", "must be between 5M and 5G, the limits of S3");
        }
        if !(1..=256).contains(&self.parts_in_flight) {
            return bad("parts-in-flight", "must be between 1 and 256");
        }
        if self.read_ahead == 0 {
            return bad("read-ahead", "must be above 0");
        }
        if let Some(ep) = &self.endpoint
            && ep.starts_with("http://")
            && !self.allow_http
        {
            return Err(
                MediaError::permanent("s3", "endpoint", "plain http is not allowed")
                    .with_op("check option")
                    .with_hint("set allow-http = true, or use an https:// endpoint"),
            );
        }
        Ok(())
    }
}

/// Says whether a secret is set without showing it.
struct Redacted<'a>(&'a Option<String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "<set>" } else { "<unset>" })
    }
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint", &self.endpoint)
            .field("ca_file", &self.ca_file)
            .field("region", &self.region)
            .field("access_key_id", &Redacted(&self.access_key_id))
            .field("secret_access_key", &Redacted(&self.secret_access_key))
            .field("session_token", &Redacted(&self.session_token))
            .field("virtual_hosted", &self.virtual_hosted)
            .field("allow_http", &self.allow_http)
            .field("part_size", &self.part_size)
            .field("parts_in_flight", &self.parts_in_flight)
            .field("max_retries", &self.max_retries)
            .field("retry_timeout", &self.retry_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("read_ahead", &self.read_ahead)
            .finish()
    }
}

/// Whether an object-store prefix is one the repository may live under: its parts are not
/// empty, `.` or `..`, and hold no control character (S3 and Azure alike).
pub(crate) fn prefix_is_safe(prefix: &str) -> bool {
    prefix.is_empty()
        || prefix
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.chars().any(|ch| ch.is_control()))
}
