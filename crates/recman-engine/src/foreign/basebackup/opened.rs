//! A pg_basebackup backup opened for restore and validation: its files read in place and
//! checked, tar files read once each, incremental chains combined.

use super::entries;
use super::incremental;
use super::manifest::Manifest;
use super::store::{self, Store};
use super::tar;
use crate::error::EngineError;
use crate::foreign::decode::{Checked, Checksum};
use crate::foreign::{self as im, ForeignEntry, ImportError};
use recman_format::manifest::BackupManifest;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// One backup of an imported chain: its directory and what its manifest lists.
struct Layer {
    dir: std::path::PathBuf,
    files: HashMap<String, (u64, Option<Checksum>)>,
}

/// A pg_basebackup backup opened for restore or validation: the newest of its chain (a
/// full backup alone, or one with the incremental backups on top of it).
pub(crate) struct Opened {
    location: String,
    store: Store,
    entries: Vec<ForeignEntry>,
    holds_wal: bool,
    /// The chain, oldest first, when the backup is incremental.
    layers: Vec<Layer>,
}

impl Opened {
    pub(crate) fn open_chain(chain: &[BackupManifest]) -> Result<Opened, ImportError> {
        let m = chain.last().expect("a chain has at least one backup");
        let o = im::origin_of(m)?;
        let dir = Path::new(&o.location);
        let bm = Manifest::read(dir)?;
        let store = Store::of(dir)?;
        let entries = entries::opened_entries(m, &bm, &o.location)?;
        let holds_wal = entries::holds_wal(m, &entries);
        let mut layers = Vec::new();
        if chain.len() > 1 {
            for b in chain {
                layers.push(layer_of(b)?);
            }
        }
        Ok(Opened {
            location: o.location.clone(),
            store,
            entries,
            holds_wal,
            layers,
        })
    }

    /// File `path` as backup `k` of the chain has it: whole, rebuilt from its incremental
    /// file and the backups before it, or None when that backup lacks it.
    fn open_in(
        &self,
        k: usize,
        path: &str,
    ) -> Result<Option<Box<dyn Read + Send + '_>>, ImportError> {
        let l = &self.layers[k];
        let open = |rel: &str, (size, sum): &(u64, Option<Checksum>)| {
            let p = l.dir.join(rel);
            let f = std::fs::File::open(&p).map_err(|e| ImportError::io(&p, e))?;
            let r = std::io::BufReader::with_capacity(1 << 20, f);
            let what = format!("{rel} of {}", l.dir.display());
            Ok::<_, ImportError>(Box::new(Checked::new(r, what, *size, sum.clone())))
        };
        if let Some(f) = l.files.get(path) {
            return Ok(Some(open(path, f)?));
        }
        let rel = incremental::incremental_name(path);
        let Some(f) = l.files.get(&rel) else {
            return Ok(None);
        };
        let incr = open(&rel, f)?;
        let prior = match k {
            0 => None,
            _ => self.open_in(k - 1, path)?,
        };
        let r = incremental::Rebuilt::new(incr, prior)
            .map_err(|e| ImportError::io(l.dir.join(&rel), e))?;
        Ok(Some(Box::new(r)))
    }

    fn checked<'a>(&self, r: impl Read + Send + 'a, e: &ForeignEntry) -> Box<dyn Read + Send + 'a> {
        Box::new(Checked::new(r, e.path.clone(), e.size, e.checksum.clone()))
    }
}

/// What backup `m` of a chain holds; only plain format can be combined.
fn layer_of(m: &BackupManifest) -> Result<Layer, ImportError> {
    let o = im::origin_of(m)?;
    let dir = std::path::PathBuf::from(&o.location);
    if !matches!(Store::of(&dir)?, Store::Plain(_)) {
        return Err(crate::refusal::Import::TarUnderIncrementals {
            location: o.location.to_string(),
        }
        .into());
    }
    let bm = Manifest::read(&dir)?;
    let files = bm
        .files
        .into_iter()
        .map(|f| (f.path, (f.size, f.checksum)))
        .collect();
    Ok(Layer { dir, files })
}

impl im::Opened for Opened {
    fn describe(&self) -> String {
        format!("pg_basebackup backup {}", self.location)
    }

    fn entries(&self) -> &[ForeignEntry] {
        &self.entries
    }

    fn open(&self, e: &ForeignEntry) -> Result<Box<dyn Read + Send + '_>, ImportError> {
        if self.layers.is_empty() {
            let r = self.store.open(&e.path)?;
            return Ok(self.checked(r, e));
        }
        // The WAL, and a file recorded as found, are not in the manifest: read as they are.
        match self.open_in(self.layers.len() - 1, &e.path)? {
            Some(r) => Ok(self.checked(r, e)),
            None => Ok(self.checked(self.store.open(&e.path)?, e)),
        }
    }

    fn holds_its_wal(&self) -> bool {
        self.holds_wal
    }

    fn streams(&self) -> usize {
        self.store.tars().len()
    }

    fn visit(&self, k: usize, each: &mut im::Visit<'_>) -> Result<(), EngineError> {
        let t = &self.store.tars()[k];
        let by_path: std::collections::HashMap<&str, &ForeignEntry> = self
            .entries
            .iter()
            .filter(|e| e.kind == im::EntryKind::File)
            .map(|e| (e.path.as_str(), e))
            .collect();
        let mut s = store::open_tar(t)?;
        while let Some(h) = s.next_header().map_err(|e| ImportError::io(&t.path, e))? {
            let path = format!("{}{}", t.prefix, h.path);
            let Some(e) = by_path
                .get(path.as_str())
                .filter(|_| h.kind == tar::Kind::File)
            else {
                continue;
            };
            let mut r = Checked::new(s.member(), e.path.clone(), e.size, e.checksum.clone());
            each(e, &mut r)?;
        }
        Ok(())
    }
}
