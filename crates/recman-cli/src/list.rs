//! LIST output: a table for people, stable JSON for programs (documented in docs/commands.md).

use anyhow::Result;
use recman_catalog::BackupRecord;
use recman_engine::Context;
use recman_pg::Lsn;

pub fn size(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

pub fn time(micros: Option<i64>) -> String {
    micros
        .and_then(chrono::DateTime::from_timestamp_micros)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_default()
}

fn rfc3339(micros: Option<i64>) -> serde_json::Value {
    micros
        .and_then(chrono::DateTime::from_timestamp_micros)
        .map(|t| serde_json::Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)))
        .unwrap_or(serde_json::Value::Null)
}

/// The backup a level 1 builds on, from its manifest (the catalog row does not hold it).
/// One backup as `list backup --json` prints it (documented in docs/commands.md). Facts the
/// manifest also holds, so a catalog rebuilt from the repository prints the same, except the
/// second-tier copies, which only the catalog records.
fn backup_json(ctx: &Context, b: &BackupRecord) -> Result<serde_json::Value> {
    let cat = ctx.repo.catalog();
    let pieces: Vec<serde_json::Value> = cat
        .piece_states(&b.id)?
        .into_iter()
        .map(|(p, st)| {
            let copies: Vec<String> = cat
                .copies_of(&p.path)
                .unwrap_or_default()
                .into_iter()
                .map(|c| {
                    if c.primary {
                        format!("{} (written there)", c.device)
                    } else {
                        c.device
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
                "status": st.as_str(),
            })
        })
        .collect();
    let read = ctx.repo.catalog().backup_read(&b.id)?;
    Ok(serde_json::json!({
        "id": b.id,
        "database": ctx.db.name,
        "tag": b.tag,
        "type": b.backup_type,
        "parent": recman_engine::retention::parent_of(&ctx.repo, &ctx.db.name, b),
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
        "pieces": pieces,
    }))
}

pub fn list_backup_as(ctx: &Context, json: bool, summary: bool, by_file: bool) -> Result<()> {
    // A backup whose process was killed reads as FAILED here as everywhere (the catalog's
    // reads settle it).
    let backups = ctx.repo.catalog().backups(ctx.db.id)?;
    if json {
        let v = backups
            .iter()
            .map(|b| backup_json(ctx, b))
            .collect::<Result<Vec<_>>>()?;
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if backups.is_empty() {
        println!("no backups of database {}", ctx.db.name);
        return Ok(());
    }
    if summary {
        return crate::catalog_cmds::listing::summary(ctx, &backups);
    }
    if by_file {
        return crate::catalog_cmds::listing::by_file(ctx, &backups);
    }
    crate::catalog_cmds::listing::detailed(ctx, &backups)
}

pub fn list_archivelog(ctx: &Context, json: bool) -> Result<()> {
    crate::catalog_cmds::listing::archivelog(ctx, json)
}

pub fn list_incarnation(ctx: &Context, json: bool) -> Result<()> {
    crate::catalog_cmds::listing::incarnation(ctx, json)
}

pub fn list_copy(ctx: &Context, json: bool) -> Result<()> {
    // Image copies live in the repository as `<db>/copy/<TAG>/` with their copy.json.
    let mut rows = Vec::new();
    if !ctx.repo.is_remote() {
        let dir = ctx.repo.disk_path(&format!("{}/copy", ctx.db.name))?;
        let mut tags: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        tags.sort();
        for tag in tags {
            if let Some(m) = recman_engine::copy::load_copy(ctx, &tag)? {
                let path = ctx
                    .repo
                    .disk_path(&recman_engine::copy::copy_rel(&ctx.db.name, &tag))?
                    .join("data");
                rows.push(serde_json::json!({
                    "tag": tag,
                    "backup_id": m.backup_id,
                    "stop_lsn": m.stop_lsn,
                    "stop_time": m.stop_time,
                    "path": path.display().to_string(),
                }));
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if rows.is_empty() {
        println!("no image copies of database {}", ctx.db.name);
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
    Ok(())
}

/// RFC 3339 UTC with microseconds, as every JSON listing prints times.
pub fn rfc3339_str(micros: i64) -> String {
    match rfc3339(Some(micros)) {
        serde_json::Value::String(s) => s,
        _ => String::new(),
    }
}
