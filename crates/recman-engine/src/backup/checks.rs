//! What a backup checks before it starts, and the wait for its WAL before it ends.

use crate::context::Context;
use crate::error::EngineError;
use recman_pg::{Session, WalName};
use std::time::{Duration, Instant};

pub(super) fn check_target(
    ctx: &Context,
    source: &dyn crate::source::DataSource,
    facts: &recman_pg::DataDirFacts,
    s: &Session,
) -> Result<(), EngineError> {
    if facts.system_identifier != s.system_identifier {
        return Err(crate::refusal::Cluster::DataDirOfOtherServer {
            dir: source.describe(),
            dir_sysid: facts.system_identifier,
            server: s.target().to_string(),
            server_sysid: s.system_identifier,
        }
        .into());
    }
    // An agent resolves its directory where it is; the server's path is compared as given.
    let server_dir = match source.local_root() {
        Some(_) => std::fs::canonicalize(&s.data_directory).ok(),
        None => Some(std::path::PathBuf::from(&s.data_directory)),
    };
    if let (Some(a), Some(b)) = (source.canonical(), server_dir)
        && a != b
    {
        return Err(crate::refusal::Cluster::CopyOfServerDataDir {
            dir: source.describe(),
            server: s.target().to_string(),
            server_dir: s.data_directory.clone(),
        }
        .into());
    }
    if s.system_identifier != ctx.db.system_identifier {
        return Err(crate::refusal::Cluster::ServerOfOtherDatabase {
            server: s.target().to_string(),
            sysid: s.system_identifier,
            db: ctx.db.name.clone(),
            db_sysid: ctx.db.system_identifier,
        }
        .into());
    }
    if s.in_recovery {
        return Err(crate::refusal::Cluster::TargetIsStandby {
            server: s.target().to_string(),
        }
        .into());
    }
    if s.archive_mode == "off" || s.wal_level == "minimal" {
        return Err(crate::refusal::Cluster::NotArchiving {
            server: s.target().to_string(),
            archive_mode: s.archive_mode.clone(),
            wal_level: s.wal_level.clone(),
            repo: ctx.repo.location().to_string(),
        }
        .into());
    }
    Ok(())
}

/// Waits until every WAL segment from the backup's start to its stop is in the repository:
/// only then can the backup be restored to a consistent state.
pub(super) fn wait_for_wal(
    ctx: &Context,
    session: &mut Session,
    needed: &[WalName],
    timeout: Duration,
) -> Result<(), EngineError> {
    let deadline = Instant::now() + timeout;
    let cat = ctx.repo.catalog();
    // archive_command usually lands a segment within tens of milliseconds: each nap is a tenth
    // of the wait so far (2 to 50 ms), so the poll adds at most about a tenth to a short wait
    // and a lookup in the catalog every 50 ms to a long one.
    let started = Instant::now();
    for w in needed {
        let name = w.to_string();
        loop {
            if cat.wal(ctx.db.id, &name)?.is_some() {
                break;
            }
            if Instant::now() >= deadline {
                let (_, failed) = session.archiver_status().unwrap_or((None, None));
                let why = match failed {
                    Some(f) => format!("the server's archiver reports a failure for {f}"),
                    None => "the server's archiver reports no failure".to_string(),
                };
                return Err(EngineError::Transient(format!(
                    "wal segment {name} needed by the backup did not reach repository {} within {}s ({why}); hint: check archive_command on the server (currently {:?}) and the server log",
                    ctx.repo.location(),
                    timeout.as_secs(),
                    session.archive_command
                )));
            }
            let nap =
                (started.elapsed() / 10).clamp(Duration::from_millis(2), Duration::from_millis(50));
            std::thread::sleep(nap);
        }
    }
    Ok(())
}
