//! REPORT SCHEMA and REPORT UNRECOVERABLE against a real cluster, as subcommands and as
//! statements of the command language.

mod common;
mod flows;

use common::*;
use flows::*;

#[test]
fn schema_and_unrecoverable_relations() {
    let setup = Setup::new();
    let c = &setup.cluster;
    let (_t, ts_root) = new_scratch_dir();
    c.create_tablespace("ts1", &ts_root.join("ts1"));
    c.psql("create database other");
    c.psql("create table logged_one as select 1 as x");
    c.psql("create unlogged table scratch_rows (x int)");
    c.psql_db(
        "other",
        "create unlogged table cache_rows (x int); create index on cache_rows (x)",
    );

    let v: serde_json::Value =
        serde_json::from_str(&setup.ok(&["report", "schema", "--json"])).unwrap();
    let dbs = v["databases"].as_array().unwrap();
    let pg = dbs.iter().find(|d| d["name"] == "postgres").unwrap();
    assert!(
        pg["relations"].as_u64().unwrap() > 100 && pg["size_bytes"].as_u64().unwrap() > 1 << 20,
        "{pg}"
    );
    assert!(dbs.iter().any(|d| d["name"] == "other"));
    let ts = v["tablespaces"].as_array().unwrap();
    assert!(
        ts.iter()
            .any(|t| t["name"] == "pg_default" && t["location"].is_null())
    );
    assert!(
        ts.iter()
            .any(|t| t["name"] == "ts1" && t["location"].as_str().unwrap().ends_with("ts1")),
        "{ts:?}"
    );

    let v: serde_json::Value =
        serde_json::from_str(&setup.ok(&["report", "unrecoverable", "--json"])).unwrap();
    let rels: Vec<(String, String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["database"].as_str().unwrap().into(),
                r["relation"].as_str().unwrap().into(),
                r["kind"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        rels.contains(&(
            "postgres".into(),
            "public.scratch_rows".into(),
            "table".into()
        )),
        "{rels:?}"
    );
    assert!(
        rels.contains(&("other".into(), "public.cache_rows".into(), "table".into())),
        "{rels:?}"
    );
    assert!(
        rels.iter().any(|r| r.0 == "other" && r.2 == "index"),
        "{rels:?}"
    );
    assert!(!rels.iter().any(|r| r.1.contains("logged_one")), "{rels:?}");

    let out = setup.ok(&["run", "REPORT SCHEMA; REPORT UNRECOVERABLE;"]);
    assert!(
        out.contains("List of Databases") && out.contains("ts1") && out.contains("scratch_rows"),
        "{out}"
    );
}
