//! Recording a pg_basebackup backup: its catalog row and a recman manifest naming its
//! directory, on top of its prior backup when it is incremental.

use super::entries::{self, Facts};
use super::manifest::Manifest;
use super::store::Store;
use crate::backup_types::FOREIGN;
use crate::error::EngineError;
use crate::foreign::record;
use crate::foreign::{ImportError, ImportOptions, ImportReport, ImportedBackup, PG_BASEBACKUP};
use recman_catalog::Repository;
use recman_format::manifest::{BackupManifest, MANIFEST_FORMAT, MANIFEST_VERSION, ManifestOrigin};

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
    let facts = Facts::of(&bm, &listing, &dir)?;
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
    let id = record::new_id(repo, facts.start_time)?;
    let what = What {
        id: id.clone(),
        db_name: db.name.clone(),
        origin: ManifestOrigin {
            tool: PG_BASEBACKUP.into(),
            location: location.clone(),
            config: None,
            stanza: None,
            label: label.clone(),
            origin_type: origin_type.into(),
        },
        parent,
    };
    let list = entries::foreign_entries(&bm, &listing, &location)?;
    let m = manifest_of(what, &bm, facts, &store, &list, &dir);
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

/// Who the imported backup is in recman.
struct What {
    id: String,
    db_name: String,
    origin: ManifestOrigin,
    parent: Option<String>,
}

/// recman's manifest of the backup: no sets, its files read through the origin.
fn manifest_of(
    w: What,
    bm: &Manifest,
    facts: Facts,
    store: &Store,
    list: &[crate::foreign::ForeignEntry],
    dir: &std::path::Path,
) -> BackupManifest {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(dir)
        .map(|m| (m.uid(), m.gid()))
        .unwrap_or((0, 0));
    let (start, stop, tli) = bm.span();
    let seg = facts.wal_segment_size;
    let wal = |l| recman_pg::WalName::containing(tli, l, seg).to_string();
    BackupManifest {
        format: MANIFEST_FORMAT.into(),
        version: MANIFEST_VERSION,
        tag: format!("BB_{}", w.id.trim_start_matches('F')),
        backup_id: w.id,
        db_name: w.db_name,
        system_identifier: facts.system_identifier,
        pg_version: facts.major * 10_000,
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
        incremental_level: w.parent.as_ref().map(|_| 1),
        cumulative: false,
        parent: w.parent,
        parent_start_lsn: None,
        read: None,
        origin: Some(w.origin),
        tablespaces: facts.tablespaces,
        entries: record::entries(list, owner),
        sets: Vec::new(),
        corrupt_blocks: Vec::new(),
    }
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
        return Err(crate::refusal::Import::IncrementalInTar {
            location: location.to_string(),
        }
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
            // A copied prior's files are recman's pieces now: the chain is combined from the
            // origin's directories, which recman no longer reads for it.
            if b.backup_type != FOREIGN {
                return Err(crate::refusal::Import::IncrementalOnCopied {
                    location: location.to_string(),
                    base: f.backup_id.to_string(),
                }
                .into());
            }
            return Ok(f.backup_id);
        }
    }
    Err(ImportError::NotFound(format!(
        "pg_basebackup backup {location} is an incremental backup on top of one that started at {lsn} on timeline {tli}, which is not imported; hint: import the backups of the chain oldest first (`recman catalog import DIR` for each), or combine them with pg_combinebackup and import the result"
    ))
    .into())
}
