//! pgBackRest's WAL archive of a stanza: `archive/<stanza>/archive.info` names the cluster
//! (system identifier and major per archive id such as `15-1`), and each segment is stored as
//! `<archive id>/<first 16 hex digits>/<segment>-<SHA-1 of its content>[.ext]`, compressed
//! and encrypted like backup files; timeline history files lie in the archive id's
//! directory as they are.

use super::cipher::Decrypting;
use super::repo::Repo;
use crate::foreign::decode::{Checksum, Codec, sha1_hex};
use crate::foreign::{ForeignWal, ImportError};
use std::io::Read;
use std::path::Path;

/// An archive id (`15-1`) with the system identifier of its cluster.
pub type ArchiveId = (String, u64);

/// The archive ids of the stanza with their system identifier, and the passphrase of the
/// archived files.
pub fn archive_ids(repo: &Repo) -> Result<(Vec<ArchiveId>, Option<String>), ImportError> {
    let info = repo.info(
        &format!("archive/{}/archive.info", repo.stanza),
        repo_pass(repo).as_deref(),
    )?;
    let mut ids = Vec::new();
    for (id, raw) in info.section("db:history") {
        let v: serde_json::Value = serde_json::from_str(raw).unwrap_or_default();
        let (Some(sysid), Some(ver)) = (v["db-id"].as_u64(), v["db-version"].as_str()) else {
            continue;
        };
        ids.push((format!("{ver}-{id}"), sysid));
    }
    Ok((ids, info.get("cipher", "cipher-pass")))
}

fn repo_pass(repo: &Repo) -> Option<Vec<u8>> {
    repo.pass_bytes()
}

/// Every segment and history file of archive id `id`, with its stored path (relative to
/// the repository), stored size and modification time.
pub fn list(repo: &Repo, id: &str) -> Result<Vec<ForeignWal>, ImportError> {
    let base = format!("archive/{}/{id}", repo.stanza);
    let dir = repo.root.join(&base);
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(ImportError::io(&dir, e)),
    };
    for d in entries {
        let d = d.map_err(|e| ImportError::io(&dir, e))?;
        let name = d.file_name().to_string_lossy().into_owned();
        if name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            let sub = dir.join(&name);
            for f in std::fs::read_dir(&sub).map_err(|e| ImportError::io(&sub, e))? {
                let f = f.map_err(|e| ImportError::io(&sub, e))?;
                let file = f.file_name().to_string_lossy().into_owned();
                if let Some(w) = segment(&f.path(), &file, &format!("{base}/{name}/{file}")) {
                    out.push(w);
                }
            }
        } else if name.ends_with(".history")
            && name.len() == 16
            && let Some(w) = stat(&d.path(), &name, format!("{base}/{name}"), None)
        {
            out.push(w);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The file of segment or history file `name` in archive id `id`, looked up in its
/// directory; None when the archive does not hold it.
pub fn list_one(repo: &Repo, id: &str, name: &str) -> Result<Option<ForeignWal>, ImportError> {
    let base = format!("archive/{}/{id}", repo.stanza);
    if name.ends_with(".history") {
        let p = repo.root.join(&base).join(name);
        return Ok(stat(&p, name, format!("{base}/{name}"), None));
    }
    let Some(dir) = name.get(..16) else {
        return Ok(None);
    };
    let sub = repo.root.join(&base).join(dir);
    let entries = match std::fs::read_dir(&sub) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ImportError::io(&sub, e)),
    };
    for f in entries {
        let f = f.map_err(|e| ImportError::io(&sub, e))?;
        let file = f.file_name().to_string_lossy().into_owned();
        if file.starts_with(&format!("{name}-"))
            && let Some(w) = segment(&f.path(), &file, &format!("{base}/{dir}/{file}"))
        {
            return Ok(Some(w));
        }
    }
    Ok(None)
}

/// A segment file's record: `<24 hex>-<40 hex>[.ext]`; partial and backup files are not
/// segments recovery asks for.
fn segment(path: &Path, file: &str, rel: &str) -> Option<ForeignWal> {
    let (name, rest) = file.split_at_checked(24)?;
    if !crate::util::is_segment_name(name) {
        return None;
    }
    let rest = rest.strip_prefix('-')?;
    let (hash, ext) = rest.split_once('.').unwrap_or((rest, ""));
    let sha1 = Checksum::parse("SHA1", hash)?;
    if !ext.is_empty() && Codec::of_extension(ext).is_none() {
        return None;
    }
    stat(path, name, rel.to_string(), Some(sha1))
}

fn stat(path: &Path, name: &str, rel: String, sha1: Option<Checksum>) -> Option<ForeignWal> {
    let md = std::fs::metadata(path).ok()?;
    let mtime = md
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(ForeignWal {
        name: name.to_string(),
        path: rel,
        stored_size: md.len(),
        archived_at: mtime.as_micros() as i64,
        checksum: sha1.map(|c| c.hex()),
    })
}

/// The verified content of archived file `w` (its SHA-1 is in its name; a history file has
/// none and is read as stored), decrypted with `pass` when the archive is encrypted.
pub fn read(repo_root: &Path, w: &ForeignWal, pass: Option<&str>) -> Result<Vec<u8>, ImportError> {
    let path = repo_root.join(&w.path);
    let f = std::fs::File::open(&path).map_err(|e| ImportError::io(&path, e))?;
    let ext = w.path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let codec = Codec::of_extension(ext).unwrap_or(Codec::None);
    let stored: Box<dyn Read + Send> = Box::new(std::io::BufReader::new(f));
    let plain: Box<dyn Read + Send> = match pass {
        Some(p) => Box::new(Decrypting::new(stored, p.as_bytes(), false)),
        None => stored,
    };
    let content = codec.reader(plain).map_err(|e| ImportError::io(&path, e))?;
    let mut out = Vec::with_capacity(16 << 20);
    let mut content = content;
    content
        .read_to_end(&mut out)
        .map_err(|e| ImportError::io(&path, e))?;
    if let Some(want) = &w.checksum {
        let got = sha1_hex(&out);
        if &got != want {
            return Err(ImportError::Corrupt(format!(
                "archived wal file {} ({}) is damaged: its SHA-1 is {got}, pgBackRest recorded {want}; hint: recovery cannot use it: find another copy of the segment",
                w.name,
                path.display()
            )));
        }
    }
    Ok(out)
}
