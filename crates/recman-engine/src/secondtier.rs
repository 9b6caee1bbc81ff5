//! Second-tier backups: `backup backupset` copies backups already in the repository to another
//! device, and `backup recovery-area` copies every backup and all archived WAL (the seeds'
//! weekly copy to tape). Each copied object is checked against what the catalog recorded
//! while it streams, and recorded as a copy, which restore falls back to.

use std::io::Read;

use recman_catalog::{BackupStatus, CopyRecord};
use recman_format::FOOTER_LEN;

use crate::context::Context;
use crate::error::EngineError;
use crate::pipeline::{ObjectWriter, OutputShape};
use crate::progress::Progress;
use crate::util::now_micros;

/// What a second-tier command copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyReport {
    pub device: String,
    pub backups: Vec<String>,
    pub objects: usize,
    /// Objects that already had a copy on the device.
    pub already: usize,
    pub bytes: u64,
    pub wal_files: usize,
}

/// Copies backup `which` (an id or tag; None: every AVAILABLE backup) to `device`.
pub fn backup_backupsets(
    ctx: &Context,
    which: Option<&str>,
    device: &str,
    progress: &dyn Progress,
) -> Result<CopyReport, EngineError> {
    let _lock = ctx.repo.lock("backup backupset")?;
    let ids = match which {
        Some(w) => vec![crate::validate::find_backup(ctx, Some(w))?],
        None => ctx
            .repo
            .catalog()
            .backups(ctx.db.id)?
            .into_iter()
            .filter(|b| b.status == BackupStatus::Available)
            .collect(),
    };
    let mut rep = CopyReport {
        device: device.to_string(),
        ..Default::default()
    };
    for b in ids {
        if b.status != BackupStatus::Available {
            return Err(crate::refusal::Backups::NotAvailable {
                backup_id: b.id.clone(),
                status: b.status.as_str().to_string(),
                for_: crate::refusal::Unavailable::Copy,
            }
            .into());
        }
        copy_backup(ctx, &b.id, device, &mut rep, progress)?;
        rep.backups.push(b.id);
    }
    Ok(rep)
}

/// Copies every AVAILABLE backup and every archived WAL file to `device`.
pub fn backup_recovery_area(
    ctx: &Context,
    device: &str,
    progress: &dyn Progress,
) -> Result<CopyReport, EngineError> {
    let mut rep = backup_backupsets(ctx, None, device, progress)?;
    let _lock = ctx.repo.lock("backup recovery-area")?;
    for w in ctx.repo.catalog().wal_list(ctx.db.id)? {
        if ctx.repo.object_size(&w.path)?.is_none() {
            // Moved into a WAL backup set (DELETE INPUT): copied with that backup.
            continue;
        }
        if copy_object(ctx, &w.path, device, None, &mut rep)? {
            rep.wal_files += 1;
        }
    }
    Ok(rep)
}

fn copy_backup(
    ctx: &Context,
    id: &str,
    device: &str,
    rep: &mut CopyReport,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    let pieces = ctx.repo.catalog().pieces(id)?;
    progress.start(
        &format!("copy {id} to {device}"),
        pieces.iter().map(|p| p.size).sum(),
    );
    for p in &pieces {
        copy_object(ctx, &p.path, device, Some((p.size, p.crc32c)), rep)?;
        progress.advance(p.size);
    }
    // The manifest goes too, so the device alone describes the backup.
    let manifest = recman_catalog::layout::manifest(&ctx.db.name, id);
    copy_object(ctx, &manifest, device, None, rep)?;
    progress.finish();
    Ok(())
}

/// Streams one object to `device`; with `piece` = (size, crc32c) the bytes are checked
/// against the piece's recorded size and checksum (of every byte before the footer) before
/// the copy is committed. Returns false when the device already held a copy.
fn copy_object(
    ctx: &Context,
    rel: &str,
    device: &str,
    piece: Option<(u64, u32)>,
    rep: &mut CopyReport,
) -> Result<bool, EngineError> {
    let target = crate::devices::media_for(&ctx.repo, device)?;
    if std::sync::Arc::ptr_eq(&target, ctx.repo.media()) {
        return Err(crate::refusal::Input::DeviceIsRepository {
            device: device.to_string(),
        }
        .into());
    }
    let known = ctx.repo.catalog().copies_of(rel)?;
    if known.iter().any(|c| c.device == device) {
        rep.already += 1;
        return Ok(false);
    }
    let mut src = crate::pieces::open(&ctx.repo, rel)?;
    let mut out = ObjectWriter::create(
        target.as_ref(),
        &target.describe(),
        rel,
        OutputShape::default(),
    )?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut n, mut crc, mut crc_body) = (0u64, 0u32, 0u32);
    let body_len = piece.map(|(size, _)| size.saturating_sub(FOOTER_LEN as u64));
    let slow = crate::fault::slow_read_of(rel);
    loop {
        if let Some(d) = slow {
            std::thread::sleep(d);
        }
        if let Some(signal) = crate::stop::requested() {
            out.abort();
            return Err(EngineError::Stopped {
                signal,
                done: format!(
                    ": {} object(s) copied to {device} are complete and recorded, the copy of {rel} in progress was discarded; hint: run the command again to copy the rest",
                    rep.objects
                ),
            });
        }
        let k = src
            .read(&mut buf)
            .map_err(|e| crate::util::media_io(&ctx.repo, rel, "read", e))?;
        if k == 0 {
            break;
        }
        let chunk = &buf[..k];
        if let Some(body) = body_len {
            let take = body.saturating_sub(n).min(k as u64) as usize;
            crc_body = crc32c::crc32c_append(crc_body, &chunk[..take]);
        }
        crc = crc32c::crc32c_append(crc, chunk);
        out.write(chunk)?;
        n += k as u64;
    }
    if let Some((size, want)) = piece
        && (n != size || crc_body != want)
    {
        out.abort();
        return Err(EngineError::Corrupt(format!(
            "backup piece {rel} in repository {} is not the piece the catalog recorded (size {n}, expected {size}; checksum {crc_body:08x}, expected {want:08x}); nothing was copied; hint: run `recman validate backup` and `recman crosscheck`",
            ctx.repo.location()
        )));
    }
    out.commit()?;
    ctx.repo.catalog().add_copy(&CopyRecord {
        object: rel.to_string(),
        device: device.to_string(),
        name: rel.to_string(),
        size: n,
        crc32c: piece.map(|(_, c)| c).unwrap_or(crc),
        primary: false,
        created: now_micros(),
    })?;
    rep.objects += 1;
    rep.bytes += n;
    Ok(true)
}

/// Copies backup `id` of database `db` object by object from repository `from` into
/// repository `to` (another of the same databases' repositories, docs/repositories.md) and
/// catalogues it there. The manifest goes last: a copy interrupted before it is no backup in
/// `to`, and the next copy writes it again. Returns the bytes copied.
pub fn copy_backup_between(
    from: &recman_catalog::Repository,
    to: &recman_catalog::Repository,
    db: &str,
    id: &str,
) -> Result<u64, EngineError> {
    let dir = recman_catalog::Repository::backup_dir(db, id);
    let mut objects = from.list_objects(&format!("{dir}/"))?;
    let manifest = recman_catalog::layout::manifest(db, id);
    if !objects.iter().any(|o| o.name == manifest) {
        return Err(EngineError::NotFound(format!(
            "backup {id} of database {db:?} has no manifest in repository {}; nothing was copied; hint: `recman list backup` shows the backups there",
            from.location()
        )));
    }
    objects.sort_by_key(|o| o.name == manifest);
    let mut bytes = 0;
    for o in &objects {
        let mut r = from.open_object(&o.name)?;
        let mut w = to.create_atomic(&o.name)?;
        bytes += std::io::copy(&mut r, &mut w)
            .map_err(|e| EngineError::io("copy backup object", &o.name, e))?;
        w.commit()?;
    }
    let _lock = to.lock("copy backup")?;
    let r = crate::rebuild::rebuild_catalog(to, &format!("{dir}/"))?;
    if let Some((path, why)) = r.skipped.first() {
        return Err(EngineError::Invalid(format!(
            "backup {id} was copied into repository {} but cannot be catalogued there: {path}: {why}; hint: register database {db:?} there with the same cluster",
            to.location()
        )));
    }
    Ok(bytes)
}
