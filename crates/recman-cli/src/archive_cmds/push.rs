//! archive-push into one repository (with its batch and background pusher), the background
//! pusher itself, and CATALOG ARCHIVELOG's single file; what they share with archive-get:
//! the warnings' sink, the database a call means and the command line of a background helper.

use crate::cli::Global;
use anyhow::Result;
use recman_command::model::ArchivePushOutcome;
use recman_command::wal::{self, Mark, Which};

/// Prints a warning line of the WAL commands, after the program's name.
pub(super) fn warn(line: &str) {
    eprintln!("recman: {line}");
}

/// The database `g`'s --db and --pgdata name.
pub(super) fn which(g: &Global) -> Which<'_> {
    Which {
        db: g.db.as_deref(),
        pgdata: g.pgdata.as_deref(),
    }
}

/// archive-push into the one repository `g` names; returns the database's name.
pub fn push_into(g: &Global, p: recman_command::ArchivePush) -> Result<String> {
    let mark = Mark::now();
    let repo = crate::open::open_one(g)?;
    let helper = || background(g);
    let pushed = wal::push(&repo, which(g), &p, mark, &helper, &mut warn)?;
    if g.verbose {
        for o in &pushed.stored {
            match o {
                ArchivePushOutcome::Archived { name, stored_size } => {
                    println!(
                        "archived wal file {name} into repository {} ({} stored)",
                        repo.location(),
                        crate::display::size(*stored_size)
                    )
                }
                ArchivePushOutcome::AlreadyArchived { name } => println!(
                    "wal file {name} is already archived in repository {} with the same content",
                    repo.location()
                ),
            }
        }
    }
    Ok(pushed.db)
}

/// CATALOG ARCHIVELOG 'FILE': one WAL file put into the repository as archive-push does, with
/// the same checks (the registered cluster's WAL only, never over other content), but alone:
/// no batch and no background pusher. ADVISE FAILURE writes it to re-archive a gap's
/// segments from pg_wal.
pub fn catalog_archivelog(g: &Global, path: &std::path::Path) -> Result<()> {
    let mark = Mark::now();
    let repo = crate::open::open_repo(g)?;
    let outcome = wal::catalog_archivelog(&repo, which(g), path, mark, &mut warn)?;
    let said = match outcome {
        ArchivePushOutcome::Archived { name, stored_size } => format!(
            "cataloged archived log {name} into repository {} ({} stored)",
            repo.location(),
            crate::display::size(stored_size)
        ),
        ArchivePushOutcome::AlreadyArchived { name } => format!(
            "archived log {name} is already in repository {} with the same content",
            repo.location()
        ),
    };
    if !g.quiet {
        println!("{said}");
    }
    Ok(())
}

/// archive-push-ahead: pushes the backlog after `--after` unless another pusher holds the lock.
/// What it could not push is left to PostgreSQL's own calls, which push it themselves.
pub fn push_ahead(
    g: &Global,
    p: recman_command::ArchivePushAhead,
) -> Result<std::process::ExitCode> {
    let Some(ahead) = wal::PushAhead::lock(&p)? else {
        return Ok(std::process::ExitCode::SUCCESS); // another pusher is at work
    };
    let repo = crate::open::open_repo(g)?;
    ahead.run(&repo, which(g), &mut warn)?;
    Ok(std::process::ExitCode::SUCCESS)
}
/// A `recman` command for a background helper (prefetcher, pusher): this call's repository,
/// catalog and database settings, quiet.
pub(super) fn background(g: &Global) -> std::io::Result<std::process::Command> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    let mut flag = |f: &str, v: &std::ffi::OsStr| {
        cmd.arg(f).arg(v);
    };
    if let Some(r) = &g.repo {
        flag("--repo", r.as_os_str());
    }
    if let Some(c) = &g.repo_cache {
        flag("--repo-cache", c.as_os_str());
    }
    for r in &g.also_repo {
        flag("--also-repo", r.as_os_str());
    }
    if let Some(t) = &g.repo_as_of {
        flag("--repo-as-of", t.as_ref());
    }
    if let Some(c) = &g.config {
        flag("--config", c.as_os_str());
    }
    if let Some(p) = &g.pgdata {
        flag("--pgdata", p.as_os_str());
    }
    if let Some(d) = &g.db {
        flag("--db", d.as_ref());
    }
    // A shared catalog's URL may hold a password: the environment, not the command line.
    if let Some(url) = &g.catalog {
        cmd.env("RECMAN_CATALOG", url);
    }
    cmd.arg("--quiet");
    Ok(cmd)
}
