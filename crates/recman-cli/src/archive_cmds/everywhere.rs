//! archive-push into every repository of the list (docs/repositories.md): one that fails
//! does not stop the others and is owed the file, which it is given when it answers again.

use super::push::{warn, which};
use crate::cli::Global;
use crate::repo_ledger::{BACKUP_DEBT, Ledger};
use crate::repo_list::{each, spec};
use anyhow::Result;
use recman_command::wal::{self, Mark, Which};
use std::path::PathBuf;

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
            super::push::push_into(gi, p.clone())
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
    let mark = Mark::now();
    let repo = crate::open::open_one(gi)?;
    Ok(wal::push_alone(&repo, which(gi), p, mark, &mut warn)?)
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
        let Ok(repo) = crate::open::open_one(other) else {
            continue;
        };
        let named = Which {
            db: Some(db),
            pgdata: None,
        };
        let Ok(rec) = wal::database(&repo, named) else {
            continue;
        };
        if let Ok(true) = wal::fetch(&repo, &rec, name, &dest) {
            return push(dest);
        }
    }
    anyhow::bail!(
        "neither pg_wal nor another repository of the list holds it; hint: if you have the file, `recman --repo REPO archive-push FILE` stores it there"
    )
}
