//! Issue 23: a named restore point (CREATE RESTORE POINT / `create restore-point`) and a
//! restore to it: exactly the rows committed before the point come back, from the newest
//! backup that ends before it.

mod common;
mod flows;

use common::*;
use flows::*;
use std::time::Duration;

fn markers(c: &Cluster) -> String {
    c.psql("select string_agg(id::text, ',' order by id) from markers")
}

#[test]
fn restore_to_a_named_restore_point_stops_there() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    let before = setup.backup(&[]);
    c.psql("insert into markers values (1)");
    let out = setup.ok(&["run", "CREATE RESTORE POINT before_load;"]);
    assert!(out.contains("restore point before_load"), "{out}");
    c.psql("insert into markers values (2)");
    // A backup after the point must not be chosen: it already holds row 2.
    let after = setup.backup(&[]);
    c.psql("insert into markers values (3)");
    setup.ok(&["create", "restore-point", "after_load"]);
    c.switch_wal_and_wait_archived();

    // The name is recorded once: recovery would stop at its first occurrence.
    let err = setup.err(&["create", "restore-point", "before_load"]);
    assert!(
        err.contains("already exists") && err.contains("hint"),
        "{err}"
    );

    let plan = setup.ok(&[
        "restore",
        "database",
        "--preview",
        "--until-restore-point",
        "before_load",
    ]);
    assert!(
        plan.contains(&before) && !plan.contains(&after),
        "the plan should use backup {before}, not {after}:\n{plan}"
    );

    let (_keep, to) = setup.restore(&["--until-restore-point", "before_load"]);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(markers(&r), "1");
    drop(r);

    // The language's form, to the later point, from the later backup.
    let (_t, dir) = new_scratch_dir();
    let to2 = dir.join("restored2");
    setup.ok(&[
        "run",
        &format!(
            "RESTORE DATABASE TO '{}' UNTIL RESTORE POINT after_load;",
            path_str(&to2)
        ),
    ]);
    let r2 = Cluster::from_restored(to2.clone());
    r2.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(markers(&r2), "1,2,3");

    let err = setup.err(&[
        "restore",
        "database",
        "--preview",
        "--until-restore-point",
        "nope",
    ]);
    assert!(
        err.contains("not recorded") && err.contains("hint"),
        "{err}"
    );
}

/// RMAN's UNTIL SEQUENCE n: recovery stops where WAL segment n begins, so what was written in
/// segment n-1 comes back and nothing of segment n.
#[test]
fn until_sequence_stops_before_that_segment() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    setup.backup(&[]);
    c.psql("insert into markers values (1)");
    let name = c.psql("select pg_walfile_name(pg_current_wal_insert_lsn())");
    let seg = |n: &str| {
        u64::from_str_radix(&n[8..16], 16).unwrap() * 256
            + u64::from_str_radix(&n[16..24], 16).unwrap()
    };
    let next = seg(&name) + 1;
    c.switch_wal_and_wait_archived();
    c.psql("insert into markers values (2)");
    let later = c.psql("select pg_walfile_name(pg_current_wal_insert_lsn())");
    assert_eq!(
        seg(&later),
        next,
        "row 2 should be in the segment after row 1's"
    );
    c.switch_wal_and_wait_archived();

    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    setup.ok(&[
        "run",
        &format!(
            "RUN {{ SET UNTIL SEQUENCE {next} THREAD 1; RESTORE DATABASE TO '{}'; RECOVER DATABASE; }}",
            path_str(&to)
        ),
    ]);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(markers(&r), "1");
}
