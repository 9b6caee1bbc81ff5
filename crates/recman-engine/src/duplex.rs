//! RMAN's COPIES n (duplexed backup sets): each piece of a finished backup is written again to
//! another location, one per further copy, and recorded as a copy of the same piece. Restore
//! reads a piece from the first of its copies that reads intact, so a damaged or lost copy
//! falls back to the next one. The further copies are made from the first, checked against
//! the size and checksum the catalog recorded for it while they stream, before the command
//! returns; a failure leaves the backup AVAILABLE with the copies made so far recorded.

use std::io::Read;

use recman_catalog::CopyRecord;
use recman_format::FOOTER_LEN;

use crate::context::Context;
use crate::error::EngineError;
use crate::piece_format::{PieceFormat, PieceVars};
use crate::pipeline::{ObjectWriter, OutputShape};
use crate::progress::Progress;
use crate::util::now_micros;

/// Most copies of a piece, as in RMAN.
pub const MAX_COPIES: u32 = 4;

/// What one further copy of a backup wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplexReport {
    pub copy: u32,
    pub device: String,
    pub pieces: usize,
    pub bytes: u64,
}

/// Writes copies 2, 3, … of every piece of backup `backup_id`, copy `i + 2` under
/// `targets[i]`. Each target must be a location of its own: not the first copy's, not another
/// target's.
pub fn duplex_backup(
    ctx: &Context,
    backup_id: &str,
    targets: &[PieceFormat],
    progress: &dyn Progress,
) -> Result<Vec<DuplexReport>, EngineError> {
    let cat = ctx.repo.catalog();
    let rec = cat.backup(backup_id)?.ok_or_else(|| {
        EngineError::from(crate::refusal::Backups::NotInCatalog {
            backup_id: backup_id.to_string(),
            repo: ctx.repo.location().to_string(),
        })
    })?;
    let pieces = cat.pieces(backup_id)?;
    let mut seen: Vec<String> = Vec::new();
    if let Some(p) = pieces.first() {
        seen.extend(cat.copies_of(&p.path)?.into_iter().map(|c| c.device));
        if seen.is_empty() {
            seen.push(crate::devices::repository_device(&ctx.repo).to_string());
        }
    }
    let mut out = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let copy = i as u32 + 2;
        let device = t.device();
        if seen.contains(&device) {
            return Err(crate::refusal::Backups::CopiesShareDir {
                copy,
                backup_id: backup_id.to_string(),
                dir: t.dir.display().to_string(),
            }
            .into());
        }
        seen.push(device.clone());
        let media = crate::devices::media_for(&ctx.repo, &device)?;
        let total: u64 = pieces.iter().map(|p| p.size).sum();
        progress.start(&format!("copy {copy} of {backup_id}"), total);
        let mut rep = DuplexReport {
            copy,
            device: device.clone(),
            pieces: 0,
            bytes: 0,
        };
        for p in &pieces {
            let vars = PieceVars {
                backup_id,
                db_name: &ctx.db.name,
                system_identifier: ctx.db.system_identifier,
                set_no: p.set_no,
                piece_no: p.piece_no,
                created_unix: rec.start_time / 1_000_000,
            };
            let name = t.expand_copy(&vars, copy)?;
            let n = copy_piece(ctx, &p.path, (p.size, p.crc32c), media.as_ref(), &name)?;
            cat.add_copy(&CopyRecord {
                object: p.path.clone(),
                device: device.clone(),
                name,
                size: n,
                crc32c: p.crc32c,
                primary: false,
                created: now_micros(),
            })?;
            rep.pieces += 1;
            rep.bytes += n;
            progress.advance(p.size);
        }
        progress.finish();
        out.push(rep);
    }
    Ok(out)
}

/// Streams piece `rel` from where restore would read it to `name` on `media`, committing only
/// when its size and checksum (of every byte before the footer) are the recorded ones.
fn copy_piece(
    ctx: &Context,
    rel: &str,
    (size, want): (u64, u32),
    media: &dyn recman_media::Media,
    name: &str,
) -> Result<u64, EngineError> {
    let mut src = crate::pieces::open(&ctx.repo, rel)?;
    let mut out = ObjectWriter::create(media, &media.describe(), name, OutputShape::default())?;
    let body = size.saturating_sub(FOOTER_LEN as u64);
    let mut buf = vec![0u8; 1 << 20];
    let (mut n, mut crc) = (0u64, 0u32);
    loop {
        let k = src
            .read(&mut buf)
            .map_err(|e| crate::util::media_io(&ctx.repo, rel, "read", e))?;
        if k == 0 {
            break;
        }
        let take = body.saturating_sub(n).min(k as u64) as usize;
        crc = crc32c::crc32c_append(crc, &buf[..take]);
        out.write(&buf[..k])?;
        n += k as u64;
    }
    if n != size || crc != want {
        out.abort();
        return Err(EngineError::Corrupt(format!(
            "backup piece {rel} read back as size {n} checksum {crc:08x}, not the recorded size {size} checksum {want:08x}; its copy was not written; hint: run `recman validate backup`"
        )));
    }
    out.commit()?;
    Ok(n)
}
