//! The commands that act on the repository list as a whole (docs/repositories.md): `create
//! catalog` and `register database` on each repository, a backup copied from the first that
//! opens to the others (or owed to them), and `report repositories`.

use crate::cli::Global;
use crate::dispatch::Execute;
use crate::repo_ledger::{BACKUP_DEBT, Ledger};
use crate::repo_list::{each, open_first, spec};
use anyhow::{Result, anyhow};
use recman_command::Command;
use recman_command::repo_list::{available_backups, copy_backup, newest};
use std::process::ExitCode;

/// Commands that act on every repository of the list: `create catalog` and `register
/// database` on each; a backup in the first that opens, then copied to the others. None: the
/// command is for one repository (the first that opens).
pub fn execute_listed(g: &Global, command: &Command, execute: Execute) -> Option<Result<ExitCode>> {
    match command {
        Command::CreateCatalog { .. } | Command::RegisterDatabase { .. } => Some(
            each(g)
                .iter()
                .try_fold(ExitCode::SUCCESS, |_, gi| execute(gi, command.clone())),
        ),
        Command::BackupDatabase(_) | Command::BackupArchivelog(_) => {
            Some(backup_and_copy(g, command, execute))
        }
        _ => None,
    }
}

fn backup_and_copy(g: &Global, command: &Command, execute: Execute) -> Result<ExitCode> {
    let (repo, gi) = open_first(g, crate::open::open_one)?;
    let db = recman_command::open::database(&repo, &crate::open::location(g))?;
    let before = available_backups(&repo, db.id)?;
    drop(repo);
    let code = execute(&gi, command.clone())?;
    let repo = crate::open::open_one(&gi)?;
    let made: Vec<String> = available_backups(&repo, db.id)?
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect();
    for other in each(g).iter().filter(|o| spec(o) != spec(&gi)) {
        let ledger = Ledger::of(other)?;
        let owed = ledger
            .owed(&db.name)
            .into_iter()
            .filter_map(|n| n.strip_prefix(BACKUP_DEBT).map(str::to_string));
        let mut todo: Vec<String> = owed.collect();
        todo.extend(made.iter().cloned());
        todo.dedup();
        let target = crate::open::open_one(other);
        for id in todo {
            let copied = match &target {
                Ok(to) => copy_backup(&repo, to, &db.name, &id).map_err(anyhow::Error::from),
                Err(e) => Err(anyhow!("{e:#}")),
            };
            match copied {
                Ok(bytes) => {
                    ledger.paid(&db.name, &format!("{BACKUP_DEBT}{id}"));
                    if !g.quiet {
                        println!(
                            "backup {id} copied to repository {} ({bytes} bytes)",
                            spec(other)
                        );
                    }
                }
                Err(e) => {
                    ledger.owe(&db.name, &format!("{BACKUP_DEBT}{id}"))?;
                    eprintln!(
                        "recman: warning: backup {id} was not copied to repository {}: {e:#}; it is owed the backup, which the next backup copies",
                        spec(other)
                    );
                }
            }
        }
    }
    Ok(code)
}

/// One row of `report repositories`: a repository and one database.
#[derive(serde::Serialize)]
struct Row {
    position: usize,
    repository: String,
    /// "ok", or why it could not be opened.
    state: String,
    database: Option<String>,
    newest_wal: Option<String>,
    newest_backup: Option<String>,
    owed_wal: usize,
    owed_backups: usize,
}

/// `report repositories`: the list in its fallback order, each repository's state, newest
/// archived WAL file and backup per database, and what it is owed.
pub fn report(g: &Global, json: bool) -> Result<()> {
    let mut rows = Vec::new();
    for (i, gi) in each(g).iter().enumerate() {
        let ledger = Ledger::of(gi)?;
        let owed = |db: &str| {
            let all = ledger.owed(db);
            let backups = all.iter().filter(|n| n.starts_with(BACKUP_DEBT)).count();
            (all.len() - backups, backups)
        };
        let row = |state: String, db: Option<String>| {
            let (owed_wal, owed_backups) = db.as_deref().map(owed).unwrap_or_default();
            Row {
                position: i + 1,
                repository: spec(gi),
                state,
                database: db,
                newest_wal: None,
                newest_backup: None,
                owed_wal,
                owed_backups,
            }
        };
        match crate::open::open_one(gi) {
            Ok(repo) => {
                for n in newest(&repo)? {
                    let mut r = row("ok".into(), Some(n.database));
                    r.newest_wal = n.wal;
                    r.newest_backup = n.backup;
                    rows.push(r);
                }
            }
            Err(e) => {
                let state = format!("unreachable: {e:#}");
                let dbs = ledger.databases();
                if dbs.is_empty() {
                    rows.push(row(state.clone(), None));
                }
                rows.extend(dbs.into_iter().map(|d| row(state.clone(), Some(d))));
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "{:<3} {:<40} {:<12} {:<12} {:<26} {:<24} {:>9} {:>12}",
        "#",
        "Repository",
        "State",
        "Database",
        "Newest WAL",
        "Newest backup",
        "Owed WAL",
        "Owed backups"
    );
    let dash = || "-".to_string();
    for r in &rows {
        let state = if r.state == "ok" { "ok" } else { "unreachable" };
        println!(
            "{:<3} {:<40} {:<12} {:<12} {:<26} {:<24} {:>9} {:>12}",
            r.position,
            r.repository,
            state,
            r.database.clone().unwrap_or_else(dash),
            r.newest_wal.clone().unwrap_or_else(dash),
            r.newest_backup.clone().unwrap_or_else(dash),
            r.owed_wal,
            r.owed_backups
        );
    }
    let mut said = std::collections::BTreeSet::new();
    for r in rows.iter().filter(|r| r.state != "ok") {
        if said.insert(&r.repository) {
            println!("repository {}: {}", r.repository, r.state);
        }
    }
    Ok(())
}
