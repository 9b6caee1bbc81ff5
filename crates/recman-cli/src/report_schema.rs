//! How REPORT SCHEMA and REPORT UNRECOVERABLE are printed; the command model asks the server
//! (`recman_command::schema`).

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use recman_command::schema::{SchemaReport, Unlogged};

fn print_json(v: &serde_json::Value) {
    match serde_json::to_string_pretty(v) {
        Ok(t) => println!("{t}"),
        Err(e) => eprintln!("recman: cannot print the report as JSON: {e}"),
    }
}

pub fn report_schema(r: &SchemaReport, json: bool) {
    let dbs: Vec<serde_json::Value> = r
        .databases
        .iter()
        .map(|d| {
            serde_json::json!({
                "name": d.name,
                "oid": d.oid,
                "size_bytes": d.size_bytes,
                "tablespace": d.tablespace,
                "relations": d.relations,
            })
        })
        .collect();
    let tss: Vec<serde_json::Value> = r
        .tablespaces
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "oid": t.oid,
                // The default tablespaces live inside the data directory.
                "location": t.location,
                "size_bytes": t.size_bytes,
            })
        })
        .collect();
    if json {
        print_json(&serde_json::json!({ "databases": dbs, "tablespaces": tss }));
        return;
    }
    println!("Report of database schema for {}", r.data_directory);
    println!();
    println!("List of Databases");
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["Name", "OID", "Size", "Tablespace", "Relations"]);
    for d in &dbs {
        t.add_row([
            d["name"].as_str().unwrap_or("").to_string(),
            d["oid"].to_string(),
            crate::display::size(d["size_bytes"].as_u64().unwrap_or(0)),
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
            crate::display::size(ts["size_bytes"].as_u64().unwrap_or(0)),
            ts["location"]
                .as_str()
                .unwrap_or("(data directory)")
                .to_string(),
        ]);
    }
    println!("{t}");
}

pub fn report_unrecoverable(rows: &[Unlogged], json: bool) {
    if json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| serde_json::json!({ "database": r.database, "relation": r.relation, "kind": r.kind }))
            .collect();
        print_json(&serde_json::Value::Array(v));
        return;
    }
    println!("Report of relations that need backup due to unrecoverable operations");
    if rows.is_empty() {
        println!("none: the cluster has no unlogged relations");
        return;
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["Database", "Relation", "Kind"]);
    for r in rows {
        t.add_row([r.database.as_str(), r.relation.as_str(), r.kind.as_str()]);
    }
    println!("{t}");
    println!(
        "unlogged relations are restored empty: their data is in no backup and no WAL; hint: make them logged (ALTER TABLE ... SET LOGGED) or reload them after a restore"
    );
}
