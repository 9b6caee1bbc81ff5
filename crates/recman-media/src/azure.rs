//! Azure Blob Storage: `azure://CONTAINER/PREFIX`, through object_store's MicrosoftAzure
//! client and the same driver as S3 ([`S3Media`]): a piece is a block blob, its parts are
//! blocks, and the commit is the block list, so a blob appears whole or not at all.
//!
//! Settings come from the usual variables (AZURE_STORAGE_ACCOUNT_NAME,
//! AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_USE_EMULATOR, AZURE_STORAGE_ENDPOINT and the other
//! AZURE_* credentials object_store knows) and the config file's `[azure]` section, which wins.

use std::fmt;
use std::sync::Arc;

use object_store::azure::MicrosoftAzureBuilder;

use crate::error::MediaError;
use crate::s3::{Cloud, S3Config, S3Media, client_settings};

/// The account and key of the storage emulator (Azurite), published by Microsoft.
pub const EMULATOR_ACCOUNT: &str = "devstoreaccount1";
pub const EMULATOR_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const URL_HINT: &str = "write the repository as azure://CONTAINER or azure://CONTAINER/PREFIX; the account and key go in AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY, not in the url";
const KEYS_HINT: &str = "known keys: account, access-key, endpoint, use-emulator, part-size, parts-in-flight, max-retries, retry-timeout, connect-timeout, request-timeout, read-ahead";

/// Where and how to reach a container. The key is kept in memory only; `Debug` and `url`
/// leave it out.
#[derive(Clone)]
pub struct AzureConfig {
    pub container: String,
    pub account: Option<String>,
    pub access_key: Option<String>,
    /// The blob service of the account ("https://ACCOUNT.blob.core.windows.net" by default;
    /// for the emulator "http://127.0.0.1:10000/devstoreaccount1").
    pub endpoint: Option<String>,
    /// Talk to Azurite: its well-known account and key unless others are given, and
    /// http://127.0.0.1:10000 (or AZURITE_BLOB_STORAGE_URL) unless an endpoint is given.
    pub use_emulator: bool,
    /// The prefix, part size, parts in flight, retries, timeouts and read-ahead, shared with
    /// the S3 driver (its bucket is the container).
    pub tuning: S3Config,
}

impl AzureConfig {
    pub fn new(container: &str, prefix: &str) -> AzureConfig {
        AzureConfig {
            container: container.to_string(),
            account: None,
            access_key: None,
            endpoint: None,
            use_emulator: false,
            tuning: S3Config::new(container, prefix),
        }
    }

    /// Parses "azure://container" or "azure://container/some/prefix".
    pub fn from_url(url: &str) -> Result<AzureConfig, MediaError> {
        let shown = if url.contains('@') {
            "azure://…"
        } else {
            url
        };
        let bad = |why: &str| {
            MediaError::permanent("azure", shown, &format!("invalid repository url: {why}"))
                .with_op("parse")
                .with_hint(URL_HINT)
        };
        let rest = url
            .strip_prefix("azure://")
            .ok_or_else(|| bad("it must start with azure://"))?;
        if rest.contains(['@', '?', '#']) {
            return Err(bad("credentials, queries and fragments are not allowed"));
        }
        let (container, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        // Azure's rule: 3 to 63 lowercase letters, digits and single dashes, starting and
        // ending with a letter or digit.
        let ok = (3..=63).contains(&container.len())
            && container
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !container.starts_with('-')
            && !container.ends_with('-')
            && !container.contains("--");
        if !ok {
            return Err(bad(
                "a container name has 3 to 63 lowercase letters, digits or single dashes",
            ));
        }
        let prefix = prefix.trim_end_matches('/');
        if !crate::s3::prefix_is_safe(prefix) {
            return Err(bad("the prefix has an empty, '.' or '..' part"));
        }
        Ok(AzureConfig::new(container, prefix))
    }

    /// "azure://container/prefix", for messages and the catalog.
    pub fn url(&self) -> String {
        let prefix = &self.tuning.prefix;
        if prefix.is_empty() {
            format!("azure://{}", self.container)
        } else {
            format!("azure://{}/{prefix}", self.container)
        }
    }

    /// Overlays the AZURE_* variables and recman's own; fails on an invalid value.
    pub fn try_apply_env(&mut self) -> Result<(), MediaError> {
        self.apply_env_from(|k| std::env::var(k).ok())
    }

    /// The same, reading variables through `get`.
    pub fn apply_env_from(
        &mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<(), MediaError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let first = |keys: &[&'static str]| keys.iter().find_map(|&k| get(k).map(|v| (k, v)));
        let pairs: [(&[&'static str], &str); 6] = [
            (&["AZURE_STORAGE_ACCOUNT_NAME"], "account"),
            (
                &["AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY"],
                "access-key",
            ),
            (&["AZURE_STORAGE_USE_EMULATOR"], "use-emulator"),
            (
                &["RECMAN_AZURE_ENDPOINT", "AZURE_STORAGE_ENDPOINT"],
                "endpoint",
            ),
            (&["RECMAN_AZURE_PART_SIZE"], "part-size"),
            (&["RECMAN_AZURE_PARTS_IN_FLIGHT"], "parts-in-flight"),
        ];
        for (vars, key) in pairs {
            if let Some((var, v)) = first(vars) {
                self.set(key, &v)
                    .map_err(|e| e.with_op(&format!("read {var}")))?;
            }
        }
        // object_store's own name for Azurite's address, honoured when no endpoint is set.
        if self.use_emulator
            && self.endpoint.is_none()
            && let Some(url) = get("AZURITE_BLOB_STORAGE_URL")
        {
            let url = format!("{}/{}", url.trim_end_matches('/'), EMULATOR_ACCOUNT);
            self.set("endpoint", &url)
                .map_err(|e| e.with_op("read AZURITE_BLOB_STORAGE_URL"))?;
        }
        Ok(())
    }

    /// Applies one key of the `[azure]` section of the config file.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), MediaError> {
        let key = key.trim().to_ascii_lowercase().replace('_', "-");
        let v = value.trim();
        let shown = if key == "access-key" {
            "…".to_string()
        } else {
            format!("{v:?}")
        };
        let bad = |why: &str| {
            MediaError::permanent("azure", &key, &format!("invalid value {shown}: {why}"))
                .with_op("set option")
        };
        match key.as_str() {
            "account" => self.account = Some(v.to_string()),
            "access-key" => self.access_key = Some(v.to_string()),
            "endpoint" => {
                let ep = v.trim_end_matches('/');
                if !(ep.starts_with("http://") || ep.starts_with("https://")) || ep.contains('@') {
                    return Err(bad("expected http://HOST[:PORT][/ACCOUNT] or https://HOST")
                        .with_hint("the key belongs in access-key"));
                }
                self.tuning.allow_http = ep.starts_with("http://");
                self.endpoint = Some(ep.to_string());
            }
            "use-emulator" => {
                self.use_emulator = match v.to_ascii_lowercase().as_str() {
                    "true" | "yes" | "on" | "1" => true,
                    "false" | "no" | "off" | "0" => false,
                    _ => return Err(bad("expected true or false")),
                };
            }
            "part-size" | "parts-in-flight" | "max-retries" | "retry-timeout"
            | "connect-timeout" | "request-timeout" | "read-ahead" | "allow-http" => {
                self.tuning
                    .set(&key, v)
                    .map_err(|e| MediaError::permanent("azure", &key, &e.to_string()))?;
            }
            _ => {
                return Err(MediaError::permanent("azure", &key, "unknown option")
                    .with_op("set option")
                    .with_hint(KEYS_HINT));
            }
        }
        Ok(())
    }

    /// The endpoint, account and key to use: the emulator's defaults fill what is not given.
    fn resolved(&self) -> (Option<String>, Option<String>, Option<String>) {
        if !self.use_emulator {
            return (
                self.endpoint.clone(),
                self.account.clone(),
                self.access_key.clone(),
            );
        }
        let account = self.account.as_deref().unwrap_or(EMULATOR_ACCOUNT);
        let endpoint = self
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("http://127.0.0.1:10000/{account}"));
        let key = self.access_key.as_deref().unwrap_or(EMULATOR_KEY);
        (
            Some(endpoint),
            Some(account.to_string()),
            Some(key.to_string()),
        )
    }
}

impl fmt::Debug for AzureConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureConfig")
            .field("container", &self.container)
            .field("prefix", &self.tuning.prefix)
            .field("account", &self.account)
            .field(
                "access_key",
                &if self.access_key.is_some() {
                    "<set>"
                } else {
                    "<unset>"
                },
            )
            .field("endpoint", &self.endpoint)
            .field("use_emulator", &self.use_emulator)
            .finish()
    }
}

/// A driver for `cfg`; no request is made until the first operation.
pub fn open(cfg: AzureConfig) -> Result<S3Media, MediaError> {
    let device = cfg.url();
    let setup = |e: &dyn fmt::Display| {
        MediaError::permanent(&device, "", &format!("invalid azure settings: {e}"))
            .with_op("set up")
            .with_hint("set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or account and access-key in the [azure] section of the config file), or AZURE_STORAGE_USE_EMULATOR=true for Azurite")
    };
    let mut tuning = cfg.tuning.clone();
    let (endpoint, account, key) = cfg.resolved();
    if let Some(ep) = &endpoint {
        tuning.allow_http |= ep.starts_with("http://");
    }
    tuning.validate()?;
    let (retry, client) = client_settings(&tuning);
    // The other AZURE_* variables (service principal, SAS token, managed identity) reach
    // object_store's own credential chain; what recman resolved above overrides them.
    let mut b = MicrosoftAzureBuilder::from_env()
        .with_container_name(&cfg.container)
        .with_allow_http(tuning.allow_http)
        .with_retry(retry)
        .with_http_connector(crate::meter::Metered)
        .with_client_options(client)
        .with_use_emulator(false);
    if let Some(ep) = endpoint {
        b = b.with_endpoint(ep);
    }
    if let Some(a) = account {
        b = b.with_account(a);
    }
    if let Some(k) = key {
        b = b.with_access_key(k);
    }
    // Builder errors name settings, never their secret values.
    let store = b.build().map_err(|e| setup(&e))?;
    S3Media::with_store(Arc::new(store), Cloud::Azure, device, tuning, None)
}
