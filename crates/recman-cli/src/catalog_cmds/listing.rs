//! LIST layouts modelled on RMAN's (rman.md §6.2): backup sets in detail, the summary, by
//! file, archived logs and incarnations. The JSON forms are documented in docs/commands.md.

use crate::list::{size, time};
use anyhow::Result;
use recman_catalog::{BackupRecord, BackupStatus, MediaStatus};
use recman_engine::Context;
use recman_format::manifest::{BackupManifest, EntryKind};
use recman_pg::Lsn;

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

/// The device type a backup's pieces were written to (RMAN's Device Type column) and how many
/// copies of them exist: the first one plus second-tier copies.
fn device_and_copies(ctx: &Context, b: &BackupRecord) -> Result<(String, usize)> {
    let cat = ctx.repo.catalog();
    let mut device = recman_engine::devices::repository_device(&ctx.repo).to_string();
    let mut others = std::collections::BTreeSet::new();
    for (p, _) in cat.piece_states(&b.id)? {
        for c in cat.copies_of(&p.path)? {
            if c.primary {
                device = c.device;
            } else {
                others.insert(c.device);
            }
        }
    }
    Ok((device.to_uppercase(), 1 + others.len()))
}

pub fn summary(ctx: &Context, backups: &[BackupRecord]) -> Result<()> {
    println!("List of Backups\n===============");
    println!(
        "{:<26} TY LV S Device Type Completion Time     #Pieces #Copies Compressed Tag",
        "Key"
    );
    println!(
        "{} -- -- - ----------- ------------------- ------- ------- ---------- ---",
        "-".repeat(26)
    );
    for b in backups {
        let pieces = ctx.repo.catalog().piece_states(&b.id)?.len();
        let (device, copies) = device_and_copies(ctx, b)?;
        println!(
            "{:<26} B  F  {} {:<11} {:<19} {:<7} {:<7} {:<10} {}",
            b.id,
            status_letter(b.status),
            device,
            time(b.stop_time),
            pieces,
            copies,
            compressed(b),
            b.tag
        );
    }
    Ok(())
}

pub fn detailed(ctx: &Context, backups: &[BackupRecord]) -> Result<()> {
    println!("List of Backup Sets\n===================");
    for b in backups {
        println!();
        println!(
            "{:<26} Type LV Size       Device Type Elapsed Time Completion Time",
            "BS Key"
        );
        println!(
            "{} ---- -- ---------- ----------- ------------ -------------------",
            "-".repeat(26)
        );
        let (device, _) = device_and_copies(ctx, b)?;
        println!(
            "{:<26} Full    {:<10} {:<11} {:<12} {}",
            b.id,
            size(b.written_bytes),
            device,
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
        for (p, st) in ctx.repo.catalog().piece_states(&b.id)? {
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
            ctx.db.name,
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
    Ok(())
}

/// One line per file and backup, from each backup's manifest (the catalog keeps no per-file
/// rows); a backup whose manifest is unreadable is named with the reason.
pub fn by_file(ctx: &Context, backups: &[BackupRecord]) -> Result<()> {
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for b in backups.iter().filter(|b| b.status != BackupStatus::Failed) {
        let rel = recman_catalog::layout::manifest(&ctx.db.name, &b.id);
        let m: BackupManifest = match ctx
            .repo
            .media()
            .get(&rel)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_slice(&t).map_err(|e| e.to_string()))
        {
            Ok(m) => m,
            Err(e) => {
                eprintln!("recman: warning: cannot read manifest {rel}: {e}");
                continue;
            }
        };
        for e in m.entries.iter().filter(|e| e.kind == EntryKind::File) {
            let line = format!(
                "{:<26} B  F  {} {:<12} {:<19} {:<10} {}",
                b.id,
                status_letter(b.status),
                Lsn(b.start_lsn).to_string(),
                time(Some(b.start_time)),
                compressed(b),
                b.tag
            );
            rows.push((e.path.clone(), b.id.clone(), line));
        }
    }
    rows.sort();
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
    for (path, _, line) in rows {
        println!("{path:<40} {line}");
    }
    Ok(())
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

pub fn archivelog(ctx: &Context, json: bool) -> Result<()> {
    let cat = ctx.repo.catalog();
    let wal = cat.wal_states(ctx.db.id)?;
    let counts = cat.wal_backup_counts(ctx.db.id)?;
    if json {
        let v: Vec<serde_json::Value> = wal
            .iter()
            .map(|(w, st)| {
                serde_json::json!({
                    "name": w.name,
                    "kind": wal_kind(&w.name),
                    "timeline": w.timeline,
                    "path": w.path,
                    "size": w.size,
                    "stored_size": w.stored_size,
                    "crc32c": w.crc32c,
                    "archived_at": crate::list::rfc3339_str(w.archived_at),
                    "status": st.as_str(),
                    "backed_up": counts.get(&w.name).copied().unwrap_or(0),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if wal.is_empty() {
        println!("no archived logs of database {}", ctx.db.name);
        return Ok(());
    }
    println!(
        "List of Archived Log Copies for database with db_unique_name {}",
        ctx.db.name
    );
    println!("{}", "=".repeat(69));
    println!("{:<32} Thrd S Low Time            Size       #Bkps", "Key");
    println!(
        "{} ---- - ------------------- ---------- -----",
        "-".repeat(32)
    );
    for (w, st) in &wal {
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
            counts.get(&w.name).copied().unwrap_or(0)
        );
        println!("        Name: {}", w.path);
    }
    Ok(())
}

pub fn incarnation(ctx: &Context, json: bool) -> Result<()> {
    let inc = recman_engine::incarnations(&ctx.repo, &ctx.db)?;
    if json {
        let v: Vec<serde_json::Value> = inc
            .iter()
            .map(|i| {
                serde_json::json!({
                    "database": ctx.db.name,
                    "system_identifier": ctx.db.system_identifier.to_string(),
                    "timeline": i.timeline,
                    "parent_timeline": i.parent_timeline,
                    "switch_lsn": i.switch_lsn,
                    "reason": i.reason,
                    "status": i.status,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("List of Database Incarnations");
    println!("DB Name          DB ID                Inc Key STATUS  Parent Reset LSN");
    println!("---------------- -------------------- ------- ------- ------ ----------");
    for i in &inc {
        println!(
            "{:<16} {:<20} {:<7} {:<7} {:<6} {}",
            ctx.db.name,
            ctx.db.system_identifier,
            i.timeline,
            i.status,
            i.parent_timeline.map(|p| p.to_string()).unwrap_or_default(),
            i.switch_lsn.clone().unwrap_or_default()
        );
    }
    Ok(())
}
