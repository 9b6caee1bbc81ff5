//! Change-tracking summaries of archived WAL segments (see `recman_pg::walsummary`): built by
//! archive-push from the segment bytes it already holds, stored next to the segment's object
//! as `<name>.rmb`, a one-file piece written by the same writer as the WAL itself (so the
//! repository's compression, checksums and encryption apply to both).

use super::WAL_CHUNK;
use crate::error::EngineError;
use crate::pipeline::{OutputShape, SetWriter};
use recman_catalog::{DbRecord, Media, Repository};
use recman_format::Compression;
use recman_pg::walsummary::SegmentSummary;

/// The summary object of WAL segment `name`.
pub fn summary_path(db: &str, name: &str) -> String {
    format!("{}/{name}.rmb", recman_catalog::layout::wal_dir(db, name))
}

/// The first LSN of segment `name` (a 24-hex-digit segment name) of `seg_size` bytes.
pub fn segment_lsn(name: &str, seg_size: u64) -> Option<u64> {
    let log = u64::from_str_radix(name.get(8..16)?, 16).ok()?;
    let seg = u64::from_str_radix(name.get(16..24)?, 16).ok()?;
    Some(log * 0x1_0000_0000 + seg * seg_size)
}

/// Builds and stores the summary of segment `name` (`data`: its bytes, already checked to be
/// a WAL segment of this cluster); returns the stored size. The caller stores the segment
/// afterwards, so a summary never stands for a segment that failed to store with other
/// content.
pub(super) fn store_summary(
    media: &dyn Media,
    location: &str,
    db: &DbRecord,
    name: &str,
    data: &[u8],
    compression: Compression,
) -> Result<u64, EngineError> {
    let seg_lsn = segment_lsn(name, data.len() as u64).ok_or_else(|| {
        EngineError::from(crate::refusal::Wal::NotSegment {
            name: name.to_string(),
            for_: crate::refusal::SegmentUse::Summary,
        })
    })?;
    let summary = SegmentSummary::build(data, seg_lsn)
        .map_err(|e| EngineError::Corrupt(format!("wal segment {name}: {e}")))?;
    let bytes = summary.encode();
    let rel = summary_path(&db.name, name);
    let header = super::object_header(db, format!("{name}.rmb"), compression);
    let mut w = SetWriter::create(media, location, &rel, &header, OutputShape::default())?;
    w.whole_file(0, &bytes, WAL_CHUNK)?;
    Ok(w.finish()?.size)
}

/// The stored summary of segment `name`: None when there is none (archived without one, or
/// removed); an error when one is there but cannot be read intact.
pub fn read_summary(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
) -> Result<Option<SegmentSummary>, EngineError> {
    let rel = summary_path(&db.name, name);
    let f = match repo.media().open(&rel) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => {
            return Err(EngineError::Transient(format!(
                "change-tracking summary {rel} in repository {}: {e}; hint: check the repository, or remove the summary so a level 1 scans instead",
                repo.location()
            )));
        }
    };
    let mut out = Vec::new();
    super::read::read_wal_object(&rel, f, None, None, &mut out).map_err(|why| {
        EngineError::Corrupt(format!(
            "change-tracking summary {rel} in repository {}: {why}; hint: remove it, a level 1 then scans instead",
            repo.location()
        ))
    })?;
    SegmentSummary::decode(&out)
        .map(Some)
        .map_err(|e| EngineError::Corrupt(format!("{rel}: {e}")))
}
