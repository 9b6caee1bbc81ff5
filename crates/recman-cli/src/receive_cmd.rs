//! `recman receive` (the WAL receiver, docs/wal.md) and `report rpo`, the exposure it leaves.

use crate::cli::Global;
use crate::open::open_repo;
use anyhow::Result;
use recman_command::wal::{self, Which};

/// The receiver's log on stderr, each line after `who` (which receiver speaks); nothing when
/// quiet.
fn stderr_log(quiet: bool, who: String) -> impl FnMut(&str) {
    move |line| {
        if !quiet {
            eprintln!("{who}: {line}");
        }
    }
}

/// `recman server --receive DB=CONNINFO`: a receiver thread per database inside the
/// repository host's server, with `recman receive`'s defaults. A receiver that stops (its
/// primary not there yet, say) starts again after a pause: the server is a service.
pub fn spawn_for_server(g: &Global, specs: &[String]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for spec in specs {
        let Some((db, conninfo)) = spec
            .split_once('=')
            .filter(|(d, c)| !d.is_empty() && !c.is_empty())
        else {
            anyhow::bail!(
                "--receive {spec:?}: give DB=CONNINFO, the database's name in the repository and its primary's libpq conninfo; hint: --receive main='host=db1 user=recman'"
            );
        };
        if !seen.insert(db.to_string()) {
            anyhow::bail!("--receive names database {db:?} twice; hint: one receiver per database");
        }
        let g = Global {
            db: Some(db.to_string()),
            target: Some(conninfo.to_string()),
            ..g.clone()
        };
        std::thread::Builder::new()
            .name(format!("receive-{db}"))
            .spawn(move || {
                loop {
                    if let Err(e) = receive_once(&g) {
                        eprintln!(
                            "recman server: receive {}: {e:#}; starting it again in 10 s",
                            g.db.as_deref().unwrap_or_default()
                        );
                    }
                    std::thread::sleep(std::time::Duration::from_secs(10));
                }
            })?;
    }
    Ok(())
}

fn receive_once(g: &Global) -> Result<()> {
    let repo = open_repo(g)?;
    let defaults = recman_command::Receive {
        mode: "async".into(),
        slot: "recman".into(),
        create_slot: true,
        flush_interval_ms: recman_command::DEFAULT_FLUSH_INTERVAL_MS,
        application_name: None,
        compress: "lz4".into(),
    };
    // The database is named (--receive DB=...): the one resolved is the one named.
    let db = g.db.as_deref().unwrap_or_default();
    let mut log = stderr_log(g.quiet, format!("recman server: receive {db}"));
    let which = Which {
        db: g.db.as_deref(),
        pgdata: None,
    };
    wal::receive(&repo, which, &defaults, g.target.clone(), &mut log)?;
    Ok(())
}

/// Runs the receiver until SIGINT or SIGTERM; a stop is its normal end.
pub fn receive(g: &Global, r: recman_command::Receive) -> Result<()> {
    let repo = open_repo(g)?;
    let which = Which {
        db: g.db.as_deref(),
        pgdata: g.pgdata.as_deref(),
    };
    let mut log = stderr_log(g.quiet, "recman receive".into());
    wal::receive(&repo, which, &r, g.target.clone(), &mut log)?;
    Ok(())
}

pub fn report_rpo(g: &Global, json: bool) -> Result<()> {
    let repo = open_repo(g)?;
    let rows = wal::rpo(&repo, g.db.as_deref(), g.target.as_deref())?;
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
