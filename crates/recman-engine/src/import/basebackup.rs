//! pg_basebackup backups, read in place: a directory holding `backup_manifest` and the data
//! directory's files, plain or in tar files (compressed by the client or the server). Each
//! file is checked against the manifest's checksum as it is read. The WAL pg_basebackup
//! copied (`-X stream` or `fetch`, the default) is restored with the files, so that such a
//! backup becomes consistent without any archive.
//!
//! PostgreSQL 17's incremental backups are refused at import for now: combining them with
//! their prior backups is pg_combinebackup's work, and recman does not do it yet.

mod entries;
pub mod manifest;
mod store;
mod tar;

use super::decode::Checked;
use super::record::{self, FOREIGN};
use super::{
    ForeignEntry, ImportError, ImportOptions, ImportReport, ImportedBackup, PG_BASEBACKUP,
};
use crate::EngineError;
use manifest::Manifest;
use recman_catalog::Repository;
use recman_format::manifest::{BackupManifest, MANIFEST_FORMAT, MANIFEST_VERSION, ManifestOrigin};
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
    if let Some(f) = bm.incremental_files().next() {
        return Err(ImportError::Invalid(format!(
            "pg_basebackup backup {location} is an incremental backup (it holds {}), which this recman does not import yet; hint: combine it with the backups it builds on first (`pg_combinebackup FULL ... {location} -o DIR`) and import DIR",
            f.path
        ))
        .into());
    }
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
            origin_type: "full".into(),
            known: true,
        });
        return Ok(report);
    }
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
        origin_type: "full".into(),
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
        incremental_level: None,
        cumulative: false,
        parent: None,
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
        origin_type: "full".into(),
        known: false,
    });
    Ok(report)
}

/// A pg_basebackup backup opened for restore or validation.
pub(crate) struct Opened {
    location: String,
    store: Store,
    entries: Vec<ForeignEntry>,
    holds_wal: bool,
}

impl Opened {
    pub(crate) fn open_chain(chain: &[BackupManifest]) -> Result<Opened, ImportError> {
        let m = chain.last().expect("a chain has at least one backup");
        let o = super::origin_of(m)?;
        if chain.len() > 1 {
            return Err(ImportError::Invalid(format!(
                "backup {} is imported from an incremental pg_basebackup chain, which this recman does not restore yet; hint: combine the chain with pg_combinebackup and import the result",
                m.backup_id
            )));
        }
        let dir = Path::new(&o.location);
        let bm = Manifest::read(dir)?;
        let store = Store::of(dir)?;
        let entries = entries::opened_entries(m, &bm, &o.location)?;
        let holds_wal = entries::holds_wal(m, &entries);
        Ok(Opened {
            location: o.location.clone(),
            store,
            entries,
            holds_wal,
        })
    }

    fn checked<'a>(&self, r: impl Read + Send + 'a, e: &ForeignEntry) -> Box<dyn Read + Send + 'a> {
        Box::new(Checked::new(r, e.path.clone(), e.size, e.checksum.clone()))
    }
}

impl super::Opened for Opened {
    fn describe(&self) -> String {
        format!("pg_basebackup backup {}", self.location)
    }

    fn entries(&self) -> &[ForeignEntry] {
        &self.entries
    }

    fn open(&self, e: &ForeignEntry) -> Result<Box<dyn Read + Send + '_>, ImportError> {
        let r = self.store.open(&e.path)?;
        Ok(self.checked(r, e))
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
