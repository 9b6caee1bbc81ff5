//! Settings from the TOML file, below flags and environment in precedence.

use crate::cli::Global;
use anyhow::{Context, Result};
use serde::Deserialize;
use std::path::PathBuf;

/// Unknown keys are refused by [`load`], not by serde: the settings are collected by name
/// into one map, which `deny_unknown_fields` cannot be combined with.
#[derive(Debug, Default, Deserialize)]
pub struct FileConfig {
    pub repo: Option<PathBuf>,
    /// More repositories after `repo`, in the fallback order (what --also-repo gives).
    pub also_repo: Option<Vec<PathBuf>>,
    pub pgdata: Option<PathBuf>,
    pub target: Option<String>,
    pub db: Option<String>,
    /// The key file of an encrypted repository (what --key-file gives).
    pub key_file: Option<std::path::PathBuf>,
    /// The manifest MAC key file (what --mac-key-file gives).
    pub mac_key_file: Option<std::path::PathBuf>,
    /// S3 settings of remote repositories and s3 devices (endpoint, region,
    /// access-key-id, secret-access-key, part-size, parts-in-flight, virtual-hosted, ...);
    /// docs/s3.md. The file may hold secrets: keep it readable by its owner only.
    pub s3: Option<std::collections::BTreeMap<String, toml::Value>>,
    /// Azure settings of azure:// repositories and devices (account, access-key, endpoint,
    /// use-emulator, part-size, ...); docs/user-guide.md. May hold the account key too.
    pub azure: Option<std::collections::BTreeMap<String, toml::Value>>,
    /// Google Cloud Storage settings of gs:// repositories and devices (credentials-file,
    /// endpoint, anonymous, part-size, ...); docs/user-guide.md.
    pub gcs: Option<std::collections::BTreeMap<String, toml::Value>>,
    /// The fleet transport's files: cert, key and ca (what --tls-cert, --tls-key and
    /// --tls-ca give).
    pub tls: Option<TlsSection>,
    /// The repository-wide settings CONFIGURE stores, by their names with `_`
    /// (`retention_policy`, `channels`, `rpo_target`, ...: every one
    /// [`recman_command::precedence::file_key`] allows); `show all` reports them as "config
    /// file".
    #[serde(flatten)]
    pub settings: std::collections::BTreeMap<String, toml::Value>,
}

/// The keys the file may hold, for the hint of a refusal.
fn allowed_keys() -> String {
    let settings: Vec<String> = recman_command::precedence::SPECS
        .iter()
        .filter_map(recman_command::precedence::file_key)
        .collect();
    format!(
        "repo, also_repo, pgdata, target, db, key_file, mac_key_file, {} and [s3], [azure], [gcs] and [tls] sections",
        settings.join(", ")
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub ca: Option<PathBuf>,
}

/// The settings of the --config file; all unset when there is none.
pub fn file_settings(g: &Global) -> Result<FileConfig> {
    match &g.config {
        Some(path) => load(path),
        None => Ok(FileConfig::default()),
    }
}

fn load(path: &std::path::Path) -> Result<FileConfig> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read config file {}; hint: check --config / RECMAN_CONFIG",
            path.display()
        )
    })?;
    let fc: FileConfig = toml::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "config file {} is invalid: {}; hint: allowed keys are {}",
            path.display(),
            e.message(),
            allowed_keys()
        )
    })?;
    if let Some(k) = fc
        .settings
        .keys()
        .find(|k| recman_command::precedence::spec_of_file_key(k).is_none())
    {
        anyhow::bail!(
            "config file {} is invalid: unknown key `{k}`; hint: allowed keys are {}",
            path.display(),
            allowed_keys()
        );
    }
    Ok(fc)
}

/// Fills what flags and environment left unset from the config file, if any.
pub fn merge(mut g: Global) -> Result<Global> {
    let Some(path) = g.config.clone() else {
        return Ok(g);
    };
    let fc = load(&path)?;
    let pairs = |t: &std::collections::BTreeMap<String, toml::Value>| {
        t.iter()
            .map(|(k, v)| {
                let v = match v {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect()
    };
    recman_command::open::set_store_settings(
        fc.s3.as_ref().map(pairs),
        fc.azure.as_ref().map(pairs),
        fc.gcs.as_ref().map(pairs),
    );
    g.repo = g.repo.or(fc.repo);
    if g.also_repo.is_empty() {
        g.also_repo = fc.also_repo.unwrap_or_default();
    }
    g.pgdata = g.pgdata.or(fc.pgdata);
    g.target = g.target.or(fc.target);
    g.db = g.db.or(fc.db);
    g.key_file = g.key_file.or(fc.key_file);
    g.mac_key_file = g.mac_key_file.or(fc.mac_key_file);
    if let Some(t) = fc.tls {
        g.tls_cert = g.tls_cert.or(t.cert);
        g.tls_key = g.tls_key.or(t.key);
        g.tls_ca = g.tls_ca.or(t.ca);
    }
    Ok(g)
}

/// The --config file's values of the repository-wide settings, by setting name, each checked
/// as CONFIGURE checks it (an error names the file and the key).
pub fn file_layer(g: &Global) -> Result<Vec<(&'static str, String)>> {
    let file = file_settings(g)?;
    let mut out = Vec::new();
    for (key, value) in &file.settings {
        let spec = recman_command::precedence::spec_of_file_key(key)
            .expect("load refuses keys of no setting");
        let text = match value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        let value = recman_command::settings::validate(spec.name, &words).map_err(|e| {
            anyhow::anyhow!(
                "config file {}: key `{key}`: {e}",
                g.config
                    .as_deref()
                    .unwrap_or(std::path::Path::new("?"))
                    .display()
            )
        })?;
        out.push((spec.name, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The fleet's TLS files: a flag (or its RECMAN_TLS_* variable, which clap reads in its
    /// place) wins over the config file's [tls], which fills what was left unset.
    #[test]
    fn tls_section_fills_what_flags_leave_unset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fleet.toml");
        std::fs::write(
            &path,
            "[tls]\ncert = \"/etc/recman/file.crt\"\nkey = \"/etc/recman/file.key\"\nca = \"/etc/recman/ca.crt\"\n",
        )
        .unwrap();
        let g = Global {
            config: Some(path),
            tls_cert: Some(PathBuf::from("/flag.crt")),
            ..Default::default()
        };
        let g = merge(g).unwrap();
        assert_eq!(g.tls_cert, Some(PathBuf::from("/flag.crt")));
        assert_eq!(g.tls_key, Some(PathBuf::from("/etc/recman/file.key")));
        assert_eq!(g.tls_ca, Some(PathBuf::from("/etc/recman/ca.crt")));
    }
}
