//! Backup optimization (RMAN's CONFIGURE BACKUP OPTIMIZATION ON): a full or level 0 backup
//! does not write again a file identical to its version in the newest complete full backup
//! (same size and modification time, untouched since that backup started, and the same
//! CRC-32C when read now). Such a file is recorded in the manifest with no piece, and the new
//! backup names the reference as its parent: restore takes the file from there, and retention
//! keeps the reference as long as the new backup is kept. Frozen databases, read-only
//! tablespaces and cold tables are not copied to tape every week.

use crate::source::{DataSource, ReadAt};
use std::collections::HashMap;

use recman_catalog::BackupStatus;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry};

use crate::context::Context;
use crate::error::EngineError;
use crate::scan::{Scan, ScannedFile};

/// Files left out of a backup because the reference holds them unchanged.
pub(super) struct Unchanged {
    pub reference: String,
    pub reference_start_lsn: u64,
    pub entries: Vec<ManifestEntry>,
    pub bytes: u64,
}

/// The newest AVAILABLE full or level 0 backup that is complete by itself (no parent).
fn reference(ctx: &Context) -> Result<Option<BackupManifest>, EngineError> {
    let mut all = ctx.repo.catalog().backups(ctx.db.id)?;
    all.reverse();
    for b in all {
        let full = b.backup_type.eq_ignore_ascii_case("FULL")
            || b.backup_type.eq_ignore_ascii_case("LEVEL0");
        if b.status != BackupStatus::Available || !full {
            continue;
        }
        let m = crate::manifest_io::load_manifest(ctx, &b.id)?;
        if m.parent.is_none() {
            return Ok(Some(m));
        }
    }
    Ok(None)
}

/// Removes from `scan` the files identical to the reference's, returning their entries.
pub(super) fn take_unchanged(
    ctx: &Context,
    source: &dyn DataSource,
    scan: &mut Scan,
) -> Result<Option<Unchanged>, EngineError> {
    let Some(m) = reference(ctx)? else {
        return Ok(None);
    };
    let started = chrono::DateTime::parse_from_rfc3339(&m.start_time)
        .map(|t| t.timestamp())
        .unwrap_or(i64::MIN);
    let whole: HashMap<&str, &ManifestEntry> = m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File && !e.incremental && e.sections.is_empty())
        .map(|e| (e.path.as_str(), e))
        .collect();
    let mut out = Unchanged {
        reference: m.backup_id.clone(),
        reference_start_lsn: m
            .start_lsn
            .parse::<recman_pg::Lsn>()
            .map(|l| l.0)
            .unwrap_or(0),
        entries: Vec::new(),
        bytes: 0,
    };
    let mut keep = Vec::with_capacity(scan.files.len());
    for f in std::mem::take(&mut scan.files) {
        match whole.get(f.rel.as_str()) {
            // A second of margin: mtime has one-second resolution in the manifest.
            Some(e)
                if e.size == Some(f.size)
                    && e.mtime == f.mtime
                    && f.mtime < started - 1
                    && matches!(crc_of(&f, source)?, Some(c) if Some(c) == e.crc32c) =>
            {
                out.bytes += f.size;
                out.entries.push(entry(&f, e));
            }
            _ => keep.push(f),
        }
    }
    scan.files = keep;
    Ok((!out.entries.is_empty()).then_some(out))
}

/// The file's CRC-32C now; None when it cannot be read (it is then backed up normally,
/// and the channel reports whatever is wrong with it).
fn crc_of(f: &ScannedFile, source: &dyn DataSource) -> Result<Option<u32>, EngineError> {
    let Ok((file, _)) = source.open(
        &source.path_of(&f.rel),
        crate::read_mode::ReadMode::Buffered,
        crate::source::WHOLE,
    ) else {
        return Ok(None);
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0u32;
    let mut at = 0u64;
    loop {
        match file.read_at(&mut buf, at) {
            Ok(0) => return Ok(Some(crc)),
            Ok(n) => {
                crc = crc32c::crc32c_append(crc, &buf[..n]);
                at += n as u64;
            }
            Err(_) => return Ok(None),
        }
    }
}

/// The entry of a file left in the reference: no set, no blocks of its own.
fn entry(f: &ScannedFile, reference: &ManifestEntry) -> ManifestEntry {
    ManifestEntry {
        path: f.rel.clone(),
        kind: EntryKind::File,
        mode: f.mode,
        uid: f.uid,
        gid: f.gid,
        mtime: f.mtime,
        size: Some(f.size),
        crc32c: reference.crc32c,
        set_no: None,
        link_target: None,
        volatile_blocks: Vec::new(),
        incremental: true,
        sections: Vec::new(),
    }
}
