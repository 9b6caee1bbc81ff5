//! Importing a location: finding what it is (a pgBackRest repository, stanza directory or
//! configuration file; a pg_basebackup backup), opening it read-only, and recording each of
//! its backups not yet known (a recman manifest naming the origin, and the catalog row) and
//! its WAL archive. Running it again adds only what is new.

use super::pgbackrest::{Repo, archive, config, manifest::Manifest};
use super::{ForeignEntry, ImportError, Opened, PGBACKREST};
use crate::backup_types::FOREIGN;
use crate::error::EngineError;
use crate::util::rfc3339;
use recman_catalog::{
    BackupRecord, BackupStatus, DbRecord, ForeignArchive, ForeignBackupRecord, ForeignWalRecord,
    Repository,
};
use recman_format::manifest::{
    BackupManifest, EntryKind, MANIFEST_FORMAT, MANIFEST_VERSION, ManifestEntry, ManifestOrigin,
    ManifestTablespace,
};
use recman_pg::Lsn;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What to import.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// A pgBackRest repository (or a stanza's directory in it, or its configuration file),
    /// or a pg_basebackup backup's directory.
    pub location: PathBuf,
    pub stanza: Option<String>,
    /// pgBackRest's configuration file: the repository and passphrase of the stanza.
    pub pgbackrest_config: Option<PathBuf>,
    /// The registered database the backups belong to; by default the one with the backups'
    /// system identifier, registered under this name (or the stanza's) when there is none.
    pub db_name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedBackup {
    pub id: String,
    pub label: String,
    pub origin_type: String,
    /// Imported by an earlier run.
    pub known: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// What was imported, in words.
    pub origin: String,
    pub database: String,
    /// The database was registered by this import.
    pub registered: bool,
    pub backups: Vec<ImportedBackup>,
    pub wal_added: usize,
    pub wal_known: usize,
}

/// A pgBackRest stanza to import: its repository, and where its passphrase comes from.
pub(super) struct PgbrLocation {
    root: PathBuf,
    stanza: String,
    config: Option<PathBuf>,
    pass: Option<String>,
}

fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The only directory under `dir`, or an error listing them.
fn only_stanza(dir: &Path, root: &Path) -> Result<String, ImportError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| ImportError::io(dir, e))?
        .filter_map(|d| d.ok())
        .filter(|d| d.path().is_dir())
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(ImportError::NotFound(format!(
            "pgBackRest repository {} holds no stanza; hint: check the path (repo1-path)",
            root.display()
        ))),
        many => Err(crate::refusal::Import::SeveralStanzas {
            root: root.display().to_string(),
            names: many.join(", "),
        }
        .into()),
    }
}

/// What `opts` points at, when it is pgBackRest's; None for a pg_basebackup backup.
pub(super) fn pgbackrest_location(
    opts: &ImportOptions,
) -> Result<Option<PgbrLocation>, ImportError> {
    let loc = &opts.location;
    let config_file = opts
        .pgbackrest_config
        .clone()
        .or_else(|| loc.is_file().then(|| loc.clone()));
    if let Some(cf) = config_file {
        let c = config::read(&cf, opts.stanza.as_deref())?;
        if c.cipher && c.cipher_pass.is_none() {
            return Err(crate::refusal::Import::NoPassphrase {
                stanza: c.stanza.to_string(),
                config: cf.display().to_string(),
                env: config::CIPHER_PASS_ENV.to_string(),
            }
            .into());
        }
        return Ok(Some(PgbrLocation {
            root: absolute(&c.repo_path),
            stanza: c.stanza,
            config: Some(absolute(&cf)),
            pass: c.cipher_pass,
        }));
    }
    if !loc.is_dir() {
        return Err(ImportError::NotFound(format!(
            "{} does not exist; hint: give a pgBackRest repository, its configuration file, or a pg_basebackup backup directory",
            loc.display()
        )));
    }
    if is_basebackup_dir(loc) {
        return Ok(None);
    }
    let pass = std::env::var(config::CIPHER_PASS_ENV).ok();
    let loc = absolute(loc);
    // <repo>/backup/<stanza> or <repo>/archive/<stanza>: the stanza is the directory's name.
    let parent = loc.parent().map(Path::to_path_buf);
    if let (Some(p), Some(name)) = (&parent, loc.file_name())
        && matches!(
            p.file_name().and_then(|n| n.to_str()),
            Some("backup" | "archive")
        )
        && let Some(root) = p.parent()
        && root.join("backup").is_dir()
    {
        return Ok(Some(PgbrLocation {
            root: root.to_path_buf(),
            stanza: name.to_string_lossy().into_owned(),
            config: None,
            pass,
        }));
    }
    if loc.join("backup").is_dir() {
        let stanza = match &opts.stanza {
            Some(s) => s.clone(),
            None => only_stanza(&loc.join("backup"), &loc)?,
        };
        return Ok(Some(PgbrLocation {
            root: loc,
            stanza,
            config: None,
            pass,
        }));
    }
    Err(crate::refusal::Import::NotImportable {
        location: loc.display().to_string(),
    }
    .into())
}

/// The registered database with `sysid`, or a new registration.
pub(crate) fn database_for(
    repo: &Repository,
    name: Option<&str>,
    default_name: &str,
    sysid: u64,
    pg_version: u32,
    report: &mut ImportReport,
) -> Result<DbRecord, EngineError> {
    let cat = repo.catalog();
    let all = cat.databases()?;
    if let Some(n) = name {
        if let Some(db) = all.iter().find(|d| d.name == n) {
            if db.system_identifier != sysid {
                return Err(crate::refusal::Cluster::ImportOfOtherDatabase {
                    sysid,
                    db: n.to_string(),
                    db_sysid: db.system_identifier,
                }
                .into());
            }
            return Ok(db.clone());
        }
    } else if let Some(db) = all.iter().find(|d| d.system_identifier == sysid) {
        return Ok(db.clone());
    }
    let n = name.unwrap_or(default_name);
    let db = cat.register_database(n, sysid, pg_version, "")?;
    report.registered = true;
    Ok(db)
}

/// A new backup id for an imported backup that started at `start` (Unix seconds).
pub(crate) fn new_id(repo: &Repository, start: i64) -> Result<String, EngineError> {
    let stamp = chrono::DateTime::from_timestamp(start, 0)
        .unwrap_or_default()
        .format("%Y%m%dT%H%M%S")
        .to_string();
    for n in 0.. {
        let id = if n == 0 {
            format!("F{stamp}")
        } else {
            format!("F{stamp}{n}")
        };
        if repo.catalog().backup(&id)?.is_none() {
            return Ok(id);
        }
    }
    unreachable!("some suffix is free")
}

/// The uid of user `name` on this host, else `fallback`.
fn uid_of(name: Option<&str>, fallback: u32) -> u32 {
    name.and_then(|n| std::ffi::CString::new(n).ok())
        // SAFETY: getpwnam reads the user database; the pointer it returns is used at once,
        // before any other call could overwrite the static buffer it points into.
        .and_then(|c| unsafe { libc::getpwnam(c.as_ptr()).as_ref().map(|p| p.pw_uid) })
        .unwrap_or(fallback)
}

fn gid_of(name: Option<&str>, fallback: u32) -> u32 {
    name.and_then(|n| std::ffi::CString::new(n).ok())
        // SAFETY: as for getpwnam above.
        .and_then(|c| unsafe { libc::getgrnam(c.as_ptr()).as_ref().map(|g| g.gr_gid) })
        .unwrap_or(fallback)
}

/// recman's entries for a foreign backup's; owners by name on this host, else `owner`.
pub(crate) fn entries(list: &[ForeignEntry], owner: (u32, u32)) -> Vec<ManifestEntry> {
    list.iter()
        .map(|e| ManifestEntry {
            path: e.path.clone(),
            kind: e.kind,
            mode: e.mode,
            uid: uid_of(e.user.as_deref(), owner.0),
            gid: gid_of(e.group.as_deref(), owner.1),
            mtime: e.mtime,
            size: (e.kind == EntryKind::File).then_some(e.size),
            crc32c: None,
            set_no: None,
            link_target: e.link_target.clone(),
            volatile_blocks: Vec::new(),
            incremental: false,
            sections: Vec::new(),
        })
        .collect()
}

/// What global/pg_control of a backup says: (wal segment size, data checksums on).
pub(crate) fn control_facts(major: u32, control: &[u8]) -> (u64, bool) {
    let Some(t) = recman_pg::version::for_major(major) else {
        return (16 << 20, false);
    };
    let at = |o: usize| {
        control
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    };
    let seg = at(t.control.wal_segment_size)
        .filter(|s| s.is_power_of_two())
        .map_or(16 << 20, u64::from);
    (
        seg,
        at(t.control.data_checksum_version).is_some_and(|v| v != 0),
    )
}

/// Reads a small file of a foreign backup whole (backup_label, pg_control); "" when absent.
pub(crate) fn small_file(o: &dyn Opened, path: &str) -> Result<Vec<u8>, EngineError> {
    let Some(e) = o.entries().iter().find(|e| e.path == path) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    o.open(e)?
        .read_to_end(&mut out)
        .map_err(|x| EngineError::from(ImportError::io(path, x)))?;
    Ok(out)
}

/// Writes the manifest of an imported backup and records it in the catalog.
pub(crate) fn record(
    repo: &Repository,
    m: &BackupManifest,
    rec: &BackupRecord,
) -> Result<(), EngineError> {
    let o = m.origin.as_ref().expect("an imported backup");
    let rel = recman_catalog::layout::manifest(&m.db_name, &m.backup_id);
    let mut f = repo.create_atomic(&rel)?;
    crate::manifest_io::write(repo, &mut f, m, &rel)?;
    f.commit()?;
    repo.catalog().record_foreign_backup(
        rec,
        &ForeignBackupRecord {
            backup_id: m.backup_id.clone(),
            tool: o.tool.clone(),
            location: o.location.clone(),
            stanza: o.stanza.clone().unwrap_or_default(),
            label: o.label.clone(),
            origin_type: o.origin_type.clone(),
        },
    )?;
    Ok(())
}

/// The catalog row of an imported backup described by `m`.
pub(crate) fn backup_record(m: &BackupManifest, db_id: i64) -> Result<BackupRecord, EngineError> {
    let micros = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .map(|t| t.timestamp_micros())
            .unwrap_or(0)
    };
    let files = m.entries.iter().filter(|e| e.kind == EntryKind::File);
    Ok(BackupRecord {
        id: m.backup_id.clone(),
        db_id,
        tag: m.tag.clone(),
        backup_type: m.backup_type.clone(),
        status: BackupStatus::Available,
        start_lsn: m.start_lsn.parse::<Lsn>()?.0,
        stop_lsn: Some(m.stop_lsn.parse::<Lsn>()?.0),
        timeline: m.timeline,
        start_wal: m.start_wal.clone(),
        stop_wal: Some(m.stop_wal.clone()),
        start_time: micros(&m.start_time),
        stop_time: Some(micros(&m.stop_time)),
        stop_next_xid: None,
        db_bytes: files.clone().filter_map(|e| e.size).sum(),
        written_bytes: 0,
        file_count: files.count() as u64,
        channels: 1,
        compression: m.compression.clone(),
        filesperset: 0,
        maxopenfiles: 0,
        pid: 0,
        host: String::new(),
        error: None,
    })
}

/// A pgBackRest backup opened for restore or validation.
pub(crate) struct PgbrOpened {
    repo: Repo,
    manifest: Manifest,
}

/// The passphrase of a pgBackRest origin: its configuration file's, else the environment's.
fn origin_pass(o: &ManifestOrigin) -> Result<Option<String>, ImportError> {
    match &o.config {
        Some(cf) => Ok(config::read(Path::new(cf), o.stanza.as_deref())?.cipher_pass),
        None => Ok(std::env::var(config::CIPHER_PASS_ENV).ok()),
    }
}

impl PgbrOpened {
    pub(crate) fn open(o: &ManifestOrigin) -> Result<PgbrOpened, ImportError> {
        let stanza = o.stanza.as_deref().unwrap_or_default();
        let pass = origin_pass(o)?;
        let repo = Repo::open(Path::new(&o.location), stanza, pass.as_deref())?;
        let (_, sub, _) = repo.backups()?;
        let manifest = repo.manifest(&o.label, sub.as_deref())?;
        Ok(PgbrOpened { repo, manifest })
    }
}

impl Opened for PgbrOpened {
    fn describe(&self) -> String {
        format!("backup {} of {}", self.manifest.label, self.repo.describe())
    }

    fn entries(&self) -> &[ForeignEntry] {
        &self.manifest.entries
    }

    fn open(&self, e: &ForeignEntry) -> Result<Box<dyn Read + Send + '_>, ImportError> {
        self.repo.open_file(&self.manifest, e)
    }
}

pub(super) fn import_pgbackrest(
    repo: &Repository,
    opts: &ImportOptions,
    l: &PgbrLocation,
) -> Result<ImportReport, EngineError> {
    let pr = Repo::open(&l.root, &l.stanza, l.pass.as_deref())?;
    let mut report = ImportReport {
        origin: pr.describe(),
        ..Default::default()
    };
    let (backups, sub, info) = pr.backups()?;
    let sysid: u64 = info.get("db", "db-system-id").unwrap_or(0);
    let version: String = info.get("db", "db-version").unwrap_or_default();
    let major: u32 = version.parse().map_err(|_| {
        ImportError::from(crate::refusal::Import::UnsupportedPostgres {
            what: pr.describe(),
            version: version.clone(),
        })
    })?;
    let db = database_for(
        repo,
        opts.db_name.as_deref(),
        &l.stanza,
        sysid,
        major * 10_000,
        &mut report,
    )?;
    report.database = db.name.clone();
    let location = l.root.display().to_string();
    let cat = repo.catalog();
    let mut ids: std::collections::HashMap<String, String> = Default::default();
    for b in &backups {
        if let Some(f) = cat.foreign_backup_by_origin(PGBACKREST, &location, &l.stanza, &b.label)? {
            ids.insert(b.label.clone(), f.backup_id.clone());
            report.backups.push(ImportedBackup {
                id: f.backup_id,
                label: b.label.clone(),
                origin_type: b.backup_type.clone(),
                known: true,
            });
            continue;
        }
        let pm = pr.manifest(&b.label, sub.as_deref())?;
        if pm.system_id != sysid {
            return Err(ImportError::Corrupt(format!(
                "backup {} of {} has system identifier {}, its stanza {sysid}; hint: the repository is inconsistent; import the stanza's backups one by one",
                b.label,
                pr.describe(),
                pm.system_id
            ))
            .into());
        }
        let origin = ManifestOrigin {
            tool: PGBACKREST.into(),
            location: location.clone(),
            config: l.config.as_ref().map(|c| c.display().to_string()),
            stanza: Some(l.stanza.clone()),
            label: b.label.clone(),
            origin_type: pm.backup_type.clone(),
        };
        let parent = pm.prior.as_ref().and_then(|p| ids.get(p).cloned());
        let id = new_id(repo, pm.time_start)?;
        let opened = PgbrOpened {
            repo: Repo::open(&l.root, &l.stanza, l.pass.as_deref())?,
            manifest: pm,
        };
        let m = manifest_of(&opened, &db, id, origin, parent, major, &l.root)?;
        let rec = backup_record(&m, db.id)?;
        record(repo, &m, &rec)?;
        ids.insert(b.label.clone(), m.backup_id.clone());
        report.backups.push(ImportedBackup {
            id: m.backup_id,
            label: b.label.clone(),
            origin_type: opened.manifest.backup_type.clone(),
            known: false,
        });
    }
    import_pgbackrest_wal(repo, &pr, &db, sysid, &location, l, &mut report)?;
    Ok(report)
}

fn import_pgbackrest_wal(
    repo: &Repository,
    pr: &Repo,
    db: &DbRecord,
    sysid: u64,
    location: &str,
    l: &PgbrLocation,
    report: &mut ImportReport,
) -> Result<(), EngineError> {
    let (ids, _) = archive::archive_ids(pr)?;
    for (archive_id, sid) in ids.into_iter().filter(|(_, s)| *s == sysid) {
        let _ = sid;
        let a = repo.catalog().foreign_archive(&ForeignArchive {
            id: 0,
            db_id: db.id,
            tool: PGBACKREST.into(),
            location: location.to_string(),
            config: l
                .config
                .as_ref()
                .map(|c| c.display().to_string())
                .unwrap_or_default(),
            stanza: l.stanza.clone(),
            archive_id: archive_id.clone(),
        })?;
        let files: Vec<ForeignWalRecord> = archive::list(pr, &archive_id)?
            .into_iter()
            .map(|w| ForeignWalRecord {
                archive: a.id,
                db_id: db.id,
                name: w.name,
                path: w.path,
                stored_size: w.stored_size,
                archived_at: w.archived_at,
                checksum: w.checksum,
            })
            .collect();
        let added = repo.catalog().add_foreign_wal(&files)?;
        report.wal_added += added;
        report.wal_known += files.len() - added;
    }
    Ok(())
}

/// recman's manifest of pgBackRest backup `o`.
fn manifest_of(
    o: &PgbrOpened,
    db: &DbRecord,
    id: String,
    origin: ManifestOrigin,
    parent: Option<String>,
    major: u32,
    root: &Path,
) -> Result<BackupManifest, EngineError> {
    use std::os::unix::fs::MetadataExt;
    let pm = &o.manifest;
    let owner = std::fs::metadata(root)
        .map(|m| (m.uid(), m.gid()))
        .unwrap_or((0, 0));
    let control = small_file(o, "global/pg_control")?;
    let (seg, checksums) = control_facts(major, &control);
    let label = String::from_utf8_lossy(&small_file(o, "backup_label")?).into_owned();
    let map = String::from_utf8_lossy(&small_file(o, "tablespace_map")?).into_owned();
    let tli = u32::from_str_radix(pm.archive_start.get(..8).unwrap_or("1"), 16).unwrap_or(1);
    Ok(BackupManifest {
        format: MANIFEST_FORMAT.into(),
        version: MANIFEST_VERSION,
        backup_id: id,
        db_name: db.name.clone(),
        system_identifier: pm.system_id,
        pg_version: major * 10_000,
        tag: pm.label.to_uppercase(),
        backup_type: FOREIGN.into(),
        start_lsn: pm.lsn_start.clone(),
        stop_lsn: pm.lsn_stop.clone(),
        timeline: tli,
        start_wal: pm.archive_start.clone(),
        stop_wal: pm.archive_stop.clone(),
        start_time: rfc3339(pm.time_start * 1_000_000),
        stop_time: rfc3339(pm.time_stop * 1_000_000),
        stop_next_xid: 0,
        wal_segment_size: seg,
        compression: format!("{:?}", pm.codec).to_lowercase(),
        channels: 1,
        filesperset: 0,
        maxopenfiles: 0,
        checksums_enabled: checksums,
        backup_label: label,
        tablespace_map: map,
        incremental_level: None,
        cumulative: false,
        parent,
        parent_start_lsn: None,
        read: None,
        origin: Some(origin),
        tablespaces: pm
            .tablespaces
            .iter()
            .map(|(oid, name, location)| ManifestTablespace {
                oid: *oid,
                name: name.clone(),
                location: location.clone(),
            })
            .collect(),
        entries: entries(&pm.entries, owner),
        sets: Vec::new(),
        corrupt_blocks: Vec::new(),
    })
}

/// Whether `dir` is a backup pg_basebackup wrote (it holds its `backup_manifest`). Here, not
/// with the pg_basebackup reader, because that reader records its backups through this file.
fn is_basebackup_dir(dir: &Path) -> bool {
    dir.join("backup_manifest").is_file()
}
