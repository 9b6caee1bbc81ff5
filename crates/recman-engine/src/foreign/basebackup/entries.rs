//! From what a pg_basebackup backup holds and what its manifest lists to the entries recman
//! records and reads: files checked against the manifest, the WAL pg_basebackup copied
//! (which the manifest leaves out: WAL records carry their own CRCs), directories, and the
//! tablespaces' links.

use super::super::record::control_facts;
use super::super::{EntryKind, ForeignEntry, ImportError};
use super::incremental;
use super::manifest::{Manifest, ManifestFile};
use super::store::{Found, Listing};
use super::tar::Kind;
use recman_format::manifest::{BackupManifest, ManifestTablespace};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Left out of a restore: the manifest itself, and the signal files `pg_basebackup -R`
/// writes, which would start the restored cluster as a standby; recman's recovery set-up
/// writes its own.
const SKIPPED: &[&str] = &["backup_manifest", "standby.signal", "recovery.signal"];

/// `pg_basebackup -R` appends to it after the manifest was made: when it differs from
/// the manifest, it is restored as found.
const REWRITTEN: &str = "postgresql.auto.conf";

/// What the backup says of itself, beyond its file list.
pub struct Facts {
    pub major: u32,
    pub system_identifier: u64,
    pub wal_segment_size: u64,
    pub checksums: bool,
    pub start_time: i64,
    pub stop_time: i64,
    pub backup_label: String,
    /// An incremental backup's prior: its start LSN and timeline.
    pub incremental_from: Option<(recman_pg::Lsn, u32)>,
    pub tablespace_map: String,
    pub tablespaces: Vec<ManifestTablespace>,
}

fn text(l: &Listing, path: &str) -> String {
    l.kept
        .get(path)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// The prior backup an incremental backup's label names: (start LSN, timeline).
fn incremental_from(label: &str) -> Option<(recman_pg::Lsn, u32)> {
    let field = |k: &str| label.lines().find_map(|l| l.strip_prefix(k)).map(str::trim);
    let lsn = field("INCREMENTAL FROM LSN: ")?.parse().ok()?;
    let tli = field("INCREMENTAL FROM TLI: ")?.parse().ok()?;
    Some((lsn, tli))
}

/// backup_label's START TIME when PostgreSQL wrote it in UTC.
fn label_start(label: &str) -> Option<i64> {
    let line = label.lines().find_map(|l| l.strip_prefix("START TIME: "))?;
    let (at, zone) = line.rsplit_once(' ')?;
    if !matches!(zone, "UTC" | "GMT") {
        return None;
    }
    chrono::NaiveDateTime::parse_from_str(at, "%Y-%m-%d %H:%M:%S")
        .ok()
        .map(|t| t.and_utc().timestamp())
}

impl Facts {
    pub fn of(bm: &Manifest, l: &Listing, dir: &Path) -> Result<Facts, ImportError> {
        let version = text(l, "PG_VERSION");
        let major: u32 = version.trim().parse().map_err(|_| {
            ImportError::from(crate::refusal::Import::UnsupportedPostgres {
                what: format!("pg_basebackup backup {}", dir.display()),
                version: version.trim().to_string(),
            })
        })?;
        let control = l.kept.get("global/pg_control").cloned().unwrap_or_default();
        let from_control = control
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        let Some(system_identifier) = bm.system_identifier.or(from_control) else {
            return Err(ImportError::Corrupt(format!(
                "pg_basebackup backup {} holds no global/pg_control; hint: the backup is incomplete: take it again",
                dir.display()
            )));
        };
        let (wal_segment_size, checksums) = control_facts(major, &control);
        let label = text(l, "backup_label");
        let incremental_from = incremental_from(&label);
        // PostgreSQL refuses to start from a label that names a prior backup; the restored
        // directory is whole, as pg_combinebackup's output is.
        let backup_label: String = label
            .lines()
            .filter(|l| !l.starts_with("INCREMENTAL FROM "))
            .map(|l| format!("{l}\n"))
            .collect();
        // The manifest is written last: its time is after the backup's end, never before.
        let stop_time = std::fs::metadata(dir.join("backup_manifest"))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64);
        let label_mtime = l.found.get("backup_label").map(|f| f.mtime);
        let start_time = label_start(&backup_label)
            .or(label_mtime)
            .unwrap_or(stop_time)
            .min(stop_time);
        let tablespace_map = text(l, "tablespace_map");
        Ok(Facts {
            major,
            system_identifier,
            wal_segment_size,
            checksums,
            start_time,
            stop_time,
            tablespaces: tablespaces(l, &tablespace_map),
            backup_label,
            incremental_from,
            tablespace_map,
        })
    }
}

/// The tablespaces: from tablespace_map (tar format), else from pg_tblspc's links (plain).
fn tablespaces(l: &Listing, map: &str) -> Vec<ManifestTablespace> {
    let mut out: BTreeMap<u32, String> = BTreeMap::new();
    for line in map.lines() {
        if let Some((oid, loc)) = line.split_once(' ')
            && let Ok(oid) = oid.parse()
        {
            out.insert(oid, loc.to_string());
        }
    }
    for (path, f) in &l.found {
        if let Some(oid) = path.strip_prefix("pg_tblspc/").and_then(|o| o.parse().ok())
            && f.kind == Kind::Symlink
        {
            out.entry(oid).or_insert_with(|| f.link.clone());
        }
    }
    out.into_iter()
        .map(|(oid, location)| ManifestTablespace {
            oid,
            name: String::new(),
            location,
        })
        .collect()
}

fn entry(path: &str, f: &Found, kind: EntryKind) -> ForeignEntry {
    ForeignEntry {
        path: path.to_string(),
        kind,
        mode: f.mode,
        mtime: f.mtime,
        size: f.size,
        ..ForeignEntry::default()
    }
}

/// The entries to record for backup `location`; a file the manifest lists and the backup
/// does not hold refuses the import.
pub fn foreign_entries(
    bm: &Manifest,
    l: &Listing,
    location: &str,
) -> Result<Vec<ForeignEntry>, ImportError> {
    let listed: HashMap<&str, &ManifestFile> =
        bm.files.iter().map(|f| (f.path.as_str(), f)).collect();
    let ts = tablespaces(l, &text(l, "tablespace_map"));
    let mut out = Vec::new();
    for (path, f) in &l.found {
        if SKIPPED.contains(&path.as_str()) {
            continue;
        }
        let link = path
            .strip_prefix("pg_tblspc/")
            .and_then(|o| o.parse::<u32>().ok())
            .and_then(|oid| ts.iter().find(|t| t.oid == oid));
        if let Some(t) = link {
            out.push(ForeignEntry {
                link_target: Some(t.location.clone()),
                mode: 0o777,
                ..entry(path, f, EntryKind::Symlink)
            });
            continue;
        }
        match f.kind {
            Kind::Dir => out.push(entry(path, f, EntryKind::Dir)),
            Kind::Symlink => out.push(ForeignEntry {
                link_target: Some(f.link.clone()),
                ..entry(path, f, EntryKind::Symlink)
            }),
            Kind::File if incremental::full_name(path).is_some() => {
                let full = incremental::full_name(path).expect("checked");
                let size = incremental::rebuilt_size(&Path::new(location).join(path))?;
                out.push(ForeignEntry {
                    size,
                    ..entry(&full, f, EntryKind::File)
                });
            }
            Kind::File => match listed.get(path.as_str()) {
                Some(m) if path == REWRITTEN && m.size != f.size => {
                    out.push(entry(path, f, EntryKind::File));
                }
                Some(m) => out.push(ForeignEntry {
                    size: m.size,
                    checksum: m.checksum.clone(),
                    ..entry(path, f, EntryKind::File)
                }),
                None if path.starts_with("pg_wal/") => out.push(entry(path, f, EntryKind::File)),
                // Not part of the backup the manifest describes (something put there later).
                None => {}
            },
            Kind::Other => {}
        }
    }
    if let Some(missing) = bm.files.iter().find(|m| !l.found.contains_key(&m.path)) {
        return Err(ImportError::Corrupt(format!(
            "pg_basebackup backup {location} does not hold {}, which its backup_manifest lists; hint: the backup is incomplete: check it with pg_verifybackup, or take it again",
            missing.path
        )));
    }
    Ok(out)
}

/// The entries of imported backup `m` to read, each file with the manifest's checksum
/// (none for the WAL, and for a file recorded as found rather than as listed).
pub fn opened_entries(
    m: &BackupManifest,
    bm: &Manifest,
    location: &str,
) -> Result<Vec<ForeignEntry>, ImportError> {
    let listed: HashMap<&str, &ManifestFile> =
        bm.files.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut out = Vec::new();
    for e in &m.entries {
        let size = e.size.unwrap_or(0);
        let checksum = match listed.get(e.path.as_str()) {
            Some(f) if f.size == size => f.checksum.clone(),
            Some(_) if e.path == REWRITTEN => None,
            Some(f) => {
                return Err(crate::refusal::Import::ManifestChanged {
                    location: location.to_string(),
                    path: e.path.to_string(),
                    size: f.size,
                    recorded: size,
                }
                .into());
            }
            None => None,
        };
        out.push(ForeignEntry {
            path: e.path.clone(),
            kind: e.kind,
            mode: e.mode,
            mtime: e.mtime,
            size,
            link_target: e.link_target.clone(),
            checksum,
            ..ForeignEntry::default()
        });
    }
    Ok(out)
}

/// Whether every segment from the backup's start to its end is in its pg_wal, whole.
pub fn holds_wal(m: &BackupManifest, entries: &[ForeignEntry]) -> bool {
    let (Ok(start), Ok(stop)) = (m.start_lsn.parse(), m.stop_lsn.parse()) else {
        return false;
    };
    let have: HashMap<&str, u64> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| (e.path.as_str(), e.size))
        .collect();
    recman_pg::wal_segments_between(m.timeline, start, stop, m.wal_segment_size)
        .iter()
        .all(|w| have.get(format!("pg_wal/{w}").as_str()) == Some(&m.wal_segment_size))
}
