//! REPORT SCHEMA and REPORT UNRECOVERABLE, from the running target: what the cluster is made
//! of, and what no backup can bring back (unlogged relations: only their empty init fork is
//! backed up, PostgreSQL resets them at recovery).

use anyhow::Result;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use recman_pg::Session;

fn session(target: Option<&str>) -> Result<Session> {
    let t = recman_pg::resolve_conninfo(target)?;
    Ok(Session::connect(&t)?)
}

fn num(v: &Option<String>) -> u64 {
    v.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn text(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// Databases a session may connect to (not templates that refuse connections).
fn databases(s: &mut Session) -> Result<Vec<Vec<Option<String>>>> {
    Ok(s.simple_query(
        "select d.datname, d.oid::text, pg_database_size(d.oid)::text, t.spcname from pg_database d \
         join pg_tablespace t on t.oid = d.dattablespace where d.datallowconn order by d.datname",
    )?)
}

pub fn report_schema(target: Option<&str>, json: bool) -> Result<()> {
    let mut s = session(target)?;
    let mut dbs = Vec::new();
    for d in databases(&mut s)? {
        let name = text(&d[0]);
        let rel = s.query_db(&name, "select count(*)::text from pg_class where relkind in ('r', 'i', 't', 'm', 'S', 'p', 'I')")?;
        dbs.push(serde_json::json!({
            "name": name,
            "oid": num(&d[1]),
            "size_bytes": num(&d[2]),
            "tablespace": text(&d[3]),
            "relations": rel.first().map(|r| num(&r[0])).unwrap_or(0),
        }));
    }
    let tss: Vec<serde_json::Value> = s
        .simple_query("select spcname, oid::text, pg_tablespace_location(oid), pg_tablespace_size(oid)::text from pg_tablespace order by spcname")?
        .iter()
        .map(|t| {
            let loc = text(&t[2]);
            serde_json::json!({
                "name": text(&t[0]),
                "oid": num(&t[1]),
                // The default tablespaces live inside the data directory.
                "location": if loc.is_empty() { serde_json::Value::Null } else { loc.into() },
                "size_bytes": num(&t[3]),
            })
        })
        .collect();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "databases": dbs, "tablespaces": tss })
            )?
        );
        return Ok(());
    }
    println!("Report of database schema for {}", s.data_directory);
    println!();
    println!("List of Databases");
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["Name", "OID", "Size", "Tablespace", "Relations"]);
    for d in &dbs {
        t.add_row([
            d["name"].as_str().unwrap_or("").to_string(),
            d["oid"].to_string(),
            crate::list::size(d["size_bytes"].as_u64().unwrap_or(0)),
            d["tablespace"].as_str().unwrap_or("").to_string(),
            d["relations"].to_string(),
        ]);
    }
    println!("{t}");
    println!();
    println!("List of Tablespaces");
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["Name", "OID", "Size", "Location"]);
    for ts in &tss {
        t.add_row([
            ts["name"].as_str().unwrap_or("").to_string(),
            ts["oid"].to_string(),
            crate::list::size(ts["size_bytes"].as_u64().unwrap_or(0)),
            ts["location"]
                .as_str()
                .unwrap_or("(data directory)")
                .to_string(),
        ]);
    }
    println!("{t}");
    Ok(())
}

pub fn report_unrecoverable(target: Option<&str>, json: bool) -> Result<()> {
    let mut s = session(target)?;
    let mut rows = Vec::new();
    for d in databases(&mut s)? {
        let name = text(&d[0]);
        let rels = s.query_db(
            &name,
            "select n.nspname || '.' || c.relname, case c.relkind when 'r' then 'table' when 'i' then 'index' \
             when 'S' then 'sequence' when 'm' then 'materialized view' when 'p' then 'partitioned table' \
             when 't' then 'toast table' else c.relkind::text end from pg_class c \
             join pg_namespace n on n.oid = c.relnamespace where c.relpersistence = 'u' order by 1",
        )?;
        for r in rels {
            rows.push(serde_json::json!({ "database": name, "relation": text(&r[0]), "kind": text(&r[1]) }));
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!("Report of relations that need backup due to unrecoverable operations");
    if rows.is_empty() {
        println!("none: the cluster has no unlogged relations");
        return Ok(());
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["Database", "Relation", "Kind"]);
    for r in &rows {
        t.add_row([
            r["database"].as_str().unwrap_or(""),
            r["relation"].as_str().unwrap_or(""),
            r["kind"].as_str().unwrap_or(""),
        ]);
    }
    println!("{t}");
    println!(
        "unlogged relations are restored empty: their data is in no backup and no WAL; hint: make them logged (ALTER TABLE ... SET LOGGED) or reload them after a restore"
    );
    Ok(())
}
