//! LIST layouts modelled on RMAN's (rman.md §6.2): backup sets in detail, the summary, by
//! file, archived logs and incarnations. The JSON forms are documented in docs/commands.md;
//! the facts come from the command model (`recman_command::listing`).

use crate::display::{size, time};
use recman_command::listing::{FileRow, ListedBackup, ListedPiece};
use recman_command::model::Lsn;
use recman_command::model::{
    BackupRecord, BackupStatus, DbRecord, Incarnation, MediaStatus, WalRecord,
};

fn status_letter(s: BackupStatus) -> &'static str {
    match s {
        BackupStatus::Available => "A",
        BackupStatus::Expired => "X",
        BackupStatus::Failed => "F",
        BackupStatus::Running => "R",
    }
}

fn elapsed(b: &BackupRecord) -> String {
    let Some(stop) = b.stop_time else {
        return String::new();
    };
    let s = ((stop - b.start_time) / 1_000_000).max(0);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn compressed(b: &BackupRecord) -> &'static str {
    if b.compression == "none" { "NO" } else { "YES" }
}

pub fn summary(backups: &[ListedBackup]) {
    println!("List of Backups\n===============");
    println!(
        "{:<26} TY LV S Device Type Completion Time     #Pieces #Copies Compressed Tag",
        "Key"
    );
    println!(
        "{} -- -- - ----------- ------------------- ------- ------- ---------- ---",
        "-".repeat(26)
    );
    for l in backups {
        let b = &l.record;
        println!(
            "{:<26} B  F  {} {:<11} {:<19} {:<7} {:<7} {:<10} {}",
            b.id,
            status_letter(b.status),
            l.device.to_uppercase(),
            time(b.stop_time),
            l.pieces.len(),
            l.copies,
            compressed(b),
            b.tag
        );
    }
}

pub fn detailed(db: &DbRecord, backups: &[ListedBackup]) {
    println!("List of Backup Sets\n===================");
    for l in backups {
        let b = &l.record;
        println!();
        println!(
            "{:<26} Type LV Size       Device Type Elapsed Time Completion Time",
            "BS Key"
        );
        println!(
            "{} ---- -- ---------- ----------- ------------ -------------------",
            "-".repeat(26)
        );
        println!(
            "{:<26} Full    {:<10} {:<11} {:<12} {}",
            b.id,
            size(b.written_bytes),
            l.device.to_uppercase(),
            elapsed(b),
            time(b.stop_time)
        );
        println!(
            "        Status: {}  Compressed: {}  Tag: {}",
            b.status,
            compressed(b),
            b.tag
        );
        if let Some(e) = &b.error {
            println!("        Error: {e}");
        }
        if let Some(o) = &l.origin {
            println!("        Origin: {o} (imported, read in place)");
        }
        if let Some(r) = &l.lock {
            println!("        Lock: {r}");
        }
        for ListedPiece {
            piece: p,
            status: st,
            ..
        } in &l.pieces
        {
            println!(
                "        BP Key: {}/{}   Status: {}  Size: {}  Channel: {}",
                p.set_no,
                p.piece_no,
                st,
                size(p.size),
                p.channel
            );
            println!("        Piece Name: {}", p.path);
        }
        println!(
            "  Database {} in backup {}: {} files, {}",
            db.name,
            b.id,
            b.file_count,
            size(b.db_bytes)
        );
        println!("  Timeline Start LSN   Stop LSN    Start WAL                Stop WAL");
        println!(
            "  {:<8} {:<12} {:<11} {:<24} {}",
            b.timeline,
            Lsn(b.start_lsn).to_string(),
            b.stop_lsn.map(|l| Lsn(l).to_string()).unwrap_or_default(),
            b.start_wal,
            b.stop_wal.clone().unwrap_or_default()
        );
    }
}

/// One line per file and backup (the files come from each backup's manifest); a backup
/// whose manifest is unreadable is named with the reason.
pub fn by_file(backups: &[BackupRecord], files: &[FileRow], unreadable: &[(String, String)]) {
    for (rel, e) in unreadable {
        eprintln!("recman: warning: cannot read manifest {rel}: {e}");
    }
    println!("List of Datafile Backups\n========================");
    println!(
        "{:<40} {:<26} TY LV S Ckp LSN      Ckp Time            Compressed Tag",
        "File", "Key"
    );
    println!(
        "{} {} -- -- - ------------ ------------------- ---------- ---",
        "-".repeat(40),
        "-".repeat(26)
    );
    for f in files {
        let b = &backups[f.backup];
        let line = format!(
            "{:<26} B  F  {} {:<12} {:<19} {:<10} {}",
            b.id,
            status_letter(b.status),
            Lsn(b.start_lsn).to_string(),
            time(Some(b.start_time)),
            compressed(b),
            b.tag
        );
        println!("{:<40} {line}", f.path);
    }
}

/// What kind of archived file a name is.
fn wal_kind(name: &str) -> &'static str {
    if name.ends_with(".history") {
        "history"
    } else if name.ends_with(".backup") {
        "backup-history"
    } else if name.ends_with(".partial") {
        "partial"
    } else {
        "segment"
    }
}

pub fn archivelog(db: &DbRecord, wal: &[(WalRecord, MediaStatus, u32)], json: bool) {
    if json {
        let v: Vec<serde_json::Value> = wal
            .iter()
            .map(|(w, st, n)| {
                serde_json::json!({
                    "name": w.name,
                    "kind": wal_kind(&w.name),
                    "timeline": w.timeline,
                    "path": w.path,
                    "size": w.size,
                    "stored_size": w.stored_size,
                    "crc32c": w.crc32c,
                    "archived_at": crate::display::rfc3339_str(w.archived_at),
                    "status": st.as_str(),
                    "backed_up": n,
                })
            })
            .collect();
        print_json(&v);
        return;
    }
    if wal.is_empty() {
        println!("no archived logs of database {}", db.name);
        return;
    }
    println!(
        "List of Archived Log Copies for database with db_unique_name {}",
        db.name
    );
    println!("{}", "=".repeat(69));
    println!("{:<32} Thrd S Low Time            Size       #Bkps", "Key");
    println!(
        "{} ---- - ------------------- ---------- -----",
        "-".repeat(32)
    );
    for (w, st, n) in wal {
        let s = if *st == MediaStatus::Available {
            "A"
        } else {
            "X"
        };
        println!(
            "{:<32} {:<4} {s} {:<19} {:<10} {}",
            w.name,
            w.timeline,
            time(Some(w.archived_at)),
            size(w.size),
            n
        );
        println!("        Name: {}", w.path);
    }
}

pub fn incarnation(db: &DbRecord, inc: &[Incarnation], json: bool) {
    if json {
        let v: Vec<serde_json::Value> = inc
            .iter()
            .map(|i| {
                serde_json::json!({
                    "database": db.name,
                    "system_identifier": db.system_identifier.to_string(),
                    "timeline": i.timeline,
                    "parent_timeline": i.parent_timeline,
                    "switch_lsn": i.switch_lsn,
                    "reason": i.reason,
                    "status": i.status,
                })
            })
            .collect();
        print_json(&v);
        return;
    }
    println!("List of Database Incarnations");
    println!("DB Name          DB ID                Inc Key STATUS  Parent Reset LSN");
    println!("---------------- -------------------- ------- ------- ------ ----------");
    for i in inc {
        println!(
            "{:<16} {:<20} {:<7} {:<7} {:<6} {}",
            db.name,
            db.system_identifier,
            i.timeline,
            i.status,
            i.parent_timeline.map(|p| p.to_string()).unwrap_or_default(),
            i.switch_lsn.clone().unwrap_or_default()
        );
    }
}

fn print_json(v: &[serde_json::Value]) {
    match serde_json::to_string_pretty(v) {
        Ok(t) => println!("{t}"),
        Err(e) => eprintln!("recman: cannot print the listing as JSON: {e}"),
    }
}
