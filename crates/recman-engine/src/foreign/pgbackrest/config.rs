//! pgBackRest's configuration file, for what an import needs of it: where a stanza's
//! repository is and its encryption passphrase. Options are `key=value` lines in `[global]`
//! and `[STANZA]` sections (a stanza's own value wins); repository 1 is the one read.

use crate::foreign::ImportError;
use std::path::{Path, PathBuf};

/// The environment variable pgBackRest itself reads the repository passphrase from.
pub const CIPHER_PASS_ENV: &str = "PGBACKREST_REPO1_CIPHER_PASS";

/// A stanza's repository as a configuration file describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StanzaConfig {
    pub stanza: String,
    pub repo_path: PathBuf,
    pub cipher: bool,
    /// Never printed, never stored.
    pub cipher_pass: Option<String>,
}

/// The `[section]` names of the file that are stanzas (not `global` nor `global:COMMAND`).
pub fn stanzas(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix('[')?.strip_suffix(']'))
        .filter(|s| *s != "global" && !s.starts_with("global:") && !s.contains(':'))
        .map(str::to_string)
        .collect()
}

fn value(text: &str, stanza: &str, keys: &[&str]) -> Option<String> {
    let mut section = String::new();
    let (mut global, mut own) = (None, None);
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if !keys.contains(&k.trim()) {
            continue;
        }
        let v = Some(v.trim().to_string());
        if section == stanza || section.starts_with(&format!("{stanza}:")) {
            own = v;
        } else if section == "global" || section.starts_with("global:") {
            global = v;
        }
    }
    own.or(global)
}

/// Reads `path` for `stanza` (or the only stanza it names).
pub fn read(path: &Path, stanza: Option<&str>) -> Result<StanzaConfig, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ImportError::io(path, e))?;
    let stanza = match stanza {
        Some(s) => s.to_string(),
        None => match stanzas(&text).as_slice() {
            [one] => one.clone(),
            [] => {
                return Err(crate::refusal::Import::ConfigNamesNoStanza {
                    path: path.display().to_string(),
                }
                .into());
            }
            many => {
                return Err(crate::refusal::Import::ConfigNamesSeveralStanzas {
                    path: path.display().to_string(),
                    names: many.join(", "),
                }
                .into());
            }
        },
    };
    let repo_path = value(&text, &stanza, &["repo1-path", "repo-path"])
        .unwrap_or_else(|| "/var/lib/pgbackrest".to_string());
    let cipher = value(&text, &stanza, &["repo1-cipher-type", "repo-cipher-type"])
        .is_some_and(|t| t != "none");
    let cipher_pass = std::env::var(CIPHER_PASS_ENV)
        .ok()
        .or_else(|| value(&text, &stanza, &["repo1-cipher-pass", "repo-cipher-pass"]));
    Ok(StanzaConfig {
        stanza,
        repo_path: PathBuf::from(repo_path),
        cipher,
        cipher_pass,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stanzas_own_value_wins_over_global() {
        let text = "[global]\nrepo1-path=/g\nrepo1-cipher-pass=gp\n\n[main]\npg1-path=/pg\n\n[enc]\nrepo1-path=/e\nrepo1-cipher-type=aes-256-cbc\nrepo1-cipher-pass=ep\n";
        assert_eq!(stanzas(text), vec!["main", "enc"]);
        assert_eq!(value(text, "main", &["repo1-path"]).as_deref(), Some("/g"));
        assert_eq!(value(text, "enc", &["repo1-path"]).as_deref(), Some("/e"));
        assert_eq!(
            value(text, "enc", &["repo1-cipher-pass"]).as_deref(),
            Some("ep")
        );
    }
}
