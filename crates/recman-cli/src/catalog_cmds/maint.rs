//! How REPORT OBSOLETE / NEED BACKUP, DELETE, CROSSCHECK and CATALOG START WITH are printed,
//! in RMAN's layouts; the work is the command model's (`recman_command::maint`).

use crate::display::time;
use anyhow::{Result, bail};
use recman_command::maint::{MaintOutcome, NeedRow, ObsoleteFor, ObsoleteReport, WalItem};
use recman_command::model::{
    BackupCheck, BackupRecord, ImportReport, ObjectCheck, RebuildReport, Resync,
};
use recman_command::standby_hold::Replayed;
use std::io::{BufRead, IsTerminal, Write};

/// Asks before deleting; refuses without a terminal to ask on.
pub fn confirm(noprompt: bool, what: &str) -> Result<bool> {
    if noprompt {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        bail!(
            "refusing to delete {what} without confirmation: standard input is not a terminal; hint: pass --noprompt to delete without asking"
        );
    }
    print!("Do you really want to delete the above objects (enter YES or NO)? ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim().eq_ignore_ascii_case("yes"))
}

fn print_obsolete(f: &ObsoleteReport, heading: &str) {
    println!("recman retention policy will be applied to the command");
    println!("recman retention policy is set to {}", f.policy);
    if f.is_empty() {
        println!("no obsolete backups found");
        return;
    }
    println!("{heading}");
    println!(
        "{:<20} {:<26} {:<19} Filename/Handle",
        "Type", "Key", "Completion Time"
    );
    println!(
        "{} {} {} {}",
        "-".repeat(20),
        "-".repeat(26),
        "-".repeat(19),
        "-".repeat(20)
    );
    let mut imported = false;
    for (b, pieces) in &f.backups {
        let foreign = b.backup_type == recman_command::model::FOREIGN;
        imported |= foreign;
        println!(
            "{:<20} {:<26} {:<19}",
            if foreign {
                "Imported Backup"
            } else {
                "Backup Set"
            },
            b.id,
            time(b.stop_time)
        );
        for p in pieces {
            println!(
                "{:<20} {:<26} {:<19} {}",
                "  Backup Piece",
                format!("{}/{}/{}", b.id, p.set_no, p.piece_no),
                time(b.stop_time),
                p.path
            );
        }
    }
    wal_rows(&f.wal);
    if imported {
        println!(
            "imported backups are only forgotten: recman's record and manifest go, the old tool's files are never deleted"
        );
    }
}

/// The WAL segments a report lists, one row each, in the columns of its backup rows.
fn wal_rows(wal: &[WalItem]) {
    for w in wal {
        println!(
            "{:<20} {:<26} {:<19} {}",
            "Archive Log",
            w.name,
            time(Some(w.archived_at)),
            w.path
        );
    }
}

fn obsolete_json(f: &ObsoleteReport) -> serde_json::Value {
    serde_json::json!({
        "policy": f.policy.to_string(),
        "backups": f.backups.iter().map(|(b, _)| &b.id).collect::<Vec<_>>(),
        "archivelogs": f.wal.iter().map(|w| &w.name).collect::<Vec<_>>(),
        "kept_backups": f.obsolete.kept,
    })
}

fn say_deleted(r: &recman_command::model::DeleteReport) {
    if r.resumed > 0 {
        println!(
            "finished {} deletion(s) an interrupted command had begun",
            r.resumed
        );
    }
    for id in &r.backups {
        println!("deleted backup set\nbackup set key={id}");
    }
    for w in &r.wal {
        println!("deleted archived log\narchived log file name={w}");
    }
    for f in &r.imported {
        println!(
            "forgot imported backup {}: recman's record and manifest only; {}'s files at {} were not deleted (remove them with {} when you no longer need them)",
            f.backup_id, f.tool, f.location, f.tool
        );
    }
    println!("Deleted {} objects", r.backups.len() + r.wal.len());
    say_held(&r.held);
}

fn say_copied(id: &str, c: Option<&recman_command::model::CopiedBackup>) {
    match c {
        None => println!("backup {id} is in recman's format already (copied before)"),
        Some(c) => println!(
            "copied backup {id} into recman's format: {} file(s), {} bytes in backup sets, {} wal segment(s) put in recman's archive; it no longer reads the imported location, whose files were only read",
            c.files,
            c.bytes,
            c.wal_archived.len()
        ),
    }
}

/// What an Object Lock kept, object by object: nothing failed, the next run deletes them.
fn say_held(held: &[recman_command::model::HeldObject]) {
    if held.is_empty() {
        return;
    }
    let mut owners: Vec<&str> = held.iter().map(|h| h.owner.as_str()).collect();
    owners.dedup();
    println!(
        "kept {} backup set(s) or archived log(s) that an Object Lock still holds; a later delete removes them once their locks end:",
        owners.len()
    );
    for h in held {
        println!("held by lock: {} ({}) {}", h.object, h.owner, h.retention);
    }
}

/// Prints one outcome of the catalog's maintenance commands. Their listings are the
/// commands' answers: printed even with --quiet.
pub fn print(o: MaintOutcome) {
    match o {
        MaintOutcome::Obsolete {
            report,
            purpose,
            json,
        } => obsolete(report, purpose, json),
        MaintOutcome::NeedDrill { days, db, line } => {
            println!("Report of restore drills older than {days} days");
            if let Some(line) = line {
                println!("{db:<8} {line}");
            }
        }
        MaintOutcome::NeedDays { days, short } => need_days(days, short),
        MaintOutcome::NeedRedundancy { redundancy, short } => need_redundancy(redundancy, short),
        MaintOutcome::BackupsToDelete(chosen) => backups_to_delete(chosen),
        MaintOutcome::Deleted(r) => say_deleted(&r),
        MaintOutcome::ExpiredToDelete { backups, wal } => expired_to_delete(backups, wal),
        MaintOutcome::ExpiredDeleted { backups, wal } => {
            println!(
                "deleted the records of {backups} backup(s) and {wal} archived log(s); no media were touched"
            );
            println!("Deleted {} objects", backups + wal);
        }
        MaintOutcome::UnneededWal(wal) => unneeded_wal(wal),
        MaintOutcome::KeptForStandbys { replayed, kept } => kept_for_standbys(replayed, kept),
        MaintOutcome::Resynced { location, resync } => resynced(location, resync),
        MaintOutcome::BackedUpWal { times, wal } => backed_up_wal(times, wal),
        MaintOutcome::CrosscheckedBackups(backups) => crosschecked_backups(backups),
        MaintOutcome::CrosscheckedWal(wal) => crosschecked_wal(wal),
        MaintOutcome::CatalogCreated(path) => println!(
            "catalog {} was missing or damaged: created a new one",
            path.display()
        ),
        MaintOutcome::CatalogSearching { location, start } => {
            println!("searching for all files that match the pattern {location}/{start}*")
        }
        MaintOutcome::Cataloged(r) => cataloged(r),
        MaintOutcome::Copied { id, copied } => say_copied(&id, copied.as_ref()),
        MaintOutcome::Imported(r) => imported(r),
    }
}

fn obsolete(report: ObsoleteReport, purpose: ObsoleteFor, json: bool) {
    if json {
        match serde_json::to_string_pretty(&obsolete_json(&report)) {
            Ok(t) => println!("{t}"),
            Err(e) => eprintln!("recman: cannot print the report as JSON: {e}"),
        }
    } else {
        let heading = match purpose {
            ObsoleteFor::Report => "Report of obsolete backups and copies",
            ObsoleteFor::Delete => "Deleting the following obsolete backups and copies:",
        };
        print_obsolete(&report, heading);
    }
}

fn need_days(days: f64, short: Option<(NeedRow, Option<f64>)>) {
    println!("Report of files whose recovery needs more than {days} days of archived logs");
    println!("File     Days  Name");
    println!("-------- ----- --------------------");
    if let Some((row, need)) = short {
        let shown = need
            .map(|n| format!("{n:.1}"))
            .unwrap_or_else(|| "-".into());
        println!("{:<8} {:<5} {}", row.db, shown, row.name);
    }
}

fn need_redundancy(redundancy: u32, short: Option<(NeedRow, usize)>) {
    println!("Report of files with less than {redundancy} redundant backups");
    println!("File     #bkps Name");
    println!("-------- ----- --------------------");
    if let Some((row, n)) = short {
        println!("{:<8} {:<5} {}", row.db, n, row.name);
    }
}

fn backups_to_delete(chosen: Vec<BackupRecord>) {
    println!("List of Backup Sets to delete");
    for b in &chosen {
        println!(
            "{:<26} {:<24} {:<9} {}",
            b.id,
            b.tag,
            b.status.as_str(),
            time(b.stop_time)
        );
    }
}

fn expired_to_delete(backups: Vec<String>, wal: Vec<String>) {
    if backups.is_empty() && wal.is_empty() {
        println!("no expired backups or archived logs found");
    }
    for b in &backups {
        println!("Backup Set   {b}  EXPIRED");
    }
    for w in &wal {
        println!("Archive Log  {w}  EXPIRED");
    }
}

fn unneeded_wal(wal: Vec<WalItem>) {
    if wal.is_empty() {
        println!("no archived logs found that no available backup needs");
    }
    wal_rows(&wal);
}

fn kept_for_standbys(replayed: Replayed, kept: Vec<String>) {
    match replayed.position {
        None => println!(
            "archivelog deletion policy applied-on-all-standby: no standby is connected and no physical replication slot exists, so no archived log is kept for one"
        ),
        Some(at) => {
            println!(
                "archivelog deletion policy applied-on-all-standby: {} standby(s) connected, {} physical slot(s); every one has replayed (or holds) up to {}",
                replayed.standbys,
                replayed.slots,
                recman_command::model::Lsn(at)
            );
            for name in &kept {
                println!(
                    "{:<20} {name:<26} kept: not yet replayed by every standby",
                    "Archive Log"
                );
            }
        }
    }
}

fn resynced(location: String, resync: Resync) {
    for id in &resync.expired {
        println!(
            "backup {id} is no longer whole in repository {location} (deleted from another host?): marked EXPIRED, not counted by the retention policy"
        );
    }
    for id in &resync.added {
        println!("backup {id}, written from another host, catalogued from repository {location}");
    }
}

fn backed_up_wal(times: u32, wal: Vec<(WalItem, u32)>) {
    if wal.is_empty() {
        println!("no archived logs found that are backed up {times} time(s)");
    }
    for (w, n) in &wal {
        println!(
            "{:<20} {:<26} {:<19} backed up {} time(s)",
            "Archive Log",
            w.name,
            time(Some(w.archived_at)),
            n
        );
    }
}

fn crosschecked_backups(backups: Vec<BackupCheck>) {
    let mut n = 0;
    for b in &backups {
        for p in &b.pieces {
            say_checked("backup piece", p.status, &p.path, &p.reason);
            n += 1;
        }
        println!("backup {} is {}", b.backup_id, b.status);
    }
    println!("Crosschecked {n} objects");
}

fn crosschecked_wal(wal: Vec<ObjectCheck>) {
    for w in &wal {
        say_checked("archived log", w.status, &w.path, &w.reason);
    }
    println!("Crosschecked {} objects", wal.len());
}

fn cataloged(r: RebuildReport) {
    for d in &r.databases_registered {
        println!("registered database {d} from the repository's manifests");
    }
    for b in &r.backups_added {
        println!("cataloged backup {b}");
    }
    println!(
        "cataloged {} backup(s) and {} archived log(s); {} backup(s) and {} archived log(s) were already in the catalog",
        r.backups_added.len(),
        r.wal_added,
        r.backups_known,
        r.wal_known
    );
    for (p, why) in &r.skipped {
        eprintln!("recman: warning: could not catalog {p}: {why}");
    }
}

fn imported(r: ImportReport) {
    if r.registered {
        println!(
            "registered database {} from the imported backups",
            r.database
        );
    }
    for b in &r.backups {
        let how = if b.known {
            "already imported"
        } else {
            "imported"
        };
        println!(
            "{how} backup {} ({} {}) as {}",
            b.label, r.origin, b.origin_type, b.id
        );
    }
    let new = r.backups.iter().filter(|b| !b.known).count();
    println!(
        "imported {new} backup(s) and {} archived log(s) of {} into database {}, read in place; {} backup(s) and {} archived log(s) were imported before",
        r.wal_added,
        r.origin,
        r.database,
        r.backups.len() - new,
        r.wal_known
    );
}

fn say_checked(s: &str, st: recman_command::model::MediaStatus, path: &str, why: &Option<String>) {
    println!("crosschecked {s}: found to be '{st}'");
    match why {
        Some(w) => println!("{s} handle={path} ({w})"),
        None => println!("{s} handle={path}"),
    }
}
