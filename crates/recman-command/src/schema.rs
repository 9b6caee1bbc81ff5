//! REPORT SCHEMA and REPORT UNRECOVERABLE, from the running target: what the cluster is made
//! of, and what no backup can bring back (unlogged relations: only their empty init fork is
//! backed up, PostgreSQL resets them at recovery). They ask the server only: no repository,
//! no registration.

use crate::env::Env;
use crate::error::ExecError;
use recman_engine::EngineError;
use recman_pg::Session;

fn session(target: Option<&str>) -> Result<Session, EngineError> {
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
fn databases(s: &mut Session) -> Result<Vec<Vec<Option<String>>>, EngineError> {
    Ok(s.simple_query(
        "select d.datname, d.oid::text, pg_database_size(d.oid)::text, t.spcname from pg_database d \
         join pg_tablespace t on t.oid = d.dattablespace where d.datallowconn order by d.datname",
    )?)
}

#[derive(Debug, Clone, PartialEq)]
pub struct SchemaDatabase {
    pub name: String,
    pub oid: u64,
    pub size_bytes: u64,
    pub tablespace: String,
    pub relations: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SchemaTablespace {
    pub name: String,
    pub oid: u64,
    /// None: a default tablespace, inside the data directory.
    pub location: Option<String>,
    pub size_bytes: u64,
}

/// REPORT SCHEMA's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaReport {
    pub data_directory: String,
    pub databases: Vec<SchemaDatabase>,
    pub tablespaces: Vec<SchemaTablespace>,
}

/// An unlogged relation (REPORT UNRECOVERABLE).
#[derive(Debug, Clone, PartialEq)]
pub struct Unlogged {
    pub database: String,
    pub relation: String,
    /// table, index, sequence, ...
    pub kind: String,
}

/// REPORT SCHEMA: the server's data directory, databases and tablespaces.
pub fn report_schema(e: &dyn Env) -> Result<SchemaReport, ExecError> {
    let target = e.target();
    let mut s = session(target.as_deref())?;
    let mut databases_out = Vec::new();
    for d in databases(&mut s)? {
        let name = text(&d[0]);
        let rel = s
            .query_db(&name, "select count(*)::text from pg_class where relkind in ('r', 'i', 't', 'm', 'S', 'p', 'I')")
            .map_err(EngineError::from)?;
        databases_out.push(SchemaDatabase {
            oid: num(&d[1]),
            size_bytes: num(&d[2]),
            tablespace: text(&d[3]),
            relations: rel.first().map(|r| num(&r[0])).unwrap_or(0),
            name,
        });
    }
    let tablespaces = s
        .simple_query("select spcname, oid::text, pg_tablespace_location(oid), pg_tablespace_size(oid)::text from pg_tablespace order by spcname")
        .map_err(EngineError::from)?
        .iter()
        .map(|t| {
            let loc = text(&t[2]);
            SchemaTablespace {
                name: text(&t[0]),
                oid: num(&t[1]),
                location: (!loc.is_empty()).then_some(loc),
                size_bytes: num(&t[3]),
            }
        })
        .collect();
    let report = SchemaReport {
        data_directory: s.data_directory.to_string(),
        databases: databases_out,
        tablespaces,
    };
    Ok(report)
}

/// REPORT UNRECOVERABLE: the unlogged relations of every database.
pub fn report_unrecoverable(e: &dyn Env) -> Result<Vec<Unlogged>, ExecError> {
    let target = e.target();
    let mut s = session(target.as_deref())?;
    let mut rows = Vec::new();
    for d in databases(&mut s)? {
        let name = text(&d[0]);
        let rels = s
            .query_db(
                &name,
                "select n.nspname || '.' || c.relname, case c.relkind when 'r' then 'table' when 'i' then 'index' \
             when 'S' then 'sequence' when 'm' then 'materialized view' when 'p' then 'partitioned table' \
             when 't' then 'toast table' else c.relkind::text end from pg_class c \
             join pg_namespace n on n.oid = c.relnamespace where c.relpersistence = 'u' order by 1",
            )
            .map_err(EngineError::from)?;
        for r in rels {
            rows.push(Unlogged {
                database: name.clone(),
                relation: text(&r[0]),
                kind: text(&r[1]),
            });
        }
    }
    Ok(rows)
}
