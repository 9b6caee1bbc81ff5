//! An object-store repository as the tests address it: its config file, URL and cache.

use super::*;
use recman_media::testkit::S3Server;
use std::path::{Path, PathBuf};

/// Writes `dir/recman.toml` with an `[s3]` section for `server` reached at `endpoint`, then
/// `extra` (more lines of that section, or further sections); readable by the cluster user.
pub fn write_s3_config(dir: &Path, endpoint: &str, server: &S3Server, extra: &str) -> PathBuf {
    let config = dir.join("recman.toml");
    std::fs::write(
        &config,
        format!(
            "[s3]\nendpoint = \"{endpoint}\"\nregion = \"us-east-1\"\naccess-key-id = \"{}\"\nsecret-access-key = \"{}\"\n{extra}",
            server.access_key(),
            server.secret_key()
        ),
    )
    .unwrap();
    chown_to_cluster_user(&config);
    config
}

/// A remote repository's global options: its config file, URL and catalog cache.
pub struct RemoteRepo {
    pub config: PathBuf,
    pub url: String,
    pub cache: PathBuf,
}

impl RemoteRepo {
    /// `--config`, `--repo` and `--repo-cache`, then `extra`.
    pub fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--config".into(),
            path_str(&self.config).into(),
            "--repo".into(),
            self.url.clone(),
            "--repo-cache".into(),
            path_str(&self.cache).into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    pub fn ok(&self, extra: &[&str]) -> String {
        recman_ok(self.args(extra))
    }

    pub fn err(&self, extra: &[&str]) -> String {
        recman_err(self.args(extra))
    }
}
