//! LIST output: a table for people, stable JSON for programs (documented in docs/commands.md).

use crate::display::rfc3339;
use recman_command::listing::{BackupForm, ListOutcome, ListedBackup, ListedCopy};
use recman_command::model::DbRecord;
use recman_command::model::Lsn;

/// One backup as `list backup --json` prints it (documented in docs/commands.md). Facts the
/// manifest also holds, so a catalog rebuilt from the repository prints the same, except the
/// second-tier copies, which only the catalog records.
fn backup_json(db: &DbRecord, l: &ListedBackup) -> serde_json::Value {
    let b = &l.record;
    let pieces: Vec<serde_json::Value> = l
        .pieces
        .iter()
        .map(|lp| {
            let p = &lp.piece;
            let copies: Vec<String> = lp
                .copies
                .iter()
                .map(|c| {
                    if c.primary {
                        format!("{} (written there)", c.device)
                    } else {
                        c.device.clone()
                    }
                })
                .collect();
            serde_json::json!({
                "copies": copies,
                "set_no": p.set_no,
                "piece_no": p.piece_no,
                "channel": p.channel,
                "path": p.path,
                "size": p.size,
                "crc32c": p.crc32c,
                "status": lp.status.as_str(),
            })
        })
        .collect();
    let read = l.read;
    serde_json::json!({
        "id": b.id,
        "database": db.name,
        "tag": b.tag,
        "type": b.backup_type,
        "parent": l.parent,
        "status": b.status.as_str(),
        "start_lsn": Lsn(b.start_lsn).to_string(),
        "stop_lsn": b.stop_lsn.map(|l| Lsn(l).to_string()),
        "timeline": b.timeline,
        "start_wal": b.start_wal,
        "stop_wal": b.stop_wal,
        "start_time": rfc3339(Some(b.start_time)),
        "stop_time": rfc3339(b.stop_time),
        "duration_seconds": b.stop_time.map(|s| (s - b.start_time) as f64 / 1e6),
        "database_bytes": b.db_bytes,
        "written_bytes": b.written_bytes,
        "read_bytes": read.map(|r| r.read_bytes),
        "tracked_bytes": read.map(|r| r.tracked_bytes),
        "files": b.file_count,
        "channels": b.channels,
        "compression": b.compression,
        "filesperset": b.filesperset,
        "maxopenfiles": b.maxopenfiles,
        "error": b.error,
        "origin": l.origin,
        "lock": l.lock.map(|r| serde_json::json!({
            "mode": r.mode.to_string(),
            "until": r.until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        })),
        "pieces": pieces,
    })
}

fn print_json(v: &serde_json::Value) {
    match serde_json::to_string_pretty(v) {
        Ok(t) => println!("{t}"),
        Err(e) => eprintln!("recman: cannot print the listing as JSON: {e}"),
    }
}

/// Prints a LIST (its answer: printed even with --quiet).
pub fn print(o: ListOutcome) {
    use crate::catalog_cmds::listing;
    match o {
        ListOutcome::Backups {
            db,
            backups,
            form: BackupForm::Json,
        } => {
            let v: Vec<_> = backups.iter().map(|b| backup_json(&db, b)).collect();
            print_json(&serde_json::Value::Array(v));
        }
        ListOutcome::Backups { db, backups, .. } if backups.is_empty() => {
            println!("no backups of database {}", db.name)
        }
        ListOutcome::Backups {
            backups,
            form: BackupForm::Summary,
            ..
        } => listing::summary(&backups),
        ListOutcome::Backups { db, backups, .. } => listing::detailed(&db, &backups),
        ListOutcome::BackupFiles {
            backups,
            files,
            unreadable,
        } => listing::by_file(&backups, &files, &unreadable),
        ListOutcome::Archivelogs { db, wal, json } => listing::archivelog(&db, &wal, json),
        ListOutcome::Incarnations {
            db,
            incarnations,
            json,
        } => listing::incarnation(&db, &incarnations, json),
        ListOutcome::Copies { db, copies, json } => list_copy(&db, &copies, json),
    }
}

fn list_copy(db: &DbRecord, copies: &[ListedCopy], json: bool) {
    let rows: Vec<serde_json::Value> = copies
        .iter()
        .map(|c| {
            serde_json::json!({
                "tag": c.tag,
                "backup_id": c.backup_id,
                "stop_lsn": c.stop_lsn,
                "stop_time": c.stop_time,
                "path": c.path,
            })
        })
        .collect();
    if json {
        print_json(&serde_json::Value::Array(rows));
    } else if rows.is_empty() {
        println!(
            "no image copies of database {}; hint: `recman backup database --as-copy --tag NAME` makes one",
            db.name
        );
    } else {
        println!(
            "{:<20} {:<24} {:<14} {:<28} path",
            "tag", "state of backup", "stop lsn", "stop time"
        );
        for r in &rows {
            println!(
                "{:<20} {:<24} {:<14} {:<28} {}",
                r["tag"].as_str().unwrap_or(""),
                r["backup_id"].as_str().unwrap_or(""),
                r["stop_lsn"].as_str().unwrap_or(""),
                r["stop_time"].as_str().unwrap_or(""),
                r["path"].as_str().unwrap_or("")
            );
        }
    }
}
