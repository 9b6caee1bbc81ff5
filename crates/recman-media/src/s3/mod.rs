//! The S3 driver: objects in a bucket of any S3-compatible store, under a key prefix, through
//! object_store's AmazonS3 client.
//!
//! Channel threads call in synchronously; each call becomes a task on the driver's own tokio
//! runtime and the thread waits for its result, so any number of threads can share one
//! [`S3Media`]. Atomicity comes from S3 itself: a PUT or a completed multipart upload
//! appears whole, and an aborted upload leaves nothing.

pub mod admin;
mod classify;
mod config;
pub(crate) use config::prefix_is_safe;
mod immutable;
mod lock;
mod reader;
mod resumable;
mod signed;
mod versions;
mod writer;

pub use crate::retention::{LockMode, Retention};
pub use admin::S3Admin;
pub use config::{MAX_PART_SIZE, MAX_PARTS, MIN_PART_SIZE, S3Config};
pub use resumable::GcsUploader;
pub use versions::Version;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};
use tokio::runtime::Runtime;

use crate::error::{ErrorClass, MediaError};
use crate::media::{Capabilities, Media, MediaReader, MediaWriter, ObjectInfo};
use classify::{Failure, media_error};

/// The standard AWS variables for web identity (EKS), ECS task and EKS pod credentials.
const ROLE_VARS: [&str; 7] = [
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
];

/// What the driver needs of an object store: objects and explicit multipart uploads. S3 and
/// Azure Blob Storage (blocks and a block list) both provide them; on Google Cloud Storage
/// writes go through [`GcsUploader`] instead.
pub(crate) trait Backend: ObjectStore + MultipartStore {}

impl<T: ObjectStore + MultipartStore> Backend for T {}

/// Which service is behind the driver: it decides the hints of errors and whether an upload
/// can carry the metadata that proves a lost completion went through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cloud {
    S3,
    Azure,
    Gcs,
}

/// Objects in an S3 bucket (or an Azure container, see [`crate::azure`], or a Google Cloud
/// Storage bucket, see [`crate::gcs`]) under a prefix.
pub struct S3Media {
    ctx: Arc<Ctx>,
    /// Set when the bucket is read as it was at a time (`--repo-as-of`): every read goes to
    /// the version pinned here, and nothing is written.
    as_of: Option<Arc<AsOfView>>,
}

/// The repository's objects as they were at `at`, each pinned to one version.
pub(crate) struct AsOfView {
    at: chrono::DateTime<chrono::Utc>,
    /// By object name (the key without the repository's prefix).
    objects: BTreeMap<String, versions::Pinned>,
}

/// What the driver, its writers and its readers share. Tasks on the runtime get clones of
/// `store`, never of the whole context, so the runtime is never dropped from inside itself.
pub(crate) struct Ctx {
    rt: Runtime,
    store: Arc<dyn Backend>,
    cloud: Cloud,
    device: String,
    prefix: String,
    cfg: S3Config,
    retry: RetryPolicy,
    /// The calls object_store does not make (Object Lock, versions); None for Azure.
    signed: Option<Arc<signed::Signed>>,
    /// GCS's upload API, through which every write to a GCS bucket goes; None elsewhere.
    gcs: Option<Arc<GcsUploader>>,
    /// In an immutable repository, the retention every object written gets; None writes
    /// plain objects.
    write_lock: Mutex<Option<Retention>>,
}

/// The driver's own retry loop, for failures object_store does not retry itself (a response
/// body cut after the status arrived).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    max_retries: usize,
    timeout: Duration,
}

impl RetryPolicy {
    pub(crate) fn of(cfg: &S3Config) -> RetryPolicy {
        RetryPolicy {
            max_retries: cfg.max_retries,
            timeout: cfg.retry_timeout,
        }
    }

    pub(crate) async fn run<T, F, Fut>(self, op: F) -> Result<T, object_store::Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, object_store::Error>>,
    {
        self.run_while(op, |e| Failure::of(e).retry_outside()).await
    }

    /// Runs `op` again, with a doubling pause up to 5 s, while `again` says its failure allows
    /// it and the policy's count and time allow another attempt.
    pub(crate) async fn run_while<T, E, F, Fut>(
        self,
        mut op: F,
        again: impl Fn(&E) -> bool,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let start = Instant::now();
        let mut delay = Duration::from_millis(50);
        let mut attempt = 0;
        loop {
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) => {
                    if !self.allows(attempt, start) || !again(&e) {
                        return Err(e);
                    }
                    attempt += 1;
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    pub(crate) fn allows(self, attempt: usize, start: Instant) -> bool {
        attempt < self.max_retries && start.elapsed() < self.timeout
    }
}

impl Ctx {
    /// Runs `fut` on the runtime and waits for it. Spawning rather than `Runtime::block_on`
    /// keeps this usable from any thread, including one that is inside another runtime.
    pub(crate) fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> T {
        wait(self.rt.spawn(fut))
    }

    pub(crate) fn spawn<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        self.rt.spawn(fut)
    }

    fn key(&self, name: &str) -> Result<Path, MediaError> {
        crate::media::check_name(&self.device, name)?;
        Path::parse(self.full_key(name))
            .map_err(|_| MediaError::permanent(&self.device, name, "the name cannot be an s3 key"))
    }

    /// The bucket key of object `name`.
    pub(crate) fn full_key(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.prefix)
        }
    }

    /// The retention new objects get, when the repository is immutable.
    pub(crate) fn write_lock(&self) -> Option<Retention> {
        *self.write_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn err(&self, name: &str, op: &str, e: &object_store::Error) -> MediaError {
        let err = media_error(&self.device, name, op, e);
        match self.cloud {
            Cloud::S3 => err,
            Cloud::Azure => classify::azure_hints(err),
            Cloud::Gcs => classify::gcs_hints(err),
        }
    }
}

/// Waits for a task from outside the runtime; a panic in the task goes on in the caller.
pub(crate) fn wait<T>(h: tokio::task::JoinHandle<T>) -> T {
    match futures::executor::block_on(h) {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Tasks are only cancelled by the runtime's shutdown, which needs the Ctx gone, and
        // every waiter holds the Ctx.
        Err(_) => unreachable!("an s3 task was cancelled while its driver was alive"),
    }
}

impl S3Media {
    /// A driver for `cfg`; no request is made until the first operation.
    pub fn new(cfg: S3Config) -> Result<S3Media, MediaError> {
        cfg.validate()?;
        let device = cfg.url();
        let setup = |what: &str, e: &dyn fmt::Display| {
            MediaError::permanent(&device, "", &format!("{what}: {e}")).with_op("set up")
        };
        let (retry, mut client) = client_settings(&cfg);
        if let Some(file) = &cfg.ca_file {
            for cert in ca_bundle(&device, file)? {
                client = client.with_root_certificate(cert);
            }
        }
        let mut b = AmazonS3Builder::new()
            .with_bucket_name(&cfg.bucket)
            .with_region(&cfg.region)
            .with_virtual_hosted_style_request(cfg.virtual_hosted)
            .with_allow_http(cfg.allow_http)
            .with_retry(retry)
            .with_http_connector(crate::meter::Metered)
            .with_client_options(client.clone());
        if let Some(ep) = &cfg.endpoint {
            b = b.with_endpoint(bucket_endpoint(ep, &cfg.bucket, cfg.virtual_hosted));
        }
        if let Some(v) = &cfg.access_key_id {
            b = b.with_access_key_id(v);
        }
        if let Some(v) = &cfg.secret_access_key {
            b = b.with_secret_access_key(v);
        }
        if let Some(v) = &cfg.session_token {
            b = b.with_token(v);
        }
        if cfg.access_key_id.is_none() {
            // Without static keys the host's role supplies credentials; these variables only
            // point at where the role's credentials come from and hold no secret.
            for var in ROLE_VARS {
                let key = var.to_ascii_lowercase().parse::<AmazonS3ConfigKey>();
                if let (Ok(v), Ok(key)) = (std::env::var(var), key) {
                    b = b.with_config(key, v);
                }
            }
        }
        // Builder errors name settings, never their secret values.
        let store = b.build().map_err(|e| setup("invalid s3 settings", &e))?;
        let signed = signed::Signed::new(&cfg, &client, Arc::clone(store.credentials()))
            .map_err(|e| setup("cannot set up the http client", &e))?;
        S3Media::with_store(Arc::new(store), Cloud::S3, device, cfg, Some(signed))
    }

    /// The driver over a built store; `cfg` gives the prefix, part sizes and retries.
    pub(crate) fn with_store(
        store: Arc<dyn Backend>,
        cloud: Cloud,
        device: String,
        cfg: S3Config,
        signed: Option<signed::Signed>,
    ) -> Result<S3Media, MediaError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("recman-s3")
            .enable_all()
            .build()
            .map_err(|e| {
                MediaError::permanent(&device, "", &format!("cannot start the i/o runtime: {e}"))
                    .with_op("set up")
            })?;
        let retry = RetryPolicy::of(&cfg);
        Ok(S3Media {
            ctx: Arc::new(Ctx {
                rt,
                store,
                cloud,
                device,
                prefix: cfg.prefix.clone(),
                cfg,
                retry,
                signed: signed.map(Arc::new),
                gcs: None,
                write_lock: Mutex::new(None),
            }),
            as_of: None,
        })
    }

    /// The same driver writing through GCS's upload API; called before the driver is shared.
    pub(crate) fn with_gcs_uploader(mut self, up: GcsUploader) -> S3Media {
        match Arc::get_mut(&mut self.ctx) {
            Some(ctx) => ctx.gcs = Some(Arc::new(up)),
            None => unreachable!("with_gcs_uploader is called on a new driver"),
        }
        self
    }

    /// Checks the bucket and the credentials with one small listing, so a misconfigured
    /// repository fails before a backup starts rather than at its first piece.
    pub fn check(&self) -> Result<(), MediaError> {
        let c = &self.ctx;
        let store = Arc::clone(&c.store);
        let prefix = Path::parse(&c.prefix).unwrap_or_default();
        let err = match c.block(async move {
            let mut s = store.list(Some(&prefix));
            s.try_next().await.map(|_| ())
        }) {
            Ok(()) => return Ok(()),
            Err(e) => c.err("", "check", &e),
        };
        // A listing of a missing GCS bucket is a 404 without a code on some implementations
        // (a 500 on the emulator); the bucket itself says whether it is there.
        match &c.gcs {
            Some(up)
                if c.block({
                    let up = Arc::clone(up);
                    async move { up.bucket_missing().await }
                }) =>
            {
                Err(resumable::no_bucket(&c.device, "", "check"))
            }
            _ => Err(err),
        }
    }

    pub fn config(&self) -> &S3Config {
        &self.ctx.cfg
    }
}

/// The certificates of a PEM CA bundle, trusted besides the system's.
fn ca_bundle(
    device: &str,
    file: &std::path::Path,
) -> Result<Vec<object_store::Certificate>, MediaError> {
    let bad = |why: String| {
        MediaError::permanent(device, "", &format!("ca file {}: {why}", file.display()))
            .with_op("set up")
            .with_hint("ca-file (or RECMAN_S3_CA_FILE, AWS_CA_BUNDLE) names a PEM file holding the CA certificates that sign the store's https certificate")
    };
    let pem = std::fs::read(file).map_err(|e| bad(e.to_string()))?;
    let certs = object_store::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("it holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// object_store's retry settings and HTTP client options for `cfg`'s limits.
pub(crate) fn client_settings(cfg: &S3Config) -> (RetryConfig, ClientOptions) {
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: cfg.max_retries,
        retry_timeout: cfg.retry_timeout,
    };
    let client = ClientOptions::new()
        .with_allow_http(cfg.allow_http)
        .with_connect_timeout(cfg.connect_timeout)
        .with_timeout(cfg.request_timeout);
    (retry, client)
}

/// In virtual-hosted style object_store expects the endpoint to name the bucket already;
/// users give the plain endpoint, as for path style.
pub(crate) fn bucket_endpoint(ep: &str, bucket: &str, virtual_hosted: bool) -> String {
    let ep = ep.trim_end_matches('/');
    if !virtual_hosted {
        return ep.to_string();
    }
    match ep.split_once("://") {
        Some((scheme, host)) if !host.starts_with(&format!("{bucket}.")) => {
            format!("{scheme}://{bucket}.{host}")
        }
        _ => ep.to_string(),
    }
}

impl fmt::Debug for S3Media {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Media")
            .field("cfg", &self.ctx.cfg)
            .finish()
    }
}

impl Media for S3Media {
    fn describe(&self) -> String {
        self.ctx.device.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::RANDOM_ACCESS
    }

    fn object_lock(&self) -> Option<&dyn crate::media::ObjectLock> {
        self.ctx
            .signed
            .as_ref()
            .map(|_| self as &dyn crate::media::ObjectLock)
    }

    fn create(&self, name: &str) -> Result<Box<dyn MediaWriter>, MediaError> {
        let path = self.ctx.key(name)?;
        self.refuse_write(name, "create")?;
        if self.ctx.write_lock().is_some() && self.head(&path, name, "create")?.is_some() {
            return Err(immutable::overwrite_refused(&self.ctx.device, name));
        }
        if let Some(up) = &self.ctx.gcs {
            return Ok(Box::new(resumable::GcsWriter::new(
                Arc::clone(&self.ctx),
                Arc::clone(up),
                path.to_string(),
                name,
            )));
        }
        Ok(Box::new(writer::S3Writer::new(
            Arc::clone(&self.ctx),
            path,
            name,
        )))
    }

    fn open(&self, name: &str) -> Result<Box<dyn MediaReader>, MediaError> {
        let path = self.ctx.key(name)?;
        if let Some(view) = &self.as_of {
            let pin = view
                .objects
                .get(name)
                .ok_or_else(|| MediaError::not_found(&self.ctx.device, name))?;
            return Ok(Box::new(reader::S3Reader::new(
                Arc::clone(&self.ctx),
                path,
                name,
                pin.size,
                reader::Pin::Version(pin.version_id.clone()),
            )));
        }
        let meta = self
            .head(&path, name, "open")?
            .ok_or_else(|| MediaError::not_found(&self.ctx.device, name))?;
        Ok(Box::new(reader::S3Reader::new(
            Arc::clone(&self.ctx),
            path,
            name,
            meta.size,
            reader::Pin::ETag(meta.e_tag),
        )))
    }

    fn stat(&self, name: &str) -> Result<Option<u64>, MediaError> {
        let path = self.ctx.key(name)?;
        if let Some(view) = &self.as_of {
            return Ok(view.objects.get(name).map(|p| p.size));
        }
        Ok(self.head(&path, name, "stat")?.map(|m| m.size))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, MediaError> {
        if let Some(view) = &self.as_of {
            return Ok(view.list(prefix));
        }
        let c = &self.ctx;
        // S3 lists by key prefix too, but object_store only by directory: list the directory
        // the prefix points into and filter.
        let dir = prefix.rfind('/').map_or("", |i| &prefix[..i]);
        let full = match (c.prefix.is_empty(), dir.is_empty()) {
            (true, _) => dir.to_string(),
            (false, true) => c.prefix.clone(),
            (false, false) => format!("{}/{dir}", c.prefix),
        };
        let Ok(dir_path) = Path::parse(&full) else {
            // No valid name lives under such a directory.
            return Ok(Vec::new());
        };
        let store = Arc::clone(&c.store);
        let metas = c
            .block(c.retry.run(move || {
                let s = store.list(Some(&dir_path));
                s.try_collect::<Vec<_>>()
            }))
            .map_err(|e| c.err(prefix, "list", &e))?;
        let strip = if c.prefix.is_empty() {
            0
        } else {
            c.prefix.len() + 1
        };
        let mut out: Vec<ObjectInfo> = metas
            .into_iter()
            .filter_map(|m| {
                let key: &str = m.location.as_ref();
                let name = key.get(strip..)?;
                name.starts_with(prefix).then(|| ObjectInfo {
                    name: name.to_string(),
                    size: m.size,
                })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn remove(&self, name: &str) -> Result<bool, MediaError> {
        let c = &self.ctx;
        let path = c.key(name)?;
        self.refuse_write(name, "remove")?;
        if c.write_lock().is_some() {
            return self.remove_versions(name);
        }
        // S3 deletes a missing key without complaint; a HEAD tells whether there was one.
        if self.head(&path, name, "remove")?.is_none() {
            return Ok(false);
        }
        let store = Arc::clone(&c.store);
        c.block(c.retry.run(move || {
            let (store, path) = (Arc::clone(&store), path.clone());
            async move { store.delete(&path).await }
        }))
        .map_err(|e| c.err(name, "remove", &e))?;
        Ok(true)
    }
}

impl S3Media {
    fn head(
        &self,
        path: &Path,
        name: &str,
        op: &str,
    ) -> Result<Option<object_store::ObjectMeta>, MediaError> {
        let c = &self.ctx;
        let (store, path) = (Arc::clone(&c.store), path.clone());
        let r = c.block(c.retry.run(move || {
            let (store, path) = (Arc::clone(&store), path.clone());
            async move { store.head(&path).await }
        }));
        match r {
            Ok(m) => Ok(Some(m)),
            Err(e) => {
                let err = c.err(name, op, &e);
                if err.class == ErrorClass::NotFound {
                    Ok(None)
                } else {
                    Err(err)
                }
            }
        }
    }
}
