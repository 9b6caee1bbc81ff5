//! What a backup read from the cluster (`read_bytes`, beside the database's size and what was
//! written), and how much of it change tracking chose: recorded in the catalog and the
//! manifest for `list backup`, and said in the backup's summary.

use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
use crate::tracking::Tracking;
use recman_catalog::IoStatRow;
use std::sync::atomic::Ordering;

pub(crate) fn record(
    ctx: &Context,
    backup_id: &str,
    stats: &[IoStatRow],
    tracking: Option<&Tracking>,
    progress: &dyn Progress,
) -> Result<recman_format::manifest::ManifestRead, EngineError> {
    let read: u64 = stats
        .iter()
        .filter(|r| r.kind == "AGGREGATE")
        .map(|r| r.bytes)
        .sum();
    let (tracked, files, covered) = tracking.map_or((0, 0, 0), |t| {
        (
            t.read_bytes.load(Ordering::Relaxed),
            t.files.load(Ordering::Relaxed),
            t.file_bytes.load(Ordering::Relaxed),
        )
    });
    if let Some(t) = tracking {
        progress.notice(&format!(
            "change tracking: read {tracked} of {covered} bytes of {files} relation file(s) through the summaries of {} WAL segment(s); {read} bytes read in all",
            t.segments
        ));
    }
    ctx.repo
        .catalog()
        .set_backup_read(backup_id, read, tracked, files)?;
    Ok(recman_format::manifest::ManifestRead {
        read_bytes: read,
        tracked_bytes: tracked,
        tracked_files: files,
    })
}
