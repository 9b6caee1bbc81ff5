//! Several repositories for the same databases: `--repo` and each `--also-repo`, in that
//! order (docs/repositories.md). Each is a whole repository with its own catalog and its own
//! retention. archive-push stores every WAL file in each; one that fails does not stop the
//! others, and what it missed is owed to it, in a ledger on this host, until it answers
//! again. A backup made in the first is copied to the others. A command that reads falls back
//! along the list.

use crate::cli::Global;
use anyhow::{Result, anyhow};
use recman_catalog::Repository;
use recman_command::Command;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// This command's options aimed at each repository of the list, in order. `--repo-cache`
/// belongs to `--repo`; every other repository uses its own default cache.
pub fn each(g: &Global) -> Vec<Global> {
    let mut out = vec![Global {
        also_repo: Vec::new(),
        ..g.clone()
    }];
    out.extend(g.also_repo.iter().map(|r| Global {
        repo: Some(r.clone()),
        repo_cache: None,
        also_repo: Vec::new(),
        ..g.clone()
    }));
    out
}

/// The repository's name as given, for messages and the ledger.
pub fn spec(g: &Global) -> String {
    g.repo
        .as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// Opens the first repository of the list that opens. One skipped is said on stderr with
/// why, so that a fallback is never silent.
pub fn open_first(
    g: &Global,
    open: impl Fn(&Global) -> Result<Repository>,
) -> Result<(Repository, Global)> {
    let mut failed = Vec::new();
    for gi in each(g) {
        match open(&gi) {
            Ok(repo) => {
                if !failed.is_empty() && !g.quiet {
                    eprintln!(
                        "recman: warning: using repository {}, the next in the list: {}",
                        repo.location(),
                        failed.join("; ")
                    );
                }
                return Ok((repo, gi));
            }
            Err(e) => failed.push(format!("repository {} cannot be opened ({e:#})", spec(&gi))),
        }
    }
    Err(anyhow!(
        "no repository of the list can be opened: {}; hint: check each --repo and --also-repo, and the network to them",
        failed.join("; ")
    ))
}

/// The options a restored cluster's restore_command passes on: the repositories after the
/// one this command opened. Those before it could not be opened when the restore ran; asking
/// them again at every WAL file would only turn each answer into an error.
pub fn passed_on(g: &Global, opened: &Repository) -> Vec<String> {
    let specs: Vec<String> = each(g).iter().map(spec).collect();
    let at = specs.iter().position(|s| is_location(s, opened));
    specs
        .into_iter()
        .enumerate()
        .filter(|(i, _)| at.is_none_or(|a| *i > a))
        .flat_map(|(_, s)| ["--also-repo".to_string(), s])
        .collect()
}

fn is_location(spec: &str, repo: &Repository) -> bool {
    if spec == repo.location() {
        return true;
    }
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    !repo.is_remote() && canon(Path::new(spec)) == canon(repo.root())
}

/// What archive-push owes repositories that did not take a WAL file: an empty file per
/// database and WAL file name, in a directory per repository under this host's cache.
pub struct Ledger {
    dir: PathBuf,
}

impl Ledger {
    /// The ledger of the repository `gi` names (one of [`each`]).
    pub fn of(gi: &Global) -> Result<Ledger> {
        let spec = spec(gi);
        let base = crate::device_cmds::cache_dir(
            &Global {
                repo_cache: None,
                ..gi.clone()
            },
            &spec,
        )?;
        Ok(Ledger {
            dir: base.join("owed"),
        })
    }

    pub fn owe(&self, db: &str, name: &str) -> Result<()> {
        let dir = self.dir.join(db);
        let refused = |e: std::io::Error| {
            anyhow!(
                "cannot record {name} as owed in {}: {e}; hint: the user archive-push runs as must be able to write its cache directory (XDG_CACHE_HOME, else ~/.cache)",
                dir.display()
            )
        };
        std::fs::create_dir_all(&dir).map_err(refused)?;
        std::fs::write(dir.join(name), b"").map_err(refused)
    }

    /// The WAL files owed for database `db`, oldest name first.
    pub fn owed(&self, db: &str) -> Vec<String> {
        sorted_names(&self.dir.join(db))
    }

    /// The databases with anything owed.
    pub fn databases(&self) -> Vec<String> {
        sorted_names(&self.dir)
    }

    pub fn paid(&self, db: &str, name: &str) {
        let _ = std::fs::remove_file(self.dir.join(db).join(name));
    }
}

/// archive-push into every repository of the list: `--repo` as usual (with its batch and
/// background pusher), the others the file alone. Succeeds when at least one stored it; each
/// one that did not is owed the file, and a repository that takes a file is given what it is
/// owed too, from pg_wal or from another repository.
pub fn push_everywhere(g: &Global, p: recman_command::ArchivePush) -> Result<()> {
    let all = each(g);
    let name = p
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut db = g.db.clone();
    let mut missed = Vec::new();
    for (i, gi) in all.iter().enumerate() {
        let pushed = if i == 0 {
            crate::archive_cmds::push_into(gi, p.clone())
        } else {
            push_alone(gi, &p)
        };
        match pushed {
            Ok(d) => {
                pay_debts(gi, &all, &d, &p);
                db.get_or_insert(d);
            }
            Err(e) => missed.push((gi, e)),
        }
    }
    if missed.len() == all.len() {
        let why: Vec<String> = missed
            .iter()
            .map(|(gi, e)| format!("repository {}: {e:#}", spec(gi)))
            .collect();
        anyhow::bail!(
            "{name} was stored in no repository: {}; hint: PostgreSQL calls archive-push again; make at least one repository reachable",
            why.join("; ")
        );
    }
    let db = db.unwrap_or_default();
    for (gi, e) in missed {
        Ledger::of(gi)?.owe(&db, &name)?;
        eprintln!(
            "recman: warning: repository {} did not take {name}: {e:#}; it is owed the file, which the next archive-push it answers brings it (`recman report repositories` lists what is owed)",
            spec(gi)
        );
    }
    Ok(())
}

/// archive-push of the file alone into the repository `gi` names.
fn push_alone(gi: &Global, p: &recman_command::ArchivePush) -> Result<String> {
    let before = recman_catalog::meter::snapshot();
    let repo = crate::device_cmds::open_one(gi)?;
    let pgdata = gi.pgdata.clone().or_else(|| std::env::current_dir().ok());
    let db = recman_engine::resolve_database(&repo, gi.db.as_deref(), pgdata.as_deref())?;
    let opts = p.options()?;
    let pushed = recman_engine::archive_push(&repo, &db, &p.path, &opts, None);
    crate::archive_cmds::record_costs(&repo, &db, &before);
    pushed?;
    Ok(db.name)
}

/// Gives the repository `gi`, which just took a file, what it is owed: each file from pg_wal
/// when PostgreSQL still has it, else from another repository of the list. What cannot be
/// given yet stays owed.
fn pay_debts(gi: &Global, all: &[Global], db: &str, p: &recman_command::ArchivePush) {
    let Ok(ledger) = Ledger::of(gi) else {
        return;
    };
    for name in ledger.owed(db) {
        if name.starts_with(BACKUP_DEBT) {
            continue;
        }
        let paid = pay_one(gi, all, db, &name, p);
        match paid {
            Ok(()) => {
                ledger.paid(db, &name);
                eprintln!(
                    "recman: repository {} caught up: {name} stored there",
                    spec(gi)
                );
            }
            Err(e) => eprintln!(
                "recman: warning: repository {} is still owed {name}: {e:#}",
                spec(gi)
            ),
        }
    }
}

fn pay_one(
    gi: &Global,
    all: &[Global],
    db: &str,
    name: &str,
    p: &recman_command::ArchivePush,
) -> Result<()> {
    let from_pg_wal = p.path.with_file_name(name);
    let push = |path: PathBuf| {
        let one = recman_command::ArchivePush { path, ..p.clone() };
        push_alone(gi, &one).map(|_| ())
    };
    if from_pg_wal.is_file() {
        return push(from_pg_wal);
    }
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join(name);
    for other in all.iter().filter(|o| spec(o) != spec(gi)) {
        let Ok(repo) = crate::device_cmds::open_one(other) else {
            continue;
        };
        let Ok(rec) = recman_engine::resolve_database(&repo, Some(db), None) else {
            continue;
        };
        if let Ok(recman_engine::ArchiveGetOutcome::Restored { .. }) =
            recman_engine::archive_get(&repo, &rec, name, &dest)
        {
            return push(dest);
        }
    }
    anyhow::bail!(
        "neither pg_wal nor another repository of the list holds it; hint: if you have the file, `recman --repo REPO archive-push FILE` stores it there"
    )
}

/// The names in directory `dir`, sorted; none when it does not exist.
fn sorted_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A ledger entry for a backup a repository did not take: this prefix and the backup's id.
const BACKUP_DEBT: &str = "backup.";

/// Commands that act on every repository of the list: `create catalog` and `register
/// database` on each; a backup in the first that opens, then copied to the others. None: the
/// command is for one repository (the first that opens).
pub fn execute_listed(g: &Global, command: &Command) -> Option<Result<ExitCode>> {
    match command {
        Command::CreateCatalog { .. } | Command::RegisterDatabase { .. } => {
            Some(each(g).iter().try_fold(ExitCode::SUCCESS, |_, gi| {
                crate::commands::execute(gi, command.clone())
            }))
        }
        Command::BackupDatabase(_) | Command::BackupArchivelog(_) => {
            Some(backup_and_copy(g, command))
        }
        _ => None,
    }
}

fn backup_and_copy(g: &Global, command: &Command) -> Result<ExitCode> {
    let (repo, gi) = open_first(g, crate::device_cmds::open_one)?;
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    let ids = |repo: &Repository| -> Result<Vec<String>> {
        Ok(repo
            .catalog()
            .backups(db.id)?
            .into_iter()
            .filter(|b| b.status == recman_catalog::BackupStatus::Available)
            .map(|b| b.id)
            .collect())
    };
    let before = ids(&repo)?;
    drop(repo);
    let code = crate::commands::execute(&gi, command.clone())?;
    let repo = crate::device_cmds::open_one(&gi)?;
    let made: Vec<String> = ids(&repo)?
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
        let target = crate::device_cmds::open_one(other);
        for id in todo {
            let copied = match &target {
                Ok(to) => recman_engine::copy_backup_between(&repo, to, &db.name, &id)
                    .map_err(anyhow::Error::from),
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
        match crate::device_cmds::open_one(gi) {
            Ok(repo) => {
                let cat = repo.catalog();
                for db in cat.databases()? {
                    let mut r = row("ok".into(), Some(db.name.clone()));
                    r.newest_wal = cat.wal_list(db.id)?.into_iter().map(|w| w.name).max();
                    r.newest_backup = cat.backups(db.id)?.into_iter().map(|b| b.id).max();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_keeps_its_order_and_the_cache_belongs_to_the_first() {
        let g = Global {
            repo: Some("/r1".into()),
            repo_cache: Some("/c1".into()),
            also_repo: vec!["s3://b/p".into(), "gs://c/p".into()],
            ..Default::default()
        };
        let all = each(&g);
        let specs: Vec<String> = all.iter().map(spec).collect();
        assert_eq!(specs, ["/r1", "s3://b/p", "gs://c/p"]);
        assert_eq!(all[0].repo_cache.as_deref(), Some(Path::new("/c1")));
        assert!(all[1].repo_cache.is_none() && all[2].repo_cache.is_none());
        assert!(all.iter().all(|gi| gi.also_repo.is_empty()));
    }

    #[test]
    fn the_ledger_lists_what_is_owed_until_paid() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger {
            dir: dir.path().join("owed"),
        };
        assert!(l.owed("main").is_empty());
        l.owe("main", "000000010000000000000005").unwrap();
        l.owe("main", "000000010000000000000004").unwrap();
        assert_eq!(
            l.owed("main"),
            ["000000010000000000000004", "000000010000000000000005"]
        );
        l.paid("main", "000000010000000000000004");
        assert_eq!(l.owed("main"), ["000000010000000000000005"]);
    }
}
