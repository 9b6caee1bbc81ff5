//! Backup from a standby (RMAN's channels connected to other instances, pgBackRest's
//! backup-standby): the backup is started and stopped on the primary, while the channels read
//! relation files from a streaming standby's data directory on this host, taking the read
//! load off the primary. A standby that has replayed WAL up to the backup's start LSN holds
//! every relation page at least as new as that checkpoint, so recovery from the start LSN
//! makes the copy consistent, exactly as it does for pages read from the primary while it
//! runs. Everything else (configuration, pg_control, transaction status) is read from the
//! primary, whose files the restore must reproduce.

use crate::agent_sql::{CHECKPOINT_SQL, IN_RECOVERY_SQL, REDO_LSN_SQL, REPLAY_LSN_SQL};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use recman_pg::{Lsn, Session, resolve_conninfo};

use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
use crate::source::{DataSource, LocalSource};

/// Checks that `conninfo` reaches a standby of the cluster being backed up whose data
/// directory is readable here (or through its agent `agent`), waits until it has replayed
/// past `start`, and returns where to read its files. Without `conninfo` the agent's own
/// session to the standby answers (the backup host needs no route to it).
pub(crate) fn prepare(
    ctx: &Context,
    conninfo: Option<&str>,
    agent: Option<&str>,
    start: Lsn,
    timeout: Duration,
    progress: &dyn Progress,
) -> Result<Box<dyn DataSource>, EngineError> {
    let system_identifier = ctx.db.system_identifier;
    let remote = match agent {
        Some(url) => {
            let tls = ctx.tls.as_ref().ok_or_else(|| {
                EngineError::from(crate::refusal::Fleet::NoTls {
                    who: format!("--standby-agent {url}"),
                })
            })?;
            Some(crate::source::remote::RemoteSource::connect(url, tls)?)
        }
        None => None,
    };
    let mut s = match (conninfo, &remote) {
        (Some(c), _) => Session::connect(&resolve_conninfo(Some(c))?)?,
        (None, Some(r)) => crate::source::remote_pg::open(r.client())?,
        (None, None) => {
            return Err(crate::refusal::Cluster::NoStandbyNamed.into());
        }
    };
    let who = s.target().to_string();
    if s.system_identifier != system_identifier {
        return Err(crate::refusal::Cluster::StandbyOfOtherCluster {
            who,
            sysid: s.system_identifier,
            target_sysid: system_identifier,
        }
        .into());
    }
    let in_recovery = s.simple_query(IN_RECOVERY_SQL)?;
    if in_recovery
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .as_deref()
        != Some("t")
    {
        return Err(crate::refusal::Cluster::StandbyIsPrimary { who }.into());
    }
    let data_dir = PathBuf::from(&s.data_directory);
    let source: Box<dyn DataSource> = match remote {
        Some(r) => Box::new(r),
        None => Box::new(LocalSource::new(&data_dir)),
    };
    let facts = source.facts().map_err(|e| {
        EngineError::from(crate::refusal::Cluster::StandbyDataDirUnreadable {
            dir: source.describe(),
            who: who.clone(),
            why: e.to_string(),
        })
    })?;
    if facts.system_identifier != system_identifier {
        return Err(crate::refusal::Cluster::StandbyDataDirOfOtherCluster {
            dir: source.describe(),
            sysid: facts.system_identifier,
        }
        .into());
    }
    let t0 = Instant::now();
    loop {
        let rows = s.simple_query(REPLAY_LSN_SQL)?;
        let replayed = rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|t| t.parse::<Lsn>().ok());
        // Replayed is not written: the standby's files hold the pages as of its last
        // restartpoint, so one is asked for (as pgBackRest does) and must have its redo point
        // at or past the backup's start before the files are read; replay from the start
        // then makes them consistent.
        if replayed.is_some_and(|l| l >= start) && restartpoint_covers(&mut s, start)? {
            progress.notice(&format!(
                "channels read relation files from standby {who} ({}), replayed to {}",
                source.describe(),
                replayed.expect("checked")
            ));
            return Ok(source);
        }
        if t0.elapsed() > timeout {
            return Err(EngineError::Transient(format!(
                "standby {who} has replayed WAL only to {}, and the backup starts at {start}; hint: check its replication (pg_stat_wal_receiver), or raise --archive-timeout",
                replayed
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "nothing".into())
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Asks `s` (a standby) for a restartpoint and says whether its redo point is now at or past
/// `start`.
fn restartpoint_covers(s: &mut Session, start: Lsn) -> Result<bool, EngineError> {
    s.simple_query(CHECKPOINT_SQL)?;
    let rows = s.simple_query(REDO_LSN_SQL)?;
    Ok(rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|t| t.parse::<Lsn>().ok())
        .is_some_and(|redo| redo >= start))
}
