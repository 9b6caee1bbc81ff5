//! Issue 18, acceptance 2 and 3: RECOVER TABLE through an auxiliary instance (rows deleted
//! after T come back under a new name, a TOASTed table and a partition too, the live table
//! untouched, the big database's files never read) and `restore database --include-db` (the
//! chosen database equal, the others refused). One cluster serves every assertion.

mod common;
mod flows;

use common::*;
use flows::*;
use std::time::Duration;

fn q(c: &Cluster, db: &str, sql: &str) -> String {
    c.psql_db(db, sql)
}

#[test]
fn recover_table_and_include_db() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create database app");
    c.psql("create database big");
    q(
        c,
        "app",
        "create table t(id serial primary key, v text); \
         insert into t(v) select 'row ' || g from generate_series(1, 1000) g; \
         create table toasty(id int primary key, doc text); \
         insert into toasty select g, (select string_agg(md5(g::text || x::text), '') from generate_series(1, 300) x) from generate_series(1, 40) g; \
         create table parted(id int, v text) partition by range(id); \
         create table parted_a partition of parted for values from (0) to (100); \
         create table parted_b partition of parted for values from (100) to (200); \
         insert into parted select g, 'p' || g from generate_series(0, 199) g;",
    );
    q(
        c,
        "big",
        "create table filler as select g, repeat('x', 300) as pad from generate_series(1, 240000) g",
    );
    let toast_rows = q(
        c,
        "app",
        "select count(*) from toasty where pg_column_size(doc) > 2000",
    );
    assert_eq!(toast_rows, "40", "the documents must be stored out of line");
    // Every file of the cluster multiplexed into few sets: only the piece index lets a
    // partial restore read less than the sets holding its files (issue 38).
    setup.backup(&["--filesperset", "64"]);
    let want = |sql: &str| q(c, "app", sql);
    let t_sum = "select count(*) || ':' || md5(string_agg(id || v, ',' order by id)) from ";
    let toast_sum = "select count(*) || ':' || md5(string_agg(id || doc, ',' order by id)) from ";
    let t_at = want(&format!("{t_sum}t"));
    let toast_at = want(&format!("{toast_sum}toasty"));
    let part_at = want(&format!("{t_sum}parted_a"));
    std::thread::sleep(Duration::from_millis(1100));
    let time_t = c.psql("select clock_timestamp()::text");
    std::thread::sleep(Duration::from_millis(1100));
    q(
        c,
        "app",
        "delete from t where id % 3 = 0; delete from toasty where id > 10; delete from parted_a where id < 50",
    );
    q(c, "big", "update filler set pad = 'y' where g < 100");
    c.switch_wal_and_wait_archived();
    let t_live = want(&format!("{t_sum}t"));

    // The table as it was at T comes back as t_old; the live table keeps its deletions.
    let (_aux_keep, aux_root) = new_scratch_dir();
    let aux = aux_root.join("aux");
    let out = setup.ok(&[
        "recover",
        "table",
        "public.t",
        "--database",
        "app",
        "--until-time",
        &time_t,
        "--remap-table",
        "t_old",
        "--auxiliary-dir",
        path_str(&aux),
    ]);
    assert_eq!(want(&format!("{t_sum}t_old")), t_at, "{out}");
    assert_eq!(want(&format!("{t_sum}t")), t_live);
    assert!(!aux.exists(), "the auxiliary instance is removed");
    // What it read, against the backup: of the sets holding its files, only their chunks.
    let read = figure(&out, "bytes: restored ");
    let read = figure(&out, &format!("restored {read}, read "));
    let backup_size = figure(&out, ", backup ");
    eprintln!("recover table read {read} bytes of a {backup_size}-byte backup");
    assert!(read * 10 < backup_size, "{out}");

    // A TOASTed table loaded as toasty_old; a partition only dumped, then loaded by hand.
    setup.ok(&[
        "recover",
        "table",
        "toasty",
        "--database",
        "app",
        "--until-time",
        &time_t,
        "--remap-table",
        "toasty_old",
        "--auxiliary-dir",
        path_str(&aux),
    ]);
    assert_eq!(want(&format!("{toast_sum}toasty_old")), toast_at);
    let (_d, dumps) = new_scratch_dir();
    let dump = dumps.join("parted_a.sql");
    setup.ok(&[
        "recover",
        "table",
        "public.parted_a",
        "--database",
        "app",
        "--until-time",
        &time_t,
        "--remap-table",
        "parted_a_old",
        "--dump",
        path_str(&dump),
        "--auxiliary-dir",
        path_str(&aux),
    ]);
    let text = std::fs::read_to_string(&dump).unwrap();
    assert!(text.contains("CREATE TABLE public.parted_a_old"), "{text}");
    assert_eq!(
        q(c, "app", "select to_regclass('parted_a_old') is null"),
        "t"
    );
    q(c, "app", &text);
    assert_eq!(want(&format!("{t_sum}parted_a_old")), part_at);
    assert_eq!(
        q(c, "app", "select count(*) from parted"),
        "150",
        "the live parent is untouched"
    );

    // Refusals: a table absent at T, an auxiliary directory in use, a time before every backup.
    let err = setup.err(&[
        "recover",
        "table",
        "public.nosuch",
        "--database",
        "app",
        "--until-time",
        &time_t,
        "--auxiliary-dir",
        path_str(&aux),
    ]);
    assert!(
        err.contains("table public.nosuch does not exist") && err.contains("hint"),
        "{err}"
    );
    std::fs::create_dir_all(aux.join("busy")).unwrap();
    let err = setup.err(&[
        "recover",
        "table",
        "t",
        "--database",
        "app",
        "--until-time",
        &time_t,
        "--remap-table",
        "x",
        "--auxiliary-dir",
        path_str(&aux),
    ]);
    assert!(
        err.contains("is not empty") && err.contains("hint"),
        "{err}"
    );
    std::fs::remove_dir_all(&aux).unwrap();
    let err = setup.err(&[
        "recover",
        "table",
        "t",
        "--database",
        "app",
        "--until-time",
        "2001-01-01 00:00:00+00",
        "--remap-table",
        "x",
        "--auxiliary-dir",
        path_str(&aux),
    ]);
    assert!(err.contains("no backup is consistent before"), "{err}");

    // restore --include-db app: app opens with the data of the end of the WAL; big is refused.
    c.switch_wal_and_wait_archived();
    let expected = c.table_checksums("app");
    let (_keep, to) = setup.restore(&["--include-db", "app"]);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(180));
    assert_eq!(r.table_checksums("app"), expected);
    r.amcheck("app");
    let refused = r.try_psql_db("big", "select 1").unwrap_err();
    assert!(
        refused.contains("big") && refused.contains("missing"),
        "{refused}"
    );
    r.stop();
}

/// A figure of recover table's `bytes:` line (`read N`, `backup N`).
fn figure(out: &str, label: &str) -> u64 {
    let at = out
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {out}"))
        + label.len();
    let num: String = out[at..].chars().take_while(char::is_ascii_digit).collect();
    num.parse()
        .unwrap_or_else(|_| panic!("no number after {label:?} in {out}"))
}
