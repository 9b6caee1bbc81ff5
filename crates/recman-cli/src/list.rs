//! LIST output: a table for people, stable JSON for programs (documented in docs/commands.md).

use anyhow::Result;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use recman_catalog::{BackupRecord, BackupStatus};
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

fn time(micros: Option<i64>) -> String {
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

/// A RUNNING backup whose process is gone (killed, host crash) is shown as FAILED at once; the
/// catalog row itself is corrected by the next backup, under the repository lock.
fn effective(b: &mut BackupRecord) {
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    if b.status == BackupStatus::Running
        && b.host == here
        && !std::path::Path::new(&format!("/proc/{}", b.pid)).exists()
    {
        b.status = BackupStatus::Failed;
        b.error = Some(format!(
            "interrupted: process {} ended before the backup completed",
            b.pid
        ));
    }
}

pub fn list_backup(ctx: &Context, json: bool) -> Result<()> {
    let mut backups = ctx.repo.catalog().backups(ctx.db.id)?;
    backups.iter_mut().for_each(effective);
    if json {
        let v: Vec<serde_json::Value> = backups
            .iter()
            .map(|b| {
                serde_json::json!({
                    "id": b.id,
                    "database": ctx.db.name,
                    "tag": b.tag,
                    "type": b.backup_type,
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
                    "files": b.file_count,
                    "channels": b.channels,
                    "compression": b.compression,
                    "filesperset": b.filesperset,
                    "maxopenfiles": b.maxopenfiles,
                    "error": b.error,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if backups.is_empty() {
        println!("no backups of database {}", ctx.db.name);
        return Ok(());
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "ID",
        "Tag",
        "Type",
        "Status",
        "Start LSN",
        "Stop LSN",
        "Start time",
        "Duration",
        "DB size",
        "Written",
        "Ch",
        "Compression",
    ]);
    for b in &backups {
        t.add_row([
            b.id.clone(),
            b.tag.clone(),
            b.backup_type.clone(),
            b.status.as_str().to_string(),
            Lsn(b.start_lsn).to_string(),
            b.stop_lsn.map(|l| Lsn(l).to_string()).unwrap_or_default(),
            time(Some(b.start_time)),
            b.stop_time
                .map(|s| format!("{:.1}s", (s - b.start_time) as f64 / 1e6))
                .unwrap_or_default(),
            size(b.db_bytes),
            size(b.written_bytes),
            b.channels.to_string(),
            b.compression.clone(),
        ]);
    }
    println!("{t}");
    Ok(())
}
