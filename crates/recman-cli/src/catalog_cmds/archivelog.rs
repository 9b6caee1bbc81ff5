//! How archived-log backups are reported (BACKUP ARCHIVELOG ALL and the steps of BACKUP
//! DATABASE PLUS ARCHIVELOG, run by the shared executor).

use clap::Args;
use recman_command::model::ArchivelogReport;

use crate::display::size;

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
pub fn say_archivelog(quiet: bool, r: &ArchivelogReport) {
    if quiet {
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
