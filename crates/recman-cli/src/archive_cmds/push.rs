//! archive-push into one repository (with its batch and background pusher), the background
//! pusher itself, and CATALOG ARCHIVELOG's single file; what they share with archive-get:
//! the costs record and the command line of a background helper.

use crate::cli::Global;
use anyhow::Result;
use recman_catalog::meter;

/// Adds this process's object-store requests since `before` to today's archiving costs of
/// `db`. WAL is archived or served whatever the bookkeeping does, so a failure is a warning.
pub(super) fn record_costs(
    repo: &recman_catalog::Repository,
    db: &recman_catalog::DbRecord,
    before: &meter::Usage,
) {
    if let Some(w) = recman_command::costs::record_archiving(repo, db.id, before) {
        eprintln!("recman: warning: {w}");
    }
}

/// archive-push into the one repository `g` names; returns the database's name.
pub fn push_into(g: &Global, p: recman_command::ArchivePush) -> Result<String> {
    let before = meter::snapshot();
    let repo = crate::open::open_one(g)?;
    let pgdata = g.pgdata.clone().or_else(|| std::env::current_dir().ok());
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), pgdata.as_deref())?;
    let opts = p.options()?;
    let spool = recman_engine::PushSpool::default_for(&p.path)?;
    let command = |after: &str| {
        let mut cmd = background(g)?;
        cmd.arg("archive-push-ahead")
            .arg("--wal-dir")
            .arg(spool.wal_dir())
            .args(["--after", after, "--compress", &p.compress])
            .args(["--parallel", &opts.parallel.to_string()]);
        Ok(cmd)
    };
    let ahead = recman_engine::Ahead {
        spool: &spool,
        command: &command,
    };
    let r = recman_engine::archive_push(&repo, &db, &p.path, &opts, Some(&ahead));
    record_costs(&repo, &db, &before);
    let r = r?;
    for (name, e) in &r.failed {
        eprintln!(
            "recman: warning: could not archive {name} along with {}: {e}; PostgreSQL's own archive-push call for it will try again",
            p.path.display()
        );
    }
    if g.verbose {
        for o in std::iter::once(&r.outcome).chain(&r.extra) {
            match o {
                recman_engine::ArchivePushOutcome::Archived { name, stored_size } => {
                    println!(
                        "archived wal file {name} into repository {} ({} stored)",
                        repo.location(),
                        crate::display::size(*stored_size)
                    )
                }
                recman_engine::ArchivePushOutcome::AlreadyArchived { name } => println!(
                    "wal file {name} is already archived in repository {} with the same content",
                    repo.location()
                ),
            }
        }
    }
    Ok(db.name)
}

/// CATALOG ARCHIVELOG 'FILE': one WAL file put into the repository as archive-push does, with
/// the same checks (the registered cluster's WAL only, never over other content), but alone:
/// no batch and no background pusher. ADVISE FAILURE writes it to re-archive a gap's
/// segments from pg_wal.
pub fn catalog_archivelog(g: &Global, path: &std::path::Path) -> Result<()> {
    let before = meter::snapshot();
    let repo = crate::open::open_repo(g)?;
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    let p = recman_command::ArchivePush {
        path: path.to_path_buf(),
        compress: recman_command::DEFAULT_WAL_COMPRESSION.into(),
        batch: 1,
        parallel: None,
        repo_host: None,
    };
    let r = recman_engine::archive_push(&repo, &db, path, &p.options()?, None);
    record_costs(&repo, &db, &before);
    let r = r?;
    let said = match r.outcome {
        recman_engine::ArchivePushOutcome::Archived { name, stored_size } => format!(
            "cataloged archived log {name} into repository {} ({} stored)",
            repo.location(),
            crate::display::size(stored_size)
        ),
        recman_engine::ArchivePushOutcome::AlreadyArchived { name } => format!(
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
    let opts = p.options()?;
    let spool = recman_engine::PushSpool::default_for(&p.wal_dir.join(&p.after))?;
    let Some(lock) = spool.try_lock(&p.after)? else {
        return Ok(std::process::ExitCode::SUCCESS); // another pusher is at work
    };
    let before = meter::snapshot();
    let repo = crate::open::open_repo(g)?;
    let pgdata = g.pgdata.clone().or_else(|| std::env::current_dir().ok());
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), pgdata.as_deref())?;
    let r = recman_engine::push_ahead(&repo, &db, &lock, &opts);
    record_costs(&repo, &db, &before);
    let r = r?;
    for (name, e) in &r.failed {
        eprintln!(
            "recman: background push of wal segment {name} failed: {e}; PostgreSQL's own archive-push call for it pushes it"
        );
    }
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
