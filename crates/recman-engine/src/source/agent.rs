//! The database-host agent (`recman server --pgdata DIR`): serves the data directory to a
//! backup host over the fleet transport. It only reads, and only inside its directory.
//!
//! Methods (meta in, meta and payload out; errors keep their kind across the wire):
//! - `hello` → `{pgdata}`: the agent's data directory.
//! - `facts` → `{pgdata, canonical, major, system_identifier (decimal text),
//!   checksums_enabled, wal_segment_size, state, checkpoint_redo}`: PG_VERSION and pg_control.
//! - `scan` → payload: JSON `{entries: [manifest entry], files: [{rel, size, mode, uid, gid,
//!   mtime}]}`, what [`crate::scan::scan_data_dir`] lists.
//! - `stat {path}` → `{size}`; not-found when the file is gone.
//! - `read {path, offset, len}` → payload: up to `len` bytes at `offset`, fewer only at the
//!   end of the file (a file removed meanwhile ends there: WAL replay removes it again). Pages
//!   of a relation file that fail their checks are read again here, up to three times, so a
//!   page torn by a concurrent write costs no round trip; the backup host checks every page
//!   again and judges what still fails.
//! - `read-file {path}` → payload: a small file whole (a timeline history, a WAL segment).
//!
//! - `pg-open`, `pg-call`, `pg-renew`, `pg-close`: the server session a backup starts and
//!   stops through ([`super::agent_pg`]).
//!
//! `path` is relative to the data directory, '/'-separated, without `..`: anything else is
//! refused as invalid input.

use std::fs::File;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use recman_remote::{Call, ResponseWriter, Service, ServiceError};
use serde_json::json;

use super::ReadAt;
use crate::pagecheck::{PageRules, PageVerdicts, check_chunk};

/// The largest read one call may ask for.
const MAX_READ: u64 = 64 << 20;

pub struct AgentService {
    pgdata: PathBuf,
    checksums: bool,
    /// The server sessions held for backup hosts (the `pg-*` methods, [`super::agent_pg`]).
    pg: super::agent_pg::PgSessions,
}

impl AgentService {
    /// Checks that `pgdata` is a cluster's data directory this process can read; server
    /// sessions connect with `conninfo` (the agent's --target; libpq's defaults when None).
    pub fn new(
        pgdata: &Path,
        conninfo: Option<String>,
    ) -> Result<AgentService, crate::error::EngineError> {
        let facts = recman_pg::read_data_dir_facts(pgdata)?;
        Ok(AgentService {
            pgdata: pgdata.to_path_buf(),
            checksums: facts.checksums_enabled.unwrap_or(false),
            pg: super::agent_pg::PgSessions::new(conninfo),
        })
    }

    /// Server sessions expire after `lease` without a call (instead of 60 s or
    /// RECMAN_AGENT_LEASE_SECS).
    pub fn with_lease(mut self, conninfo: Option<String>, lease: std::time::Duration) -> Self {
        self.pg = super::agent_pg::PgSessions::with_lease(conninfo, lease);
        self
    }

    fn path(&self, meta: &serde_json::Value) -> Result<(String, PathBuf), ServiceError> {
        let rel = meta["path"]
            .as_str()
            .ok_or_else(|| ServiceError::invalid("the call names no path"))?;
        let p = Path::new(rel);
        if rel.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(ServiceError::invalid(format!(
                "path {rel:?} is not inside the data directory; hint: the agent serves only relative paths without '..'"
            )));
        }
        Ok((rel.to_string(), self.pgdata.join(p)))
    }

    fn facts(&self) -> Result<serde_json::Value, ServiceError> {
        let f = recman_pg::read_data_dir_facts(&self.pgdata)
            .map_err(|e| ServiceError::new(e.kind(), e.to_string()))?;
        Ok(json!({
            "pgdata": self.pgdata.display().to_string(),
            "canonical": std::fs::canonicalize(&self.pgdata).ok().map(|p| p.display().to_string()),
            "major": f.major,
            "system_identifier": f.system_identifier.to_string(),
            "checksums_enabled": f.checksums_enabled,
            "wal_segment_size": f.wal_segment_size,
            "state": f.state,
            "checkpoint_redo": f.checkpoint_redo.map(|l| l.0),
        }))
    }

    fn scan(&self, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        let s = crate::scan::scan_data_dir(&self.pgdata)
            .map_err(|e| ServiceError::new(e.kind(), e.to_string()))?;
        let files: Vec<_> = s
            .files
            .iter()
            .map(|f| json!({"rel": f.rel, "size": f.size, "mode": f.mode, "uid": f.uid, "gid": f.gid, "mtime": f.mtime}))
            .collect();
        let body = serde_json::to_vec(&json!({"entries": s.entries, "files": files}))
            .map_err(|e| ServiceError::new(recman_error::ErrorKind::Internal, e.to_string()))?;
        out.write_all(&body)
            .map_err(|e| ServiceError::io("sending the file list", &e))
    }

    fn read(&self, meta: &serde_json::Value, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        let (rel, path) = self.path(meta)?;
        let offset = meta["offset"].as_u64().unwrap_or(0);
        let len = meta["len"].as_u64().unwrap_or(0).min(MAX_READ) as usize;
        // A slow device at the source (tests only): a backup slow enough to lose its agent.
        if let Some(d) = crate::fault::slow_read_of(&rel) {
            std::thread::sleep(d);
        }
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(ServiceError::io(
                    &format!("cannot open {}", path.display()),
                    &e,
                ));
            }
        };
        let mut buf = vec![0u8; len];
        let mut n = 0;
        while n < len {
            match ReadAt::read_at(&file, &mut buf[n..], offset + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(ServiceError::io(
                        &format!("cannot read {}", path.display()),
                        &e,
                    ));
                }
            }
        }
        buf.truncate(n);
        if let Some(rf) = recman_page::classify(&rel)
            && offset.is_multiple_of(recman_page::BLCKSZ as u64)
        {
            let rules = PageRules {
                relfile: &rf,
                checksums: self.checksums,
                start_lsn: None,
                skip: &[],
                logical: false,
            };
            check_chunk(
                Some(&file),
                &rules,
                offset,
                &mut buf,
                &mut PageVerdicts::default(),
            )
            .map_err(|e| ServiceError::io(&format!("cannot re-read {}", path.display()), &e))?;
        }
        out.send(buf.into())
            .map_err(|e| ServiceError::io("sending the data", &e))
    }
}

impl Service for AgentService {
    fn call(&self, call: Call<'_>, out: &mut ResponseWriter) -> Result<(), ServiceError> {
        let send_meta = |out: &mut ResponseWriter, m: serde_json::Value| {
            out.meta(&m)
                .map_err(|e| ServiceError::io("sending the answer", &e))
        };
        match call.method {
            "hello" => send_meta(out, json!({"pgdata": self.pgdata.display().to_string()})),
            "facts" => {
                let f = self.facts()?;
                send_meta(out, f)
            }
            "scan" => self.scan(out),
            "stat" => {
                let (_, path) = self.path(&call.meta)?;
                let md = std::fs::metadata(&path).map_err(|e| {
                    ServiceError::io(&format!("cannot stat {}", path.display()), &e)
                })?;
                send_meta(out, json!({"size": md.len()}))
            }
            "read" => self.read(&call.meta, out),
            m if m.starts_with("pg-") => self.pg.call(m, &call.meta, out),
            "read-file" => {
                let (_, path) = self.path(&call.meta)?;
                let data = std::fs::read(&path).map_err(|e| {
                    ServiceError::io(&format!("cannot read {}", path.display()), &e)
                })?;
                out.send(data.into())
                    .map_err(|e| ServiceError::io("sending the file", &e))
            }
            other => Err(ServiceError::invalid(format!(
                "the database-host agent has no method {other:?}; hint: run the same recman version on both hosts"
            ))),
        }
    }
}
