//! How archived-log backups are reported (BACKUP ARCHIVELOG ALL and the steps of BACKUP
//! DATABASE PLUS ARCHIVELOG, run by the shared executor), and DELETE ARCHIVELOG ALL BACKED UP
//! N TIMES.

use anyhow::{Result, anyhow};
use clap::Args;
use recman_catalog::MediaStatus;
use recman_engine::{ArchivelogReport, Context};

use super::maint::{confirm, say_deleted};
use crate::cli::Global;
use crate::list::{size, time};

#[derive(Args, Debug)]
pub struct ArchivelogBackupArgs {
    /// Which archived WAL: `all` (every AVAILABLE file in the repository's archive).
    #[arg(value_parser = ["all"])]
    pub which: String,
    /// Only WAL held by fewer than N available backups (RMAN's NOT BACKED UP N TIMES).
    /// Range: 1 to 10000.
    #[arg(long, value_name = "N",
          value_parser = crate::input::count::<u32>(crate::input::COPIES))]
    pub not_backed_up: Option<u32>,
    /// Remove the backed-up segments from the archive once they are in the completed backup;
    /// archive-get then reads them from the backup set.
    #[arg(long)]
    pub delete_input: bool,
    /// none, lz4, zstd or zstd:LEVEL. Default: `configure compression`, else none.
    #[arg(long)]
    pub compress: Option<String>,
    /// Most WAL files in one backup set. Default: `configure filesperset`, else built in.
    /// Range: 1 to 1000000.
    #[arg(long, value_parser = crate::input::count::<u32>(crate::input::FILESPERSET))]
    pub filesperset: Option<u32>,
    #[arg(long, value_parser = crate::input::Name)]
    pub tag: Option<String>,
    /// Write the pieces in a directory of your own, named from a template with RMAN's
    /// substitution variables, e.g. /srv/backup/arc_%U.rbf (RMAN's FORMAT).
    #[arg(long, value_name = "TEMPLATE")]
    pub format: Option<String>,
}

/// How an archived-log backup is reported (BACKUP ARCHIVELOG and PLUS ARCHIVELOG's steps).
pub fn say_archivelog(g: &Global, r: &ArchivelogReport) {
    if g.quiet {
        return;
    }
    match &r.record {
        None => println!("no archived logs to back up"),
        Some(b) => println!(
            "archivelog backup {} tag {} completed: {} archived log(s) {} .. {}, {} sets, {} read, {} written, {:.1}s, status {}",
            b.id,
            b.tag,
            r.wal.len(),
            r.wal.first().map(String::as_str).unwrap_or(""),
            r.wal.last().map(String::as_str).unwrap_or(""),
            r.sets,
            size(b.db_bytes),
            size(b.written_bytes),
            r.elapsed.as_secs_f64(),
            b.status
        ),
    }
    for w in &r.deleted {
        println!("deleted archived log (input)\narchived log file name={w}");
    }
}

/// `delete archivelog all --backed-up N`: archived segments held by at least N available
/// backups. Safe for recovery because archive-get reads them from those backups. Timeline
/// history files stay: recovery asks for them first, and they are tiny. Called under the
/// repository lock.
pub fn delete_backed_up(ctx: &Context, n: u32, noprompt: bool) -> Result<()> {
    if n == 0 {
        return Err(anyhow!(
            "--backed-up must be at least 1; hint: `delete archivelog all` without it removes the wal no available backup needs"
        ));
    }
    let cat = ctx.repo.catalog();
    let counts = cat.wal_backup_counts(ctx.db.id)?;
    let chosen: Vec<_> = cat
        .wal_states(ctx.db.id)?
        .into_iter()
        .filter(|(w, st)| {
            *st == MediaStatus::Available
                && !w.name.ends_with(".history")
                && counts.get(&w.name).copied().unwrap_or(0) >= n
        })
        .map(|(w, _)| w)
        .collect();
    if chosen.is_empty() {
        println!("no archived logs found that are backed up {n} time(s)");
        return Ok(());
    }
    for w in &chosen {
        println!(
            "{:<20} {:<26} {:<19} backed up {} time(s)",
            "Archive Log",
            w.name,
            time(Some(w.archived_at)),
            counts.get(&w.name).copied().unwrap_or(0)
        );
    }
    if !confirm(noprompt, "archived logs")? {
        return Ok(());
    }
    let wal: Vec<(String, String)> = chosen.into_iter().map(|w| (w.name, w.path)).collect();
    let r =
        recman_engine::retention::delete_objects(&ctx.repo, ctx.db.id, &ctx.db.name, &[], &wal)?;
    say_deleted(&r);
    Ok(())
}
