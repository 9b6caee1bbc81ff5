//! Backup from a standby (RMAN's channels connected to other instances, pgBackRest's
//! backup-standby): the backup is started and stopped on the primary, while the channels read
//! relation files from a streaming standby's data directory on this host, taking the read
//! load off the primary. A standby that has replayed WAL up to the backup's start LSN holds
//! every relation page at least as new as that checkpoint, so recovery from the start LSN
//! makes the copy consistent, exactly as it does for pages read from the primary while it
//! runs. Everything else (configuration, pg_control, transaction status) is read from the
//! primary, whose files the restore must reproduce.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use recman_pg::{Lsn, Session, resolve_conninfo};

use crate::{EngineError, Progress};

/// A standby that may serve the channels' reads.
pub(crate) struct Standby {
    pub data_dir: PathBuf,
}

/// Checks that `conninfo` reaches a standby of the cluster `system_identifier` whose data
/// directory is readable here, and waits until it has replayed past `start`.
pub(crate) fn prepare(
    conninfo: &str,
    system_identifier: u64,
    start: Lsn,
    timeout: Duration,
    progress: &dyn Progress,
) -> Result<Standby, EngineError> {
    let target = resolve_conninfo(Some(conninfo))?;
    let mut s = Session::connect(&target)?;
    let who = s.target().to_string();
    if s.system_identifier != system_identifier {
        return Err(EngineError::Invalid(format!(
            "server {who} has system identifier {}, the target has {system_identifier}: it is not a standby of the target; hint: give --standby a streaming standby of the cluster being backed up",
            s.system_identifier
        )));
    }
    let in_recovery = s.simple_query("select pg_is_in_recovery()")?;
    if in_recovery
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .as_deref()
        != Some("t")
    {
        return Err(EngineError::Invalid(format!(
            "server {who} is not in recovery: it is a primary, not a standby; hint: give --standby a streaming standby, or leave it out to read the primary"
        )));
    }
    let data_dir = PathBuf::from(&s.data_directory);
    let facts = recman_pg::read_data_dir_facts(&data_dir).map_err(|e| {
        EngineError::Invalid(format!(
            "the data directory {} of standby {who} cannot be read here: {e}; hint: a standby channel reads the standby's files, so the standby must run on this host",
            data_dir.display()
        ))
    })?;
    if facts.system_identifier != system_identifier {
        return Err(EngineError::Invalid(format!(
            "data directory {} belongs to another cluster (system identifier {}); hint: the standby's data directory must be the one on this host",
            data_dir.display(),
            facts.system_identifier
        )));
    }
    let t0 = Instant::now();
    loop {
        let rows = s.simple_query("select pg_last_wal_replay_lsn()")?;
        let replayed = rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|t| t.parse::<Lsn>().ok());
        if replayed.is_some_and(|l| l >= start) {
            progress.notice(&format!(
                "channels read relation files from standby {who} ({}), replayed to {}",
                data_dir.display(),
                replayed.expect("checked")
            ));
            return Ok(Standby { data_dir });
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
