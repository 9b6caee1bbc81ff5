//! `receive` (the WAL receiver, docs/wal.md) and `report rpo`'s facts, the exposure it leaves.

use super::{Which, database};
use crate::command::Receive;
use crate::error::ExecError;
use recman_catalog::Repository;
use recman_engine::receive::{ReceiveLog, RpoRow};

/// The engine's log of the receiver, as lines to the front end's sink.
struct Lines<'a>(&'a mut dyn FnMut(&str));

impl ReceiveLog for Lines<'_> {
    fn note(&mut self, line: &str) {
        (self.0)(line)
    }
}

/// Streams the database's WAL from its primary at `conninfo` into `repo` until SIGINT or
/// SIGTERM (a stop is the engine's `Stopped` error, its normal end). Each line of its log,
/// the first saying what it streams where, goes to `note`.
pub fn receive(
    repo: &Repository,
    which: Which<'_>,
    r: &Receive,
    conninfo: Option<String>,
    note: &mut dyn FnMut(&str),
) -> Result<(), ExecError> {
    let db = database(repo, which)?;
    let opts = r.options(&db.name, conninfo)?;
    note(&format!(
        "streaming wal of database {:?} into repository {} ({} mode, slot {}, application_name {})",
        db.name,
        repo.location(),
        opts.mode.as_str(),
        opts.slot,
        opts.application_name
    ));
    recman_engine::receive::receive(repo, &db, &opts, &mut Lines(note))?;
    Ok(())
}

/// `report rpo`: each database's exposure (or the one `db` names); the primary at `conninfo`
/// is asked for its current position.
pub fn rpo(
    repo: &Repository,
    db: Option<&str>,
    conninfo: Option<&str>,
) -> Result<Vec<RpoRow>, ExecError> {
    let now = crate::clock::now_micros();
    Ok(recman_engine::receive::rpo(repo, db, conninfo, now)?)
}
