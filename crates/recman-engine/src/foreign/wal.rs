//! The WAL archives of other tools, for archive-get and the restore plan: a segment recman's
//! own archive does not hold is looked for in each imported archive of the database (the
//! catalog's list first, then the archive's directory, which may have grown since the
//! import), read there and checked against the origin's checksum.

use super::pgbackrest::{Repo, archive, config};
use super::{ForeignWal, ImportError, PGBACKREST};
use crate::error::EngineError;
use recman_catalog::{DbRecord, ForeignArchive, ForeignWalRecord, Repository};
use std::path::Path;

fn pass_of(a: &ForeignArchive) -> Result<Option<String>, ImportError> {
    if a.config.is_empty() {
        return Ok(std::env::var(config::CIPHER_PASS_ENV).ok());
    }
    Ok(config::read(Path::new(&a.config), Some(&a.stanza))?.cipher_pass)
}

/// Where archive `a` can be described to a user.
pub(crate) fn describe(a: &ForeignArchive) -> String {
    format!(
        "{} archive {} stanza {} ({})",
        a.tool, a.location, a.stanza, a.archive_id
    )
}

/// The file of `name` in archive `a`'s directory, when the catalog does not list it.
fn look_up(a: &ForeignArchive, repo: &Repo, name: &str) -> Result<Option<ForeignWal>, ImportError> {
    if a.tool != PGBACKREST {
        return Ok(None);
    }
    archive::list_one(repo, &a.archive_id, name)
}

/// Reads WAL file `name` of `db` from the imported archives: Some(content) when one holds
/// it intact; what fails is added to `failures` (damage must stop recovery, not end it).
pub(crate) fn read_foreign_wal(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    failures: &mut Vec<String>,
) -> Result<Option<Vec<u8>>, EngineError> {
    let cat = repo.catalog();
    let archives = cat.foreign_archives(db.id)?;
    if archives.is_empty() {
        return Ok(None);
    }
    let listed = cat.foreign_wal(db.id, name)?;
    for a in &archives {
        let pass = match pass_of(a) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{}: {e}", describe(a)));
                continue;
            }
        };
        let attempt = || -> Result<Option<Vec<u8>>, ImportError> {
            let pr = Repo::open(Path::new(&a.location), &a.stanza, pass.as_deref())?;
            let w = match listed.iter().find(|w| w.archive == a.id) {
                Some(w) => Some(to_foreign(w)),
                None => look_up(a, &pr, name)?,
            };
            let Some(w) = w else { return Ok(None) };
            let (_, sub) = archive::archive_ids(&pr)?;
            archive::read(Path::new(&a.location), &w, sub.as_deref()).map(Some)
        };
        match attempt() {
            Ok(Some(data)) => return Ok(Some(data)),
            Ok(None) => {}
            Err(e) => failures.push(format!("{}: {e}", describe(a))),
        }
    }
    Ok(None)
}

fn to_foreign(w: &ForeignWalRecord) -> ForeignWal {
    ForeignWal {
        name: w.name.clone(),
        path: w.path.clone(),
        stored_size: w.stored_size,
        archived_at: w.archived_at,
        checksum: w.checksum.clone(),
    }
}

/// What the catalog knows of a database's imported WAL, for the restore plan.
pub(crate) struct ForeignKnown {
    pub archives: Vec<ForeignArchive>,
    pub files: Vec<ForeignWalRecord>,
}

impl ForeignKnown {
    pub(crate) fn load(repo: &Repository, db: &DbRecord) -> Result<ForeignKnown, EngineError> {
        let cat = repo.catalog();
        Ok(ForeignKnown {
            archives: cat.foreign_archives(db.id)?,
            files: cat.foreign_wal_list(db.id)?,
        })
    }

    /// Where file `w` is, in words, and whether it is there now.
    pub(crate) fn source(&self, w: &ForeignWalRecord) -> (String, String, bool) {
        let a = self.archives.iter().find(|a| a.id == w.archive);
        let (what, present) = match a {
            Some(a) => (describe(a), Path::new(&a.location).join(&w.path).exists()),
            None => (String::from("an imported archive"), false),
        };
        (what, w.path.clone(), present)
    }
}
