//! The backup host's side of a server session held by a database-host agent (see
//! [`super::agent_pg`]): a [`recman_pg::ServerLink`], so the backup runs pg_backup_start, the
//! tablespace and WAL queries and pg_backup_stop through the agent exactly as it would over
//! its own libpq session. A thread renews the lease while the session lives; dropping the
//! session closes it on the agent.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use recman_error::ErrorKind;
use recman_pg::{
    BackupStart, BackupStop, Lsn, PgError, ServerFacts, ServerLink, Session, Tablespace,
};
use recman_remote::{CallOptions, Client, RemoteError};
use serde_json::{Value, json};

use crate::error::EngineError;

/// Calls that only read are retried and bounded; starting and stopping a backup waits for a
/// checkpoint and for WAL, as long as the server needs (a dead connection is still found by
/// the transport's pings).
const QUERY_DEADLINE: Duration = Duration::from_secs(120);

struct AgentLink {
    client: Arc<Client>,
    id: String,
    stop: Option<mpsc::Sender<()>>,
    renewer: Option<JoinHandle<()>>,
}

fn link_err(url: &str, e: RemoteError) -> PgError {
    PgError::Remote {
        kind: e.kind(),
        message: format!("the server session through the agent at {url}: {e}"),
    }
}

fn bad_answer(url: &str, what: &str) -> PgError {
    PgError::Remote {
        kind: ErrorKind::InvalidInput,
        message: format!(
            "the agent at {url} answered {what} without the expected fields; hint: run the same recman version on both hosts"
        ),
    }
}

impl AgentLink {
    fn op(&self, op: &str, mut args: Value, opts: CallOptions) -> Result<Value, PgError> {
        args["id"] = json!(self.id);
        args["op"] = json!(op);
        self.client
            .call_meta("pg-call", &args, opts)
            .map_err(|e| link_err(self.client.url(), e))
    }

    fn read(&self, op: &str, args: Value) -> Result<Value, PgError> {
        self.op(
            op,
            args,
            CallOptions::idempotent().with_deadline(QUERY_DEADLINE),
        )
    }

    fn lsn(&self, v: &Value, what: &str) -> Result<Lsn, PgError> {
        v["lsn"]
            .as_u64()
            .map(Lsn)
            .ok_or_else(|| bad_answer(self.client.url(), what))
    }
}

/// The rows of a query's answer; an answer without them is an error, not an empty result.
fn rows(url: &str, v: Value) -> Result<Vec<Vec<Option<String>>>, PgError> {
    serde_json::from_value(v["rows"].clone()).map_err(|_| bad_answer(url, "a query (no rows)"))
}

impl ServerLink for AgentLink {
    fn backup_start(&self, label: &str) -> Result<BackupStart, PgError> {
        let v = self.op(
            "backup-start",
            json!({ "label": label }),
            CallOptions::default(),
        )?;
        // A timeline guessed wrong would send a restore down the wrong history: a missing
        // one is an error, never a default.
        let timeline = v["timeline"]
            .as_u64()
            .and_then(|t| u32::try_from(t).ok())
            .ok_or_else(|| bad_answer(self.client.url(), "backup-start (no timeline)"))?;
        Ok(BackupStart {
            lsn: self.lsn(&v, "backup-start")?,
            timeline,
        })
    }

    fn backup_stop(&self) -> Result<BackupStop, PgError> {
        let v = self.op("backup-stop", json!({}), CallOptions::default())?;
        let backup_label = v["backup_label"]
            .as_str()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad_answer(self.client.url(), "backup-stop (no backup_label)"))?
            .to_string();
        Ok(BackupStop {
            lsn: self.lsn(&v, "backup-stop")?,
            timeline: recman_pg::label_timeline(&backup_label),
            backup_label,
            tablespace_map: v["tablespace_map"].as_str().unwrap_or_default().to_string(),
            next_xid: v["next_xid"].as_u64().unwrap_or(0),
        })
    }

    fn switch_wal(&self) -> Result<Lsn, PgError> {
        let v = self.op("switch-wal", json!({}), CallOptions::default())?;
        self.lsn(&v, "switch-wal")
    }

    fn tablespaces(&self) -> Result<Vec<Tablespace>, PgError> {
        let v = self.read("tablespaces", json!({}))?;
        let list = v["tablespaces"]
            .as_array()
            .ok_or_else(|| bad_answer(self.client.url(), "tablespaces"))?;
        Ok(list
            .iter()
            .map(|t| Tablespace {
                oid: t["oid"].as_u64().unwrap_or(0) as u32,
                name: t["name"].as_str().unwrap_or_default().to_string(),
                location: t["location"].as_str().unwrap_or_default().to_string(),
            })
            .collect())
    }

    fn archiver_status(&self) -> Result<(Option<String>, Option<String>), PgError> {
        let v = self.read("archiver-status", json!({}))?;
        let s = |k: &str| v[k].as_str().map(str::to_string);
        Ok((s("last_archived"), s("last_failed")))
    }

    fn relation_name(
        &self,
        db_oid: Option<u32>,
        ts_oid: Option<u32>,
        relfilenode: u32,
    ) -> Option<String> {
        let args = json!({"db_oid": db_oid, "ts_oid": ts_oid, "relfilenode": relfilenode});
        let v = self.read("relation-name", args).ok()?;
        v["name"].as_str().map(str::to_string)
    }

    fn simple_query(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, PgError> {
        // The statement may change something (RMAN's SQL '...'): never sent twice.
        let opts = CallOptions::default().with_deadline(QUERY_DEADLINE);
        let v = self.op("query", json!({ "sql": sql }), opts)?;
        rows(self.client.url(), v)
    }

    fn query_db(&self, dbname: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, PgError> {
        let v = self.read("query-db", json!({"dbname": dbname, "sql": sql}))?;
        rows(self.client.url(), v)
    }
}

impl Drop for AgentLink {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.renewer.take() {
            let _ = t.join();
        }
        let opts = CallOptions::default().with_deadline(Duration::from_secs(10));
        let _ = self
            .client
            .call_meta("pg-close", &json!({"id": self.id}), opts);
    }
}

/// Opens a server session on the agent `client` talks to: the agent connects to its cluster
/// with its own settings, and holds the session for this process until it is dropped.
pub fn open(client: Arc<Client>) -> Result<Session, EngineError> {
    let url = client.url().to_string();
    let v = client
        .call_meta(
            "pg-open",
            &json!({}),
            CallOptions::default().with_deadline(QUERY_DEADLINE),
        )
        .map_err(|e| link_err(&url, e))?;
    let id = v["id"]
        .as_str()
        .ok_or_else(|| bad_answer(&url, "pg-open"))?
        .to_string();
    let f = &v["facts"];
    let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
    let facts = ServerFacts {
        version_num: f["version_num"].as_u64().unwrap_or(0) as u32,
        data_directory: s("data_directory"),
        system_identifier: s("system_identifier").parse().unwrap_or(0),
        checksums_enabled: f["checksums_enabled"].as_bool().unwrap_or(false),
        wal_segment_size: f["wal_segment_size"].as_u64().unwrap_or(16 << 20),
        archive_mode: s("archive_mode"),
        archive_command: s("archive_command"),
        wal_level: s("wal_level"),
        in_recovery: f["in_recovery"].as_bool().unwrap_or(false),
    };
    let lease = Duration::from_secs(v["lease_secs"].as_u64().unwrap_or(60).max(1));
    let (stop, stopped) = mpsc::channel::<()>();
    let renewer = {
        let (client, id) = (client.clone(), id.clone());
        std::thread::Builder::new()
            .name("recman-renew".into())
            .spawn(move || renew(&client, &id, lease, &stopped))
            .map_err(|e| EngineError::Internal(format!("cannot start the lease thread: {e}")))?
    };
    let display = format!(
        "{} (through the agent at {url})",
        v["target"].as_str().unwrap_or("the agent's server")
    );
    let link = AgentLink {
        client,
        id,
        stop: Some(stop),
        renewer: Some(renewer),
    };
    Ok(Session::over_link(display, facts, Box::new(link))?)
}

/// Renews the lease every quarter of it until the session is dropped (the sender goes away).
fn renew(client: &Client, id: &str, lease: Duration, stopped: &mpsc::Receiver<()>) {
    let every = (lease / 4).max(Duration::from_millis(250));
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
        let opts = CallOptions::idempotent().with_deadline(every);
        let _ = client.call_meta("pg-renew", &json!({ "id": id }), opts);
    }
}
