//! Issue 23: KEEP FOREVER (archival backups). `delete obsolete` under redundancy 1 with newer
//! backups removes the others but not the kept one nor the WAL that makes it consistent, and a
//! restore from it gives its data.

mod common;
mod flows;

use common::*;
use flows::*;
use std::time::Duration;

fn backup_ids(setup: &Setup) -> Vec<String> {
    setup
        .backups()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn keep_forever_survives_delete_obsolete_and_restores() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    c.psql("insert into markers values (1)");
    setup.ok(&["run", "BACKUP DATABASE TAG 'ARCHIVAL' KEEP FOREVER;"]);
    let kept = setup.backups().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let kept_stop = setup.backups().last().unwrap()["stop_lsn"]
        .as_str()
        .unwrap()
        .to_string();
    c.psql("insert into markers values (2)");
    let plain = setup.backup(&[]);
    c.psql("insert into markers values (3)");
    let newest = setup.backup(&[]);
    c.switch_wal_and_wait_archived();
    let wal_before = setup.archivelogs().len();

    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    let ids = backup_ids(&setup);
    assert!(ids.contains(&kept), "the kept backup was deleted: {ids:?}");
    assert!(ids.contains(&newest), "{ids:?}");
    assert!(
        !ids.contains(&plain),
        "the unkept older backup should be obsolete: {ids:?}"
    );
    assert!(
        setup.archivelogs().len() < wal_before,
        "some WAL should have been deleted"
    );

    // UNAVAILABLE: restore never chooses it; AVAILABLE gives it back.
    setup.ok(&["change", "backup", "ARCHIVAL", "--unavailable"]);
    let err = setup.err(&[
        "restore",
        "database",
        "--preview",
        "--from-tag",
        "ARCHIVAL",
        "--until-lsn",
        &kept_stop,
    ]);
    assert!(err.contains("no available backup has tag"), "{err}");
    setup.ok(&["change", "backup", "ARCHIVAL", "--available"]);

    let (_keep, to) = setup.restore(&["--from-tag", "ARCHIVAL", "--until-lsn", &kept_stop]);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(
        r.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1"
    );
    drop(r);

    // NOKEEP: the next delete obsolete removes it.
    setup.ok(&["run", "CHANGE BACKUP TAG 'ARCHIVAL' NOKEEP;"]);
    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    let ids = backup_ids(&setup);
    assert!(
        !ids.contains(&kept),
        "NOKEEP should make it obsolete: {ids:?}"
    );
}

/// KEEP UNTIL TIME: a backup kept until a time still to come survives `delete obsolete` and
/// restores; one whose time has passed is obsolete like any other. Both times are far from
/// now, so the outcome does not depend on the machine's speed.
#[test]
fn keep_until_time_holds_until_its_time_and_not_after() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    c.psql("insert into markers values (1)");
    let until = setup.backup(&["--keep-until", "2099-12-31 00:00:00+00", "--tag", "UNTIL"]);
    let until_stop = setup.backups().last().unwrap()["stop_lsn"]
        .as_str()
        .unwrap()
        .to_string();
    c.psql("insert into markers values (2)");
    let expired = setup.backup(&["--keep-until", "2001-01-01 00:00:00+00"]);
    c.psql("insert into markers values (3)");
    let newest = setup.backup(&[]);
    c.switch_wal_and_wait_archived();

    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    let ids = backup_ids(&setup);
    assert!(ids.contains(&until), "kept until 2099, deleted: {ids:?}");
    assert!(ids.contains(&newest), "{ids:?}");
    assert!(
        !ids.contains(&expired),
        "kept until 2001, so obsolete now: {ids:?}"
    );

    let (_keep, to) = setup.restore(&["--from-tag", "UNTIL", "--until-lsn", &until_stop]);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(
        r.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1"
    );
}

/// CHANGE BACKUP … KEEP UNTIL TIME on a backup already taken: kept while its time is to come,
/// obsolete again once it is set to a time past. Both times are far from now.
#[test]
fn change_backup_keep_until_time_keeps_and_a_past_time_releases() {
    let setup = Setup::new();
    let c = &setup.cluster;
    let old = setup.backup(&["--tag", "OLDER"]);
    c.psql("create table t as select 1 as x");
    let newest = setup.backup(&[]);
    c.switch_wal_and_wait_archived();

    setup.ok(&[
        "run",
        "CHANGE BACKUP TAG 'OLDER' KEEP UNTIL TIME '2099-12-31 00:00:00+00';",
    ]);
    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    let ids = backup_ids(&setup);
    assert!(ids.contains(&old), "kept until 2099, deleted: {ids:?}");
    assert!(ids.contains(&newest), "{ids:?}");

    setup.ok(&[
        "change",
        "backup",
        "OLDER",
        "--keep-until",
        "2001-01-01 00:00:00+00",
    ]);
    setup.ok(&["delete", "obsolete", "--redundancy", "1", "--noprompt"]);
    let ids = backup_ids(&setup);
    assert!(
        !ids.contains(&old),
        "kept until 2001, so obsolete now: {ids:?}"
    );
    assert!(ids.contains(&newest), "{ids:?}");
}
