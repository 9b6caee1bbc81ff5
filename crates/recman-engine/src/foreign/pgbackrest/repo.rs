//! A pgBackRest repository opened read-only for one stanza: `backup/<stanza>/backup.info`
//! lists the backups, each backup directory holds its `backup.manifest` and its files (each
//! compressed on its own, or packed into `bundle/<id>` files), and `archive/<stanza>` holds
//! the WAL archive (see `archive.rs`). Nothing here opens a file for writing.

use super::cipher::{Decrypting, decrypt_all};
use super::ini::Info;
use super::manifest::Manifest;
use crate::foreign::decode::{Checked, Codec};
use crate::foreign::{ForeignEntry, ImportError};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One backup as backup.info lists it.
#[derive(Clone, Debug)]
pub struct BackupSummary {
    pub label: String,
    pub backup_type: String,
    pub prior: Option<String>,
}

pub struct Repo {
    pub root: PathBuf,
    pub stanza: String,
    /// The repository passphrase (encrypted repositories only); never printed.
    pass: Option<Vec<u8>>,
}

fn starts_encrypted(data: &[u8]) -> bool {
    data.starts_with(b"Salted__")
}

impl Repo {
    pub fn open(root: &Path, stanza: &str, pass: Option<&str>) -> Result<Repo, ImportError> {
        let r = Repo {
            root: root.to_path_buf(),
            stanza: stanza.to_string(),
            pass: pass.map(|p| p.as_bytes().to_vec()),
        };
        let info = r.root.join("backup").join(stanza).join("backup.info");
        if !info.exists() && !info.with_extension("info.copy").exists() {
            return Err(ImportError::NotFound(format!(
                "{} holds no pgBackRest stanza {stanza:?} (no backup/{stanza}/backup.info); hint: give the repository path (repo1-path) and the stanza, or the pgBackRest configuration file",
                root.display()
            )));
        }
        Ok(r)
    }

    pub fn describe(&self) -> String {
        format!(
            "pgBackRest repository {} stanza {}",
            self.root.display(),
            self.stanza
        )
    }

    /// Reads info file `rel` (decrypted with `pass` when the repository is encrypted),
    /// trying its `.copy` when the file itself is missing or fails its check.
    pub fn info(&self, rel: &str, pass: Option<&[u8]>) -> Result<Info, ImportError> {
        let mut first_err = None;
        for name in [rel.to_string(), format!("{rel}.copy")] {
            let path = self.root.join(&name);
            let data = match std::fs::read(&path) {
                Ok(d) => d,
                Err(e) => {
                    first_err.get_or_insert(ImportError::io(&path, e));
                    continue;
                }
            };
            let what = format!("{} of {}", name, self.describe());
            let text = if starts_encrypted(&data) {
                let Some(pass) = pass else {
                    return Err(crate::refusal::Import::Encrypted { what }.into());
                };
                match decrypt_all(&data, pass) {
                    Ok(t) => t,
                    Err(e) => {
                        first_err.get_or_insert(ImportError::Corrupt(format!(
                            "{what} cannot be decrypted: {e}; hint: check the passphrase"
                        )));
                        continue;
                    }
                }
            } else {
                data
            };
            match Info::parse(&String::from_utf8_lossy(&text), &what) {
                Ok(i) => return Ok(i),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.expect("one of the two was tried"))
    }

    fn pass(&self) -> Option<&[u8]> {
        self.pass.as_deref()
    }

    pub(super) fn pass_bytes(&self) -> Option<Vec<u8>> {
        self.pass.clone()
    }

    /// backup.info: the current backups, oldest first, and the passphrase of their files.
    pub fn backups(&self) -> Result<(Vec<BackupSummary>, Option<String>, Info), ImportError> {
        let info = self.info(&format!("backup/{}/backup.info", self.stanza), self.pass())?;
        let mut out = Vec::new();
        for (label, raw) in info.section("backup:current") {
            let v: serde_json::Value = serde_json::from_str(raw).unwrap_or_default();
            out.push(BackupSummary {
                label: label.clone(),
                backup_type: v["backup-type"].as_str().unwrap_or("full").to_string(),
                prior: v["backup-prior"].as_str().map(str::to_string),
            });
        }
        out.sort_by(|a, b| a.label.cmp(&b.label));
        let sub = info.get::<String>("cipher", "cipher-pass");
        Ok((out, sub, info))
    }

    /// The manifest of backup `label`; `sub` is backup.info's passphrase for it.
    pub fn manifest(&self, label: &str, sub: Option<&str>) -> Result<Manifest, ImportError> {
        let rel = format!("backup/{}/{label}/backup.manifest", self.stanza);
        let info = self.info(&rel, sub.map(str::as_bytes))?;
        Manifest::from_info(&info, &format!("{rel} of {}", self.describe()))
    }

    /// The checked content of file `e` of backup manifest `m`.
    pub fn open_file(
        &self,
        m: &Manifest,
        e: &ForeignEntry,
    ) -> Result<Box<dyn Read + Send>, ImportError> {
        let what = format!(
            "file {} of pgBackRest backup {} ({})",
            e.path,
            m.label,
            self.describe()
        );
        if e.size == 0 {
            return Ok(Box::new(std::io::empty()));
        }
        let loc = m.locs.get(&e.path).ok_or_else(|| {
            ImportError::Corrupt(format!(
                "{what}: the manifest does not say where it is stored"
            ))
        })?;
        let dir = self.root.join("backup").join(&self.stanza).join(&loc.label);
        let stored: Box<dyn Read + Send>;
        let (raw, path) = match loc.bundle {
            Some((id, offset)) => {
                let path = dir.join("bundle").join(id.to_string());
                let mut f = File::open(&path).map_err(|x| ImportError::io(&path, x))?;
                f.seek(SeekFrom::Start(offset))
                    .map_err(|x| ImportError::io(&path, x))?;
                let len = loc.repo_size.ok_or_else(|| {
                    ImportError::Corrupt(format!(
                        "{what}: the manifest gives no stored size for it in bundle {id}"
                    ))
                })?;
                stored = Box::new(std::io::BufReader::new(f).take(len));
                (m.bundle_raw, path)
            }
            None => {
                let name = format!("{}{}", manifest_name(&e.path), m.codec.extension());
                let path = dir.join(name);
                let f = File::open(&path).map_err(|x| {
                    if x.kind() == std::io::ErrorKind::NotFound {
                        ImportError::NotFound(format!(
                            "{what} is missing: {} does not exist; hint: the backup was expired or moved; restore from another backup",
                            path.display()
                        ))
                    } else {
                        ImportError::io(&path, x)
                    }
                })?;
                stored = Box::new(std::io::BufReader::new(f));
                (false, path)
            }
        };
        // The stored bytes first (pgBackRest's repository checksum), then the file itself.
        let stored: Box<dyn Read + Send> = match (&loc.repo_checksum, loc.repo_size) {
            (Some(ck), Some(size)) => Box::new(Checked::new(
                stored,
                format!("{what}, stored in {}", path.display()),
                size,
                Some(ck.clone()),
            )),
            _ => stored,
        };
        let plain: Box<dyn Read + Send> = match &m.cipher_pass {
            Some(p) => Box::new(Decrypting::new(stored, p.as_bytes(), raw)),
            None => stored,
        };
        let codec = match (m.codec, raw) {
            (Codec::Gz, true) => Codec::Zlib,
            (c, _) => c,
        };
        let content = codec.reader(plain).map_err(|x| ImportError::io(&path, x))?;
        Ok(Box::new(Checked::new(
            content,
            what,
            e.size,
            e.checksum.clone(),
        )))
    }
}

/// The manifest's own name of a data-directory path.
pub fn manifest_name(rel: &str) -> String {
    if rel.starts_with("pg_tblspc/") {
        rel.to_string()
    } else {
        format!("pg_data/{rel}")
    }
}
