//! pg_basebackup backups, read in place: a directory holding `backup_manifest` and the data
//! directory's files, plain or in tar files (compressed by the client or the server). Each
//! file is checked against the manifest's checksum as it is read. The WAL pg_basebackup
//! copied (`-X stream` or `fetch`, the default) is restored with the files, so that such a
//! backup becomes consistent without any archive.
//!
//! PostgreSQL 17's incremental backups are imported on top of the backup they build on
//! (imported before them), and combined with it at restore ([`incremental`]); like
//! pg_combinebackup, recman reads them in plain format only.

mod entries;
pub mod incremental;
pub mod manifest;
mod store;
mod tar;

use super::decode::{Checked, Checksum};
use super::record::{self, FOREIGN};
use super::{
    ForeignEntry, ImportError, ImportOptions, ImportReport, ImportedBackup, PG_BASEBACKUP,
};
use crate::EngineError;
use manifest::Manifest;
use recman_catalog::Repository;
use recman_format::manifest::{BackupManifest, MANIFEST_FORMAT, MANIFEST_VERSION, ManifestOrigin};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use store::Store;

/// Whether `dir` is a backup pg_basebackup wrote (it holds its `backup_manifest`).
pub fn is_backup_dir(dir: &Path) -> bool {
    dir.join("backup_manifest").is_file()
}

/// The database name an import registers when the user gives none and none has the
/// backup's system identifier.
const DEFAULT_DB: &str = "main";

pub(crate) fn import(repo: &Repository, opts: &ImportOptions) -> Result<ImportReport, EngineError> {
    let dir =
        std::fs::canonicalize(&opts.location).map_err(|e| ImportError::io(&opts.location, e))?;
    let location = dir.display().to_string();
    let label = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| location.clone());
    let bm = Manifest::read(&dir)?;
    let store = Store::of(&dir)?;
    let mut report = ImportReport {
        origin: format!(
            "pg_basebackup backup {location} ({} format)",
            store.format()
        ),
        ..Default::default()
    };
    let known = repo
        .catalog()
        .foreign_backup_by_origin(PG_BASEBACKUP, &location, "", &label)?;
    let listing = store.list()?;
    let facts = entries::Facts::of(&bm, &listing, &dir)?;
    let db = record::database_for(
        repo,
        opts.db_name.as_deref(),
        DEFAULT_DB,
        facts.system_identifier,
        facts.major * 10_000,
        &mut report,
    )?;
    report.database = db.name.clone();
    if let Some(f) = known {
        report.backups.push(ImportedBackup {
            id: f.backup_id,
            label,
            origin_type: f.origin_type,
            known: true,
        });
        return Ok(report);
    }
    let parent = match facts.incremental_from {
        Some(from) => Some(prior_of(repo, db.id, from, &store, &location)?),
        None if bm.incremental_files().next().is_some() => {
            return Err(ImportError::Corrupt(format!(
                "pg_basebackup backup {location} holds incremental files but its backup_label names no prior backup; hint: check it with pg_verifybackup"
            ))
            .into());
        }
        None => None,
    };
    let origin_type = if parent.is_some() { "incr" } else { "full" };
    let list = entries::foreign_entries(&bm, &listing, &location)?;
    let id = record::new_id(repo, facts.start_time)?;
    let owner = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&dir)
            .map(|m| (m.uid(), m.gid()))
            .unwrap_or((0, 0))
    };
    let origin = ManifestOrigin {
        tool: PG_BASEBACKUP.into(),
        location,
        config: None,
        stanza: None,
        label: label.clone(),
        origin_type: origin_type.into(),
    };
    let (start, stop, tli) = bm.span();
    let seg = facts.wal_segment_size;
    let wal = |l| recman_pg::WalName::containing(tli, l, seg).to_string();
    let m = BackupManifest {
        format: MANIFEST_FORMAT.into(),
        version: MANIFEST_VERSION,
        backup_id: id.clone(),
        db_name: db.name.clone(),
        system_identifier: facts.system_identifier,
        pg_version: facts.major * 10_000,
        tag: format!("BB_{}", id.trim_start_matches('F')),
        backup_type: FOREIGN.into(),
        start_lsn: start.to_string(),
        stop_lsn: stop.to_string(),
        timeline: tli,
        start_wal: wal(start),
        stop_wal: wal(recman_pg::Lsn(stop.0.saturating_sub(1).max(start.0))),
        start_time: crate::util::rfc3339(facts.start_time * 1_000_000),
        stop_time: crate::util::rfc3339(facts.stop_time * 1_000_000),
        stop_next_xid: 0,
        wal_segment_size: seg,
        compression: store.compression(),
        channels: 1,
        filesperset: 0,
        maxopenfiles: 0,
        checksums_enabled: facts.checksums,
        backup_label: facts.backup_label,
        tablespace_map: facts.tablespace_map,
        incremental_level: parent.as_ref().map(|_| 1),
        cumulative: false,
        parent,
        parent_start_lsn: None,
        read: None,
        origin: Some(origin),
        tablespaces: facts.tablespaces,
        entries: record::entries(&list, owner),
        sets: Vec::new(),
        corrupt_blocks: Vec::new(),
    };
    let rec = record::backup_record(&m, db.id)?;
    record::record(repo, &m, &rec)?;
    report.backups.push(ImportedBackup {
        id,
        label,
        origin_type: origin_type.into(),
        known: false,
    });
    Ok(report)
}

/// The imported pg_basebackup backup an incremental backup builds on: the one of the same
/// database that started where the incremental's label says (as pg_combinebackup matches
/// them). Both must be in plain format.
fn prior_of(
    repo: &Repository,
    db_id: i64,
    (lsn, tli): (recman_pg::Lsn, u32),
    store: &Store,
    location: &str,
) -> Result<String, EngineError> {
    if !matches!(store, Store::Plain(_)) {
        return Err(ImportError::Invalid(format!(
            "pg_basebackup backup {location} is an incremental backup in tar format, which recman reads in plain format only (as pg_combinebackup does); hint: extract its tar files into a directory and import that"
        ))
        .into());
    }
    let cat = repo.catalog();
    for f in cat.foreign_backups()? {
        if f.tool != PG_BASEBACKUP {
            continue;
        }
        if let Some(b) = cat.backup(&f.backup_id)?
            && b.db_id == db_id
            && b.start_lsn == lsn.0
            && b.timeline == tli
        {
            return Ok(f.backup_id);
        }
    }
    Err(ImportError::NotFound(format!(
        "pg_basebackup backup {location} is an incremental backup on top of one that started at {lsn} on timeline {tli}, which is not imported; hint: import the backups of the chain oldest first (`recman catalog import DIR` for each), or combine them with pg_combinebackup and import the result"
    ))
    .into())
}

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
        let o = super::origin_of(m)?;
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
    let o = super::origin_of(m)?;
    let dir = std::path::PathBuf::from(&o.location);
    if !matches!(Store::of(&dir)?, Store::Plain(_)) {
        return Err(ImportError::Invalid(format!(
            "pg_basebackup backup {} is in tar format and has incremental backups on top of it, which recman combines in plain format only; hint: extract its tar files into a directory, import that, and import the incremental backups again",
            o.location
        )));
    }
    let bm = Manifest::read(&dir)?;
    let files = bm
        .files
        .into_iter()
        .map(|f| (f.path, (f.size, f.checksum)))
        .collect();
    Ok(Layer { dir, files })
}

impl super::Opened for Opened {
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

    fn visit(&self, k: usize, each: &mut super::Visit<'_>) -> Result<(), EngineError> {
        let t = &self.store.tars()[k];
        let by_path: std::collections::HashMap<&str, &ForeignEntry> = self
            .entries
            .iter()
            .filter(|e| e.kind == super::EntryKind::File)
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
