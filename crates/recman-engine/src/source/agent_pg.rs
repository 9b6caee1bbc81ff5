//! The agent's side of "starts/stops backups": the one libpq session to the cluster, held on
//! the database host for a backup host that cannot (or should not) reach PostgreSQL itself.
//!
//! A non-exclusive backup belongs to the session that started it, so the agent keeps each
//! session open between calls, keyed by an id it hands out, under a lease: every call renews
//! it, and a backup host that goes quiet for longer than the lease (it died, or the network
//! did) loses the session — the agent closes it, and PostgreSQL ends the backup it held.
//!
//! Methods (meta in, meta out):
//! - `pg-open` → `{id, lease_secs, target, facts: {version_num, data_directory,
//!   system_identifier (decimal text), checksums_enabled, wal_segment_size, archive_mode,
//!   archive_command, wal_level, in_recovery}}`: connects with the agent's `--target` (or
//!   libpq's defaults where the agent runs).
//! - `pg-call {id, op, ...}` → the op's answer; `op` is one of `backup-start {label}` →
//!   `{lsn, timeline}`, `backup-stop` → `{lsn, backup_label, tablespace_map, next_xid,
//!   timeline}`, `switch-wal` → `{lsn}`, `tablespaces` → `{tablespaces: [{oid, name,
//!   location}]}`, `archiver-status` → `{last_archived, last_failed}`, `relation-name
//!   {db_oid, ts_oid, relfilenode}` → `{name}`, `query {sql}` and `query-db {dbname, sql}` →
//!   `{rows}`, where `sql` must be one of the statements recman itself sends ([`known`]):
//!   the agent's session is often a superuser's, and an allowed client certificate must not
//!   become a way to run any SQL (`COPY … TO PROGRAM`) on the database host. LSNs are numbers.
//! - `pg-renew {id}` → `{}`; not-found once the lease has run out.
//! - `pg-close {id}` → `{}`: the session ends (and with it a backup it did not stop).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use recman_error::ErrorKind;
use recman_pg::{PgError, Session};
use recman_remote::{ResponseWriter, ServiceError};
use serde_json::{Value, json};

/// How long a session outlives its backup host's last call, unless RECMAN_AGENT_LEASE_SECS
/// says otherwise: long enough for a slow checkpoint between two renewals (a client renews
/// every quarter of it), short enough that a dead backup host does not hold a backup open.
const DEFAULT_LEASE: Duration = Duration::from_secs(60);

struct Held {
    session: Session,
    touched: Instant,
}

type Map = Mutex<HashMap<String, Arc<Mutex<Held>>>>;

/// The sessions an agent holds for backup hosts.
pub struct PgSessions {
    conninfo: Option<String>,
    lease: Duration,
    map: Arc<Map>,
}

fn pg_err(e: PgError) -> ServiceError {
    ServiceError::new(e.kind(), e.to_string())
}

impl PgSessions {
    /// Sessions to the server `conninfo` names (libpq's defaults when None); a thread ends
    /// those whose lease ran out.
    pub fn new(conninfo: Option<String>) -> PgSessions {
        let lease = std::env::var("RECMAN_AGENT_LEASE_SECS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&s| s > 0)
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_LEASE);
        PgSessions::with_lease(conninfo, lease)
    }

    /// [`PgSessions::new`] with the lease given.
    pub fn with_lease(conninfo: Option<String>, lease: Duration) -> PgSessions {
        let map: Arc<Map> = Arc::default();
        let weak = Arc::downgrade(&map);
        std::thread::Builder::new()
            .name("recman-lease".into())
            .spawn(move || reap(weak, lease))
            .expect("the lease thread starts");
        PgSessions {
            conninfo,
            lease,
            map,
        }
    }

    fn held(&self, meta: &Value) -> Result<Arc<Mutex<Held>>, ServiceError> {
        let id = meta["id"].as_str().unwrap_or_default();
        self.map
            .lock()
            .expect("sessions")
            .get(id)
            .cloned()
            .ok_or_else(|| {
                ServiceError::not_found(format!(
                    "the agent holds no server session {id:?}: it was closed, or its lease of {}s ran out while the backup host was silent; hint: run the backup again",
                    self.lease.as_secs()
                ))
            })
    }

    fn open(&self) -> Result<Value, ServiceError> {
        let target = recman_pg::resolve_conninfo(self.conninfo.as_deref()).map_err(pg_err)?;
        let session = Session::connect(&target).map_err(pg_err)?;
        let f = session.facts();
        // Not guessable by another client of the agent: 128 bits from the system's source.
        let bytes = recman_media::crypt::try_random::<16>().map_err(|e| {
            ServiceError::new(ErrorKind::Io, format!("the system's random source: {e}"))
        })?;
        let id = format!("{:032x}", u128::from_le_bytes(bytes));
        let answer = json!({
            "id": id,
            "lease_secs": self.lease.as_secs(),
            "target": session.target(),
            "facts": {
                "version_num": f.version_num,
                "data_directory": f.data_directory,
                "system_identifier": f.system_identifier.to_string(),
                "checksums_enabled": f.checksums_enabled,
                "wal_segment_size": f.wal_segment_size,
                "archive_mode": f.archive_mode,
                "archive_command": f.archive_command,
                "wal_level": f.wal_level,
                "in_recovery": f.in_recovery,
            },
        });
        let held = Held {
            session,
            touched: Instant::now(),
        };
        self.map
            .lock()
            .expect("sessions")
            .insert(id, Arc::new(Mutex::new(held)));
        Ok(answer)
    }

    fn op(&self, meta: &Value) -> Result<Value, ServiceError> {
        let held = self.held(meta)?;
        let mut h = held.lock().expect("session");
        h.touched = Instant::now();
        let s = &mut h.session;
        let str_of = |k: &str| meta[k].as_str().unwrap_or_default().to_string();
        let answer = match meta["op"].as_str().unwrap_or_default() {
            "backup-start" => {
                let st = s.backup_start(&str_of("label")).map_err(pg_err)?;
                json!({"lsn": st.lsn.0, "timeline": st.timeline})
            }
            "backup-stop" => {
                let st = s.backup_stop().map_err(pg_err)?;
                json!({
                    "lsn": st.lsn.0,
                    "backup_label": st.backup_label,
                    "tablespace_map": st.tablespace_map,
                    "next_xid": st.next_xid,
                    "timeline": st.timeline,
                })
            }
            "switch-wal" => json!({"lsn": s.switch_wal().map_err(pg_err)?.0}),
            "tablespaces" => {
                let t: Vec<Value> = s
                    .tablespaces()
                    .map_err(pg_err)?
                    .into_iter()
                    .map(|t| json!({"oid": t.oid, "name": t.name, "location": t.location}))
                    .collect();
                json!({ "tablespaces": t })
            }
            "archiver-status" => {
                let (a, f) = s.archiver_status().map_err(pg_err)?;
                json!({"last_archived": a, "last_failed": f})
            }
            "relation-name" => {
                let oid = |k: &str| meta[k].as_u64().map(|v| v as u32);
                let name = s.relation_name(
                    oid("db_oid"),
                    oid("ts_oid"),
                    oid("relfilenode").unwrap_or(0),
                );
                json!({ "name": name })
            }
            "query" => {
                let sql = str_of("sql");
                json!({"rows": s.simple_query(known(&sql)?).map_err(pg_err)?})
            }
            "query-db" => {
                let sql = str_of("sql");
                json!({"rows": s.query_db(&str_of("dbname"), known(&sql)?).map_err(pg_err)?})
            }
            other => {
                return Err(ServiceError::invalid(format!(
                    "the agent's server session has no operation {other:?}; hint: run the same recman version on both hosts"
                )));
            }
        };
        h.touched = Instant::now();
        Ok(answer)
    }

    /// Serves one `pg-*` method.
    pub fn call(
        &self,
        method: &str,
        meta: &Value,
        out: &mut ResponseWriter,
    ) -> Result<(), ServiceError> {
        let answer = match method {
            "pg-open" => self.open()?,
            "pg-call" => self.op(meta)?,
            "pg-renew" => {
                let held = self.held(meta)?;
                // A call in progress holds the session and renews it when it ends.
                if let Ok(mut h) = held.try_lock() {
                    h.touched = Instant::now();
                }
                json!({})
            }
            "pg-close" => {
                let id = meta["id"].as_str().unwrap_or_default();
                self.map.lock().expect("sessions").remove(id);
                json!({})
            }
            other => {
                return Err(ServiceError::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "the database-host agent has no method {other:?}; hint: run the same recman version on both hosts"
                    ),
                ));
            }
        };
        out.meta(&answer)
            .map_err(|e| ServiceError::io("sending the answer", &e))
    }
}

impl Drop for PgSessions {
    /// A libpq client may not be dropped on the transport's runtime threads (where the last
    /// reference to a service can go): sessions still held end on a thread of their own.
    fn drop(&mut self) {
        let held: Vec<_> = match self.map.lock() {
            Ok(mut m) => m.drain().collect(),
            Err(_) => return,
        };
        if !held.is_empty() {
            let _ = std::thread::spawn(move || drop(held)).join();
        }
    }
}

/// Ends the sessions whose backup host stopped calling; a session busy in a call is not idle.
fn reap(map: Weak<Map>, lease: Duration) {
    let tick = (lease / 4).clamp(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        std::thread::sleep(tick);
        let Some(map) = map.upgrade() else { return };
        let mut m = map.lock().expect("sessions");
        let expired: Vec<String> = m
            .iter()
            .filter(|(_, h)| {
                h.try_lock()
                    .map(|h| h.touched.elapsed() > lease)
                    .unwrap_or(false)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            if let Some(h) = m.remove(&id) {
                // Closing the connection ends a backup it holds; PostgreSQL logs that.
                drop(h);
                eprintln!(
                    "recman server: closed server session {id}: its backup host was silent for more than {}s (the lease)",
                    lease.as_secs()
                );
            }
        }
    }
}

/// `sql` if it is one of the statements recman sends through a session, else an error: the
/// agent runs nothing a backup host makes up.
fn known(sql: &str) -> Result<&str, ServiceError> {
    let statements = [
        crate::agent_sql::PING_SQL,
        crate::agent_sql::CURRENT_TIMELINE_SQL,
        crate::agent_sql::IN_RECOVERY_SQL,
        crate::agent_sql::REPLAY_LSN_SQL,
        crate::agent_sql::CHECKPOINT_SQL,
        crate::agent_sql::REDO_LSN_SQL,
    ];
    let switch_wal = (9..=40)
        .filter_map(recman_pg::version::for_major)
        .any(|v| v.switch_wal_sql == sql);
    if statements.contains(&sql) || switch_wal {
        return Ok(sql);
    }
    Err(ServiceError::invalid(format!(
        "the agent runs only the statements recman itself sends, not {:?}; hint: run the same recman version on both hosts, and run other SQL on the database host",
        sql.chars().take(80).collect::<String>()
    )))
}

#[cfg(test)]
mod tests {
    use super::known;

    #[test]
    fn the_agent_runs_recman_s_statements_and_nothing_else() {
        for sql in [
            crate::agent_sql::PING_SQL,
            crate::agent_sql::CURRENT_TIMELINE_SQL,
            crate::agent_sql::CHECKPOINT_SQL,
            recman_pg::version::for_major(15).unwrap().switch_wal_sql,
            recman_pg::version::for_major(18).unwrap().switch_wal_sql,
        ] {
            assert_eq!(known(sql).unwrap(), sql);
        }
        for sql in [
            "COPY (select 1) TO PROGRAM 'id'",
            "select 1; drop table t",
            "",
        ] {
            let e = known(sql).unwrap_err().to_string();
            assert!(
                e.contains("runs only the statements recman itself sends"),
                "{e}"
            );
        }
    }
}
