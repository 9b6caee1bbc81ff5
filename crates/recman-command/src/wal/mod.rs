//! The WAL commands PostgreSQL calls and the WAL receiver, against a repository the front end
//! has opened: archive-push with its batch and background pusher, CATALOG ARCHIVELOG's single
//! file, archive-get with its read-ahead spool and the prefetcher that fills it, `receive`
//! and `report rpo`'s facts.
//!
//! They run outside [`crate::execute`]: the front end opens the repository (or walks its
//! repository list) itself, so that a repository that does not answer is its warning to
//! print, and it supplies the command line of a background helper ([`Helper`]). What these
//! functions would print goes to a [`Warn`] sink, each line as the front end shows it after
//! its program name.

mod get;
mod push;
mod receive;

pub use get::{Prefetch, ReadAhead, fetch, from_receiver, get_one};
pub use push::{PushAhead, Pushed, catalog_archivelog, push, push_alone};
pub use receive::{receive, rpo};

use crate::error::ExecError;
use recman_catalog::meter::{self, Usage};
use recman_catalog::{DbRecord, Repository};
use std::path::Path;

/// Where a warning line goes (without the program name in front): WAL is archived or served
/// whatever the bookkeeping or the read-ahead does, so these never fail the command.
pub type Warn<'a> = &'a mut dyn FnMut(&str);

/// The `recman` command a background helper (prefetcher, pusher) runs as: this call's
/// repository, catalog and database settings, quiet; the subcommand and its arguments are
/// added here.
pub type Helper<'a> = &'a dyn Fn() -> std::io::Result<std::process::Command>;

/// Which registered database a WAL command is for: the front end's --db and --pgdata.
#[derive(Clone, Copy, Debug, Default)]
pub struct Which<'a> {
    pub db: Option<&'a str>,
    pub pgdata: Option<&'a Path>,
}

/// The process's object-store requests at a moment: taken before the front end opens the
/// repository, so that the requests of opening it count among the archiving's costs.
#[derive(Debug)]
pub struct Mark(Usage);

impl Mark {
    pub fn now() -> Mark {
        Mark(meter::snapshot())
    }
}

/// The registered database `which` names (see [`recman_engine::resolve_database`]).
pub fn database(repo: &Repository, which: Which<'_>) -> Result<DbRecord, ExecError> {
    Ok(recman_engine::resolve_database(
        repo,
        which.db,
        which.pgdata,
    )?)
}

/// [`database`], where a missing --pgdata means the current directory: PostgreSQL runs
/// archive_command in the data directory.
fn database_here(repo: &Repository, which: Which<'_>) -> Result<DbRecord, ExecError> {
    let cwd = std::env::current_dir().ok();
    let pgdata = which.pgdata.or(cwd.as_deref());
    database(repo, Which { pgdata, ..which })
}

/// Adds this process's object-store requests since `mark` to today's archiving costs of
/// `db`. WAL is archived or served whatever the bookkeeping does, so a failure is a warning.
fn record_costs(repo: &Repository, db: &DbRecord, mark: &Mark, warn: Warn<'_>) {
    if let Some(w) = crate::costs::record_archiving(repo, db.id, &mark.0) {
        warn(&format!("warning: {w}"));
    }
}
