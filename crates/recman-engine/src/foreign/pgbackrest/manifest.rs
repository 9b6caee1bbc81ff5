//! A pgBackRest backup.manifest: the backup's LSNs and times, its tablespaces, and every path
//! of the data directory with, for each file, where the repository holds it (its own backup
//! directory or the one it references, whole or inside a bundle), its size, SHA-1 and the
//! page-checksum result pgBackRest recorded.

use super::ini::Info;
use crate::foreign::decode::{Checksum, Codec};
use crate::foreign::{EntryKind, ForeignEntry, ImportError};
use serde_json::Value;

/// Where a file's bytes are in the repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileLoc {
    /// The backup directory holding it (this backup's label, or the one it references).
    pub label: String,
    /// Inside `bundle/<id>` of that directory at `offset`, or a file of its own.
    pub bundle: Option<(u64, u64)>,
    /// Stored bytes (compressed, encrypted).
    pub repo_size: Option<u64>,
    /// SHA-1 of the stored bytes.
    pub repo_checksum: Option<Checksum>,
}

#[derive(Debug)]
pub struct Manifest {
    pub label: String,
    /// full, diff or incr.
    pub backup_type: String,
    pub prior: Option<String>,
    pub lsn_start: String,
    pub lsn_stop: String,
    pub archive_start: String,
    pub archive_stop: String,
    pub time_start: i64,
    pub time_stop: i64,
    pub system_id: u64,
    /// The major as pgBackRest writes it ("15", "9.6").
    pub pg_version: String,
    pub codec: Codec,
    /// Bundled files are compressed and encrypted in pgBackRest's "raw" forms.
    pub bundle_raw: bool,
    pub checksum_page: bool,
    /// Passphrase of the backup's files when the repository is encrypted.
    pub cipher_pass: Option<String>,
    /// Tablespaces: (oid, name, location).
    pub tablespaces: Vec<(u32, String, String)>,
    pub entries: Vec<ForeignEntry>,
    /// For each file entry (same order as the files of `entries`), where it is stored.
    pub locs: std::collections::HashMap<String, FileLoc>,
}

fn field<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k)
}

/// The data-directory path of a manifest name: `pg_data/x` → `x`, `pg_tblspc/...` as is.
fn rel_of(name: &str) -> Option<&str> {
    if name == "pg_data" {
        return Some("");
    }
    name.strip_prefix("pg_data/")
        .or_else(|| name.starts_with("pg_tblspc/").then_some(name))
}

/// Block numbers of a `checksum-page-error` list: numbers and `[first, last]` ranges.
fn page_errors(v: Option<&Value>) -> Vec<u32> {
    let mut out = Vec::new();
    for x in v.and_then(Value::as_array).into_iter().flatten() {
        match x {
            Value::Number(n) => out.extend(n.as_u64().map(|n| n as u32)),
            Value::Array(r) => {
                if let (Some(a), Some(b)) = (
                    r.first().and_then(Value::as_u64),
                    r.get(1).and_then(Value::as_u64),
                ) {
                    out.extend(a as u32..=b as u32);
                }
            }
            _ => {}
        }
    }
    out
}

struct Defaults {
    user: Option<String>,
    group: Option<String>,
    mode: u32,
}

fn defaults(info: &Info, section: &str, mode: u32) -> Defaults {
    Defaults {
        user: info.get::<String>(section, "user"),
        group: info.get::<String>(section, "group"),
        mode: info
            .get::<String>(section, "mode")
            .and_then(|m| u32::from_str_radix(&m, 8).ok())
            .unwrap_or(mode),
    }
}

fn owner(v: &Value, k: &str, d: &Option<String>) -> Option<String> {
    match v.get(k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => None,
        None => d.clone(),
    }
}

fn mode(v: &Value, d: u32) -> u32 {
    v.get("mode")
        .and_then(Value::as_str)
        .and_then(|m| u32::from_str_radix(m, 8).ok())
        .unwrap_or(d)
}

impl Manifest {
    /// Reads a checked manifest; `what` names it in errors.
    pub fn from_info(info: &Info, what: &str) -> Result<Manifest, ImportError> {
        let need = |s: &str, k: &str| -> Result<String, ImportError> {
            info.get::<String>(s, k).ok_or_else(|| {
                ImportError::Corrupt(format!(
                    "{what} has no [{s}] {k}; hint: it is not a complete pgBackRest backup manifest"
                ))
            })
        };
        if info.get::<bool>("backup", "backup-block-incr") == Some(true) {
            return Err(crate::refusal::Import::BlockIncremental {
                what: what.to_string(),
            }
            .into());
        }
        let codec = match info.get::<String>("backup:option", "option-compress-type") {
            Some(t) if t == "none" => Codec::None,
            Some(t) => Codec::of_extension(&t).ok_or_else(|| {
                ImportError::from(crate::refusal::Import::Compression {
                    what: what.to_string(),
                    codec: t.clone(),
                })
            })?,
            // Before compress-type there was only gzip, on or off.
            None if info.get::<bool>("backup:option", "option-compress") == Some(true) => Codec::Gz,
            None => Codec::None,
        };
        let label = need("backup", "backup-label")?;
        let mut m = Manifest {
            backup_type: need("backup", "backup-type")?,
            prior: info.get("backup", "backup-prior"),
            lsn_start: need("backup", "backup-lsn-start")?,
            lsn_stop: need("backup", "backup-lsn-stop")?,
            archive_start: need("backup", "backup-archive-start")?,
            archive_stop: need("backup", "backup-archive-stop")?,
            time_start: info.get("backup", "backup-timestamp-start").unwrap_or(0),
            time_stop: info.get("backup", "backup-timestamp-stop").unwrap_or(0),
            system_id: info.get("backup:db", "db-system-id").unwrap_or(0),
            pg_version: need("backup:db", "db-version")?,
            codec,
            bundle_raw: info.get("backup", "backup-bundle-raw").unwrap_or(false),
            checksum_page: info
                .get("backup:option", "option-checksum-page")
                .unwrap_or(false),
            cipher_pass: info.get("cipher", "cipher-pass"),
            tablespaces: Vec::new(),
            entries: Vec::new(),
            locs: Default::default(),
            label,
        };
        m.read_targets(info);
        m.read_paths(info);
        m.read_links(info);
        m.read_files(info, what)?;
        Ok(m)
    }

    fn read_targets(&mut self, info: &Info) {
        for (name, raw) in info.section("backup:target") {
            let Ok(v) = serde_json::from_str::<Value>(raw) else {
                continue;
            };
            if let (Some(oid), Some(path)) = (
                field(&v, "tablespace-id")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse().ok()),
                field(&v, "path").and_then(Value::as_str),
            ) && name.starts_with("pg_tblspc/")
            {
                let ts_name = field(&v, "tablespace-name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                self.tablespaces.push((oid, ts_name, path.to_string()));
            }
        }
    }

    fn read_paths(&mut self, info: &Info) {
        let d = defaults(info, "target:path:default", 0o700);
        for (name, raw) in info.section("target:path") {
            let v: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
            // pg_tblspc and pg_tblspc/<oid> name the links' own namespace: the links are
            // entries of their own, under pg_data.
            let Some(rel) = rel_of(name) else { continue };
            if rel.is_empty()
                || name == "pg_tblspc"
                || name.matches('/').count() == 1 && name.starts_with("pg_tblspc/")
            {
                continue;
            }
            self.entries.push(ForeignEntry {
                path: rel.to_string(),
                kind: EntryKind::Dir,
                mode: mode(&v, d.mode),
                user: owner(&v, "user", &d.user),
                group: owner(&v, "group", &d.group),
                ..ForeignEntry::default()
            });
        }
    }

    fn read_links(&mut self, info: &Info) {
        let d = defaults(info, "target:link:default", 0o777);
        for (name, raw) in info.section("target:link") {
            let v: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
            let Some(rel) = rel_of(name) else { continue };
            self.entries.push(ForeignEntry {
                path: rel.to_string(),
                kind: EntryKind::Symlink,
                mode: 0o777,
                user: owner(&v, "user", &d.user),
                group: owner(&v, "group", &d.group),
                link_target: field(&v, "destination")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                ..ForeignEntry::default()
            });
        }
    }

    fn read_files(&mut self, info: &Info, what: &str) -> Result<(), ImportError> {
        let d = defaults(info, "target:file:default", 0o600);
        for (name, raw) in info.section("target:file") {
            let v: Value = serde_json::from_str(raw).map_err(|e| {
                ImportError::Corrupt(format!("{what}: file {name} is not described in JSON: {e}"))
            })?;
            let Some(rel) = rel_of(name) else { continue };
            if v.get("bi").is_some() || v.get("bim").is_some() {
                return Err(crate::refusal::Import::BlockIncrementalFile {
                    what: what.to_string(),
                    name: name.to_string(),
                }
                .into());
            }
            let u64f = |k: &str| v.get(k).and_then(Value::as_u64);
            let size = u64f("size").unwrap_or(0);
            let checksum = v
                .get("checksum")
                .and_then(Value::as_str)
                .and_then(|h| Checksum::parse("SHA1", h));
            if size > 0 && checksum.is_none() {
                return Err(ImportError::Corrupt(format!(
                    "{what}: file {name} has no SHA-1; hint: the manifest is damaged"
                )));
            }
            let page_checked = v.get("checksum-page").and_then(Value::as_bool);
            self.entries.push(ForeignEntry {
                path: rel.to_string(),
                kind: EntryKind::File,
                mode: mode(&v, d.mode),
                user: owner(&v, "user", &d.user),
                group: owner(&v, "group", &d.group),
                mtime: v.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
                size,
                link_target: None,
                checksum,
                page_checked,
                page_errors: page_errors(v.get("checksum-page-error")),
            });
            let bundle = u64f("bni").map(|id| (id, u64f("bno").unwrap_or(0)));
            self.locs.insert(
                rel.to_string(),
                FileLoc {
                    label: v
                        .get("reference")
                        .and_then(Value::as_str)
                        .unwrap_or(&self.label)
                        .to_string(),
                    bundle,
                    repo_size: u64f("repo-size"),
                    repo_checksum: v
                        .get("rck")
                        .and_then(Value::as_str)
                        .and_then(|h| Checksum::parse("SHA1", h)),
                },
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_errors_take_numbers_and_ranges() {
        let v: Value = serde_json::from_str("[1,[4,6],9]").unwrap();
        assert_eq!(page_errors(Some(&v)), vec![1, 4, 5, 6, 9]);
        assert_eq!(rel_of("pg_data/base/1/2"), Some("base/1/2"));
        assert_eq!(
            rel_of("pg_tblspc/16408/PG_15/5/1"),
            Some("pg_tblspc/16408/PG_15/5/1")
        );
        assert_eq!(rel_of("pg_data"), Some(""));
    }
}
