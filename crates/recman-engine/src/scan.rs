//! Lists what an online backup copies: every file of the data directory and of every
//! tablespace, minus what PostgreSQL rebuilds or never needs (see recman_page::exclusion).

use crate::error::EngineError;
use recman_format::manifest::{EntryKind, ManifestEntry};
use recman_page::{Exclusion, Fork, RelFile};
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct ScannedFile {
    /// Path in the backup's namespace (relative to the data directory, '/' separated).
    pub rel: String,
    pub size: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: i64,
    /// Set when the file is a relation segment whose pages carry checksums.
    pub relfile: Option<RelFile>,
}

#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Directories and symlinks, in walk order (parents before children).
    pub entries: Vec<ManifestEntry>,
    pub files: Vec<ScannedFile>,
}

impl ScannedFile {
    /// Where to read the file: through the data directory (tablespace files through their
    /// pg_tblspc symlink). Not stored, since a cluster may have millions of files.
    pub fn abs(&self, pgdata: &Path) -> PathBuf {
        pgdata.join(&self.rel)
    }
}

impl Scan {
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

pub fn scan_data_dir(pgdata: &Path) -> Result<Scan, EngineError> {
    let mut scan = Scan::default();
    walk(pgdata, "", &mut scan)?;
    Ok(scan)
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

fn entry(rel: String, kind: EntryKind, md: &std::fs::Metadata) -> ManifestEntry {
    ManifestEntry {
        path: rel,
        kind,
        mode: md.mode() & 0o7777,
        uid: md.uid(),
        gid: md.gid(),
        mtime: md.mtime(),
        size: None,
        crc32c: None,
        set_no: None,
        link_target: None,
        volatile_blocks: Vec::new(),
        incremental: false,
        sections: Vec::new(),
    }
}

fn walk(dir: &Path, rel: &str, scan: &mut Scan) -> Result<(), EngineError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        // A directory dropped while we walk (DROP DATABASE): WAL replay recreates the truth.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !rel.is_empty() => return Ok(()),
        Err(e) => return Err(EngineError::io("read directory", dir, e)),
    };
    let mut names = Vec::new();
    for de in rd {
        let de = de.map_err(|e| EngineError::io("read directory", dir, e))?;
        names.push(de.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let unlogged = unlogged_relfilenodes(rel, &names);
    for name in names {
        let path = dir.join(&name);
        let child = join(rel, &name);
        let md = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(EngineError::io("stat", &path, e)),
        };
        let ft = md.file_type();
        if ft.is_symlink() {
            let target =
                std::fs::read_link(&path).map_err(|e| EngineError::io("read link", &path, e))?;
            let tmd =
                std::fs::metadata(&path).map_err(|e| EngineError::io("follow link", &path, e))?;
            // pg_wal moved elsewhere (initdb -X) is kept as a plain empty directory.
            if tmd.is_dir() && recman_page::exclusion(&child, true) == Some(Exclusion::KeepDirEmpty)
            {
                scan.entries.push(entry(child, EntryKind::Dir, &tmd));
                continue;
            }
            let mut e = entry(child.clone(), EntryKind::Symlink, &md);
            e.link_target = Some(target.to_string_lossy().into_owned());
            scan.entries.push(e);
            if tmd.is_dir() {
                walk(&path, &child, scan)?;
            }
            continue;
        }
        match recman_page::exclusion(&child, ft.is_dir()) {
            Some(Exclusion::Skip) => continue,
            Some(Exclusion::KeepDirEmpty) => {
                scan.entries.push(entry(child, EntryKind::Dir, &md));
                continue;
            }
            None => {}
        }
        if ft.is_dir() {
            scan.entries.push(entry(child.clone(), EntryKind::Dir, &md));
            walk(&path, &child, scan)?;
        } else if ft.is_file() {
            if let Some(prefix) = incremental_prefix(&name) {
                return Err(crate::refusal::Cluster::UncombinedIncremental {
                    file: path.display().to_string(),
                    prefix: prefix.to_string(),
                    dir: dir.display().to_string(),
                }
                .into());
            }
            let relfile = recman_page::classify(&child);
            if let Some(r) = &relfile
                && r.fork != Fork::Init
                && unlogged.contains(&r.relfilenode)
            {
                // Unlogged relations are reset from their init fork at startup.
                continue;
            }
            scan.files.push(ScannedFile {
                rel: child,
                size: md.len(),
                mode: md.mode() & 0o7777,
                uid: md.uid(),
                gid: md.gid(),
                mtime: md.mtime(),
                relfile,
            });
        }
    }
    Ok(())
}

/// The version table's incremental-file prefix `name` starts with, if any. Such a file in any
/// directory means an uncombined incremental backup: no major's server writes one.
fn incremental_prefix(name: &str) -> Option<&'static str> {
    recman_pg::version::TABLE
        .iter()
        .filter_map(|f| f.incremental_file_prefix)
        .find(|p| name.starts_with(p))
}

/// Relfilenodes in one database directory that have an init fork, i.e. unlogged relations.
fn unlogged_relfilenodes(rel: &str, names: &[String]) -> HashSet<u32> {
    let mut out = HashSet::new();
    for n in names {
        if let Some(r) = recman_page::classify(&join(rel, n))
            && r.fork == Fork::Init
        {
            out.insert(r.relfilenode);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_uncombined_incremental_backup_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("base/5")).unwrap();
        std::fs::write(d.path().join("base/5/1259"), [0u8; 8192]).unwrap();
        super::scan_data_dir(d.path()).expect("a plain relation file is fine");
        std::fs::write(d.path().join("base/5/INCREMENTAL.16384"), b"x").unwrap();
        let e = super::scan_data_dir(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("INCREMENTAL.16384") && e.contains("pg_combinebackup"),
            "{e}"
        );
    }
}
