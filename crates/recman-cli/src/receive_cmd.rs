//! `recman receive` (the WAL receiver, docs/wal.md) and `report rpo`, the exposure it leaves.

use crate::cli::Global;
use crate::commands::open_repo;
use anyhow::Result;

struct StderrLog {
    quiet: bool,
}

impl recman_engine::receive::ReceiveLog for StderrLog {
    fn note(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("recman receive: {line}");
        }
    }
}

/// Runs the receiver until SIGINT or SIGTERM; a stop is its normal end.
pub fn receive(g: &Global, r: recman_command::Receive) -> Result<()> {
    let repo = open_repo(g)?;
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    let opts = r.options(&db.name, g.target.clone())?;
    let mut log = StderrLog { quiet: g.quiet };
    if !g.quiet {
        eprintln!(
            "recman receive: streaming wal of database {:?} into repository {} ({} mode, slot {}, application_name {})",
            db.name,
            repo.location(),
            opts.mode.as_str(),
            opts.slot,
            opts.application_name
        );
    }
    recman_engine::receive::receive(&repo, &db, &opts, &mut log)?;
    Ok(())
}

pub fn report_rpo(g: &Global, json: bool) -> Result<()> {
    let repo = open_repo(g)?;
    let now = recman_command::metrics::now_micros();
    let rows = recman_engine::receive::rpo(&repo, g.db.as_deref(), g.target.as_deref(), now)?;
    let lsn = |v: u64| format!("{:X}/{:X}", v >> 32, v as u32);
    if json {
        let out: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "database": r.db,
                    "mode": r.position.as_ref().map(|p| p.mode.clone()),
                    "slot": r.position.as_ref().map(|p| p.slot.clone()),
                    "flushed_lsn": r.position.as_ref().map(|p| lsn(p.flushed_lsn)),
                    "received_lsn": r.position.as_ref().map(|p| lsn(p.received_lsn)),
                    "current_lsn": r.current_lsn.map(lsn),
                    "exposure_bytes": r.exposure_bytes,
                    "age_seconds": r.age_seconds,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "{:<16} {:<6} {:>14} {:>14} {:>16} {:>10}",
        "Database", "Mode", "Flushed LSN", "Primary LSN", "Exposure bytes", "Age (s)"
    );
    for r in &rows {
        let Some(p) = &r.position else {
            println!(
                "{:<16} {:<6} {:>14} {:>14} {:>16} {:>10}",
                r.db, "-", "-", "-", "-", "-"
            );
            continue;
        };
        println!(
            "{:<16} {:<6} {:>14} {:>14} {:>16} {:>10}",
            r.db,
            p.mode,
            lsn(p.flushed_lsn),
            r.current_lsn.map(lsn).unwrap_or_else(|| "-".into()),
            r.exposure_bytes
                .map(|b| b.to_string())
                .unwrap_or_else(|| "unknown".into()),
            r.age_seconds
                .map(|s| format!("{s:.1}"))
                .unwrap_or_else(|| "-".into()),
        );
    }
    if rows
        .iter()
        .any(|r| r.position.is_some() && r.current_lsn.is_none())
    {
        println!(
            "(the primary was not reachable through --target: the age is the exposure to go by)"
        );
    }
    Ok(())
}
