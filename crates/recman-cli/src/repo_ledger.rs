//! What a repository of the list is owed (docs/repositories.md): the WAL files archive-push
//! could not store there and the backups not copied there, kept on this host until the
//! repository answers again.

use crate::cli::Global;
use crate::repo_list::spec;
use anyhow::{Result, anyhow};
use std::path::{Path, PathBuf};

/// What archive-push owes repositories that did not take a WAL file: an empty file per
/// database and WAL file name, in a directory per repository under this host's cache.
pub struct Ledger {
    dir: PathBuf,
}

impl Ledger {
    /// The ledger of the repository `gi` names (one of [`crate::repo_list::each`]).
    pub fn of(gi: &Global) -> Result<Ledger> {
        let spec = spec(gi);
        let base = crate::open::cache_dir(
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

/// A ledger entry for a backup a repository did not take: this prefix and the backup's id.
pub(crate) const BACKUP_DEBT: &str = "backup.";

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

#[cfg(test)]
mod tests {
    use super::*;

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
