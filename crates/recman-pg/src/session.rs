use crate::conn::ConnTarget;
use crate::error::PgError;
use crate::lsn::Lsn;
use crate::version::{self, VersionFacts};
use postgres::Client;

/// One connection to the target cluster. A non-exclusive backup belongs to the session that
/// started it, so the same `Session` must live from `backup_start` to `backup_stop`; if the
/// process dies in between, the server ends the backup by itself when the connection drops.
/// The connection is libpq's own, or a [`ServerLink`]: a session a database-host agent holds
/// for this process (docs/fleet.md).
pub struct Session {
    conn: Conn,
    display: String,
    pub version_num: u32,
    pub version: VersionFacts,
    pub data_directory: String,
    pub system_identifier: u64,
    pub checksums_enabled: bool,
    pub wal_segment_size: u64,
    pub archive_mode: String,
    pub archive_command: String,
    pub wal_level: String,
    pub in_recovery: bool,
}

// One session per command: the size of the libpq variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Conn {
    Pg { client: Client, target: ConnTarget },
    Link(Box<dyn ServerLink>),
}

/// A session held elsewhere (a database-host agent's libpq session, kept for this process
/// between the calls): the operations a backup needs of the server, each run there.
pub trait ServerLink: Send {
    fn backup_start(&self, label: &str) -> Result<BackupStart, PgError>;
    fn backup_stop(&self) -> Result<BackupStop, PgError>;
    fn switch_wal(&self) -> Result<Lsn, PgError>;
    fn tablespaces(&self) -> Result<Vec<Tablespace>, PgError>;
    fn archiver_status(&self) -> Result<(Option<String>, Option<String>), PgError>;
    fn relation_name(
        &self,
        db_oid: Option<u32>,
        ts_oid: Option<u32>,
        relfilenode: u32,
    ) -> Option<String>;
    fn simple_query(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, PgError>;
    fn query_db(&self, dbname: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, PgError>;
}

/// What [`Session::connect`] learns of the server, as a [`ServerLink`] reports it.
#[derive(Clone, Debug)]
pub struct ServerFacts {
    pub version_num: u32,
    pub data_directory: String,
    pub system_identifier: u64,
    pub checksums_enabled: bool,
    pub wal_segment_size: u64,
    pub archive_mode: String,
    pub archive_command: String,
    pub wal_level: String,
    pub in_recovery: bool,
}

#[derive(Clone, Debug)]
pub struct BackupStart {
    pub lsn: Lsn,
    pub timeline: u32,
}

#[derive(Clone, Debug)]
pub struct BackupStop {
    pub lsn: Lsn,
    pub backup_label: String,
    pub tablespace_map: String,
    /// First transaction id not yet started when the backup ended: an xid target at or above
    /// it is certainly after this backup.
    pub next_xid: u64,
    /// Timeline named by the backup label.
    pub timeline: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tablespace {
    pub oid: u32,
    pub name: String,
    pub location: String,
}

impl Session {
    pub fn connect(target: &ConnTarget) -> Result<Session, PgError> {
        let mut client = target.client(&target.config)?;
        let t = &target.display;
        let show = |c: &mut Client, name: &str| -> Result<String, PgError> {
            let row = c
                .query_one(&format!("show {name}"), &[])
                .map_err(|e| PgError::query(t, name, &e))?;
            Ok(row.get::<_, String>(0))
        };
        let version_num: u32 = show(&mut client, "server_version_num")?
            .parse()
            .unwrap_or(0);
        let version = version::facts(version_num).ok_or_else(|| PgError::Unsupported {
            version: version::display_version(version_num),
            at: t.clone(),
        })?;
        let data_directory = show(&mut client, "data_directory")?;
        let checksums_enabled = show(&mut client, "data_checksums")? == "on";
        let wal_segment_size =
            parse_size(&show(&mut client, "wal_segment_size")?).unwrap_or(16 << 20);
        let archive_mode = show(&mut client, "archive_mode")?;
        let archive_command = show(&mut client, "archive_command")?;
        let wal_level = show(&mut client, "wal_level")?;
        let row = client
            .query_one(
                "select system_identifier::text, pg_is_in_recovery() from pg_control_system()",
                &[],
            )
            .map_err(|e| PgError::query(t, "pg_control_system()", &e))?;
        let system_identifier = row.get::<_, String>(0).parse().unwrap_or(0);
        let in_recovery = row.get(1);
        Ok(Session {
            conn: Conn::Pg {
                client,
                target: target.clone(),
            },
            display: target.display.clone(),
            version_num,
            version,
            data_directory,
            system_identifier,
            checksums_enabled,
            wal_segment_size,
            archive_mode,
            archive_command,
            wal_level,
            in_recovery,
        })
    }

    /// A session held by a database-host agent (`display` names it in messages).
    pub fn over_link(
        display: String,
        f: ServerFacts,
        link: Box<dyn ServerLink>,
    ) -> Result<Session, PgError> {
        let version = version::facts(f.version_num).ok_or_else(|| PgError::Unsupported {
            version: version::display_version(f.version_num),
            at: display.clone(),
        })?;
        Ok(Session {
            conn: Conn::Link(link),
            display,
            version_num: f.version_num,
            version,
            data_directory: f.data_directory,
            system_identifier: f.system_identifier,
            checksums_enabled: f.checksums_enabled,
            wal_segment_size: f.wal_segment_size,
            archive_mode: f.archive_mode,
            archive_command: f.archive_command,
            wal_level: f.wal_level,
            in_recovery: f.in_recovery,
        })
    }

    /// What the session learnt of the server when it connected (an agent sends it on).
    pub fn facts(&self) -> ServerFacts {
        ServerFacts {
            version_num: self.version_num,
            data_directory: self.data_directory.clone(),
            system_identifier: self.system_identifier,
            checksums_enabled: self.checksums_enabled,
            wal_segment_size: self.wal_segment_size,
            archive_mode: self.archive_mode.clone(),
            archive_command: self.archive_command.clone(),
            wal_level: self.wal_level.clone(),
            in_recovery: self.in_recovery,
        }
    }

    pub fn target(&self) -> &str {
        &self.display
    }

    /// The libpq client, or the link every operation goes through instead.
    fn pg(&mut self) -> Result<(&mut Client, &ConnTarget), &dyn ServerLink> {
        match &mut self.conn {
            Conn::Pg { client, target } => Ok((client, target)),
            Conn::Link(l) => Err(&**l),
        }
    }

    /// Starts a non-exclusive backup with an immediate checkpoint, so the backup does not wait
    /// for the next scheduled one.
    pub fn backup_start(&mut self, label: &str) -> Result<BackupStart, PgError> {
        let sql = self.version.backup_start_sql;
        let (client, t) = match self.pg() {
            Ok(c) => c,
            Err(l) => return l.backup_start(label),
        };
        let err = |what: &str, e: postgres::Error| PgError::query(&t.display, what, &e);
        let row = client
            .query_one(sql, &[&label, &true])
            .map_err(|e| err("backup start", e))?;
        let lsn: Lsn = row.get::<_, String>(0).parse()?;
        let row = client
            .query_one("select timeline_id from pg_control_checkpoint()", &[])
            .map_err(|e| err("pg_control_checkpoint()", e))?;
        let timeline = row.get::<_, i32>(0) as u32;
        Ok(BackupStart { lsn, timeline })
    }

    pub fn backup_stop(&mut self) -> Result<BackupStop, PgError> {
        let sql = self.version.backup_stop_sql;
        let (client, t) = match self.pg() {
            Ok(c) => c,
            Err(l) => return l.backup_stop(),
        };
        let err = |what: &str, e: postgres::Error| PgError::query(&t.display, what, &e);
        let row = client
            .query_one(sql, &[])
            .map_err(|e| err("backup stop", e))?;
        let lsn: Lsn = row.get::<_, String>(0).parse()?;
        let backup_label: String = row.get(1);
        let tablespace_map: Option<String> = row.get(2);
        let row = client
            .query_one("select pg_snapshot_xmax(pg_current_snapshot())::text", &[])
            .map_err(|e| err("pg_current_snapshot()", e))?;
        let next_xid = row.get::<_, String>(0).parse().unwrap_or(0);
        Ok(BackupStop {
            lsn,
            timeline: label_timeline(&backup_label),
            backup_label,
            tablespace_map: tablespace_map.unwrap_or_default(),
            next_xid,
        })
    }

    /// Forces a switch to a new WAL segment so the current one is archived now.
    pub fn switch_wal(&mut self) -> Result<Lsn, PgError> {
        let (client, t) = match self.pg() {
            Ok(c) => c,
            Err(l) => return l.switch_wal(),
        };
        let row = client
            .query_one("select pg_switch_wal()::text", &[])
            .map_err(|e| PgError::query(&t.display, "pg_switch_wal()", &e))?;
        row.get::<_, String>(0).parse()
    }

    pub fn tablespaces(&mut self) -> Result<Vec<Tablespace>, PgError> {
        let (client, t) = match self.pg() {
            Ok(c) => c,
            Err(l) => return l.tablespaces(),
        };
        let rows = client
            .query(
                "select oid::int8, spcname::text, pg_tablespace_location(oid) from pg_tablespace \
                 where spcname not in ('pg_default', 'pg_global') order by oid",
                &[],
            )
            .map_err(|e| PgError::query(&t.display, "pg_tablespace", &e))?;
        Ok(rows
            .iter()
            .map(|r| Tablespace {
                oid: r.get::<_, i64>(0) as u32,
                name: r.get(1),
                location: r.get(2),
            })
            .collect())
    }

    /// The archiver's view: the last segment it archived and whether it is failing.
    pub fn archiver_status(&mut self) -> Result<(Option<String>, Option<String>), PgError> {
        let (client, t) = match self.pg() {
            Ok(c) => c,
            Err(l) => return l.archiver_status(),
        };
        let row = client
            .query_one(
                "select last_archived_wal, last_failed_wal from pg_stat_archiver",
                &[],
            )
            .map_err(|e| PgError::query(&t.display, "pg_stat_archiver", &e))?;
        Ok((row.get(0), row.get(1)))
    }

    /// Name of a relation from its file identity, for corruption reports; needs a connection
    /// to the relation's own database, so it opens one briefly.
    pub fn relation_name(
        &mut self,
        db_oid: Option<u32>,
        ts_oid: Option<u32>,
        relfilenode: u32,
    ) -> Option<String> {
        let (client, target) = match self.pg() {
            Ok(c) => c,
            Err(l) => return l.relation_name(db_oid, ts_oid, relfilenode),
        };
        let dbname = match db_oid {
            Some(oid) => {
                let row = client
                    .query_opt(
                        "select datname::text from pg_database where oid = $1::int8::oid",
                        &[&(oid as i64)],
                    )
                    .ok()??;
                row.get::<_, String>(0)
            }
            None => target.config.get_dbname().unwrap_or("postgres").to_string(),
        };
        let mut config = target.config.clone();
        config.dbname(&dbname);
        let mut c = target.client(&config).ok()?;
        let row = c
            .query_opt(
                "select pg_filenode_relation($1::int8::oid, $2::int8::oid)::regclass::text",
                &[&(ts_oid.unwrap_or(0) as i64), &(relfilenode as i64)],
            )
            .ok()??;
        let rel: Option<String> = row.get(0);
        rel.map(|r| format!("{dbname}.{r}"))
    }

    /// Runs a read-only query in another database of the cluster (connection settings of the
    /// target, database name replaced); rows as text.
    pub fn query_db(&self, dbname: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, PgError> {
        let target = match &self.conn {
            Conn::Pg { target, .. } => target,
            Conn::Link(l) => return l.query_db(dbname, sql),
        };
        let mut config = target.config.clone();
        config.dbname(dbname);
        let mut c = target.client(&config).map_err(|e| match e {
            PgError::Connect {
                reason,
                sqlstate,
                cause,
                ..
            } => PgError::Connect {
                target: format!("{} (database {dbname})", target.display),
                reason,
                sqlstate,
                cause,
            },
            e => e,
        })?;
        let msgs = c
            .simple_query(sql)
            .map_err(|e| PgError::query(&target.display, sql, &e))?;
        Ok(text_rows(msgs))
    }

    /// Runs a statement on the target (RMAN's SQL '...'); returns rows as text.
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, PgError> {
        let (client, t) = match self.pg() {
            Ok(c) => c,
            Err(l) => return l.simple_query(sql),
        };
        let msgs = client
            .simple_query(sql)
            .map_err(|e| PgError::query(&t.display, "sql", &e))?;
        Ok(text_rows(msgs))
    }
}

/// The timeline a backup label names (START TIMELINE), 1 when it names none.
pub fn label_timeline(backup_label: &str) -> u32 {
    backup_label
        .lines()
        .find_map(|l| l.strip_prefix("START TIMELINE:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1)
}

/// The rows of a simple-protocol reply, every value as text.
fn text_rows(msgs: Vec<postgres::SimpleQueryMessage>) -> Vec<Vec<Option<String>>> {
    msgs.into_iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// Parses PostgreSQL's unit-suffixed sizes such as "16MB".
/// A size as SHOW prints it: `16MB`, `1GB`, `8192kB`, or plain bytes; None when it is none
/// of these.
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..digits].parse().ok()?;
    let unit = match t[digits..].trim() {
        "" | "B" => 1,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::parse_size("16MB"), Some(16 << 20));
        assert_eq!(super::parse_size("1GB"), Some(1 << 30));
    }
}
