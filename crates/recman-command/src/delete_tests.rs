//! DELETE as the library runs it, against a disk repository made for the test.

use super::*;
use crate::catalog::{DeleteWhat, PolicyOverride};
use crate::command::Command;
use crate::error::EnvError;
use crate::execute::execute;
use crate::outcome::{Executed, Outcome, Printer};
use recman_catalog::{BackupRecord, Repository};
use recman_engine::Context;
use std::path::PathBuf;

/// A disk repository with one registered database; `yes` answers the prompt.
struct Repo {
    root: PathBuf,
    yes: bool,
}

impl Env for Repo {
    fn context(&self) -> Result<Context, EnvError> {
        let repo = Repository::open(&self.root)?;
        let db = repo.catalog().database("db")?.expect("registered");
        Ok(Context {
            repo,
            db,
            pgdata: None,
            conninfo: None,
            tls: None,
        })
    }
    fn repository(&self) -> Result<Repository, EnvError> {
        Ok(Repository::open(&self.root)?)
    }
    fn pgdata(&self) -> Option<PathBuf> {
        None
    }
    fn target(&self) -> Option<String> {
        None
    }
    fn restore_invocation(
        &self,
        _: &Repository,
    ) -> Result<(PathBuf, PathBuf, Vec<String>), EnvError> {
        unreachable!("no restore here")
    }
    fn progress(&self) -> &dyn recman_engine::Progress {
        &recman_engine::NoProgress
    }
    fn confirm(&self, noprompt: bool, _: &str) -> Result<bool, EnvError> {
        Ok(noprompt || self.yes)
    }
}

#[derive(Default)]
struct Seen(Vec<MaintOutcome>);

impl Printer for Seen {
    fn outcome(&mut self, o: Outcome) {
        match o {
            Outcome::Maint(m) => self.0.push(m),
            other => panic!("unexpected outcome {other:?}"),
        }
    }
}

fn full(id: &str, db_id: i64, at: i64) -> BackupRecord {
    BackupRecord {
        db_id,
        tag: id.to_uppercase(),
        start_lsn: at as u64,
        stop_lsn: Some(at as u64 + 1),
        stop_wal: Some("000000010000000000000001".into()),
        start_time: at,
        stop_time: Some(at + 1),
        filesperset: 64,
        maxopenfiles: 8,
        ..recman_catalog::testkit::backup(id, "FULL")
    }
}

/// DELETE OBSOLETE under REDUNDANCY 1 lists the two older of three full backups, removes
/// nothing when the answer is no, and removes exactly those two when it is yes.
#[test]
fn delete_obsolete_lists_then_removes_only_after_yes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let repo = Repository::create(&root).unwrap();
    let db = repo
        .catalog()
        .register_database("db", 7, 150000, "/pgdata")
        .unwrap();
    for (i, id) in ["b1", "b2", "b3"].iter().enumerate() {
        repo.catalog()
            .insert_backup(&full(id, db.id, 1_000_000 * (i as i64 + 1)))
            .unwrap();
    }
    drop(repo);
    let delete = Command::Delete(DeleteWhat::Obsolete {
        policy: PolicyOverride {
            redundancy: Some(1),
            recovery_window: None,
        },
        noprompt: false,
    });
    let ids = |env: &Repo| -> Vec<String> {
        let ctx = env.context().unwrap();
        let mut v: Vec<String> = ctx
            .repo
            .catalog()
            .backups(ctx.db.id)
            .unwrap()
            .into_iter()
            .map(|b| b.id)
            .collect();
        v.sort();
        v
    };

    let no = Repo {
        root: root.clone(),
        yes: false,
    };
    let mut seen = Seen::default();
    assert_eq!(
        execute(delete.clone(), &no, &mut seen).unwrap(),
        Executed::Done
    );
    let [MaintOutcome::Obsolete { report, .. }] = seen.0.as_slice() else {
        panic!("{:?}", seen.0)
    };
    let listed: Vec<&str> = report.backups.iter().map(|(b, _)| b.id.as_str()).collect();
    assert_eq!(listed, ["b1", "b2"]);
    assert_eq!(ids(&no), ["b1", "b2", "b3"], "a no deletes nothing");

    let yes = Repo { root, yes: true };
    let mut seen = Seen::default();
    execute(delete, &yes, &mut seen).unwrap();
    let Some(MaintOutcome::Deleted(r)) = seen.0.last() else {
        panic!("{:?}", seen.0)
    };
    let mut gone = r.backups.clone();
    gone.sort();
    assert_eq!(gone, ["b1", "b2"]);
    assert_eq!(ids(&yes), ["b3"]);
}
