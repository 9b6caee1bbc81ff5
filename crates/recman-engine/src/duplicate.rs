//! DUPLICATE DATABASE: a new cluster from the newest backup. `for standby`: it recovers from
//! the archive (restore_command through archive-get), then streams from the primary
//! (standby.signal, primary_conninfo, primary_slot_name). Otherwise a clone: it recovers to the
//! end of the archived WAL and promotes, opening for writes on a new timeline. recman writes
//! the directory; the DBA starts it (pg_ctl -D DIR start), as after a restore.

use crate::auxiliary::{append_settings, pick_port};
use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
use crate::restore::{RecoveryTarget, RestoreOptions, RestoreReport};

#[derive(Clone, Debug)]
pub struct StandbyOptions {
    pub primary_conninfo: String,
    pub slot: Option<String>,
}

#[derive(Clone, Debug)]
pub struct DuplicateOptions {
    pub restore: RestoreOptions,
    pub standby: Option<StandbyOptions>,
    /// The port the new cluster listens on; None: a free one.
    pub port: Option<u16>,
}

#[derive(Clone, Debug)]
pub struct DuplicateReport {
    pub restore: RestoreReport,
    pub port: u16,
    pub standby: bool,
}

fn quote_conf(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

pub fn duplicate(
    ctx: &Context,
    opts: &DuplicateOptions,
    progress: &dyn Progress,
) -> Result<DuplicateReport, EngineError> {
    if opts.standby.is_some() && opts.restore.target != RecoveryTarget::Latest {
        return Err(crate::refusal::Backups::StandbyTakesNoTarget.into());
    }
    if let Some(s) = &opts.standby
        && s.primary_conninfo.trim().is_empty()
    {
        return Err(crate::refusal::Backups::StandbyNeedsPrimary.into());
    }
    // Before anything is written: a taken port is refused, not found when the copy starts.
    let port = pick_port(opts.port)?;
    let restore = crate::restore::restore_database(ctx, &opts.restore, progress)?;
    let pgdata = &opts.restore.to;
    let mut settings = vec![
        format!("port = {port}"),
        // The copy is not the primary's synchronous standby target; its commits must not wait.
        "synchronous_standby_names = ''".to_string(),
    ];
    if let Some(s) = &opts.standby {
        let rs = pgdata.join("recovery.signal");
        std::fs::remove_file(&rs).map_err(|e| EngineError::io("remove", &rs, e))?;
        let ss = pgdata.join("standby.signal");
        std::fs::write(&ss, "").map_err(|e| EngineError::io("write", &ss, e))?;
        settings.push(format!(
            "primary_conninfo = {}",
            quote_conf(&s.primary_conninfo)
        ));
        if let Some(slot) = &s.slot {
            settings.push(format!("primary_slot_name = {}", quote_conf(slot)));
        }
        settings.push("recovery_target_timeline = 'latest'".into());
    }
    let why = if opts.standby.is_some() {
        "duplicate for standby"
    } else {
        "duplicate (clone)"
    };
    append_settings(pgdata, why, &settings)?;
    if let Ok(md) = std::fs::metadata(pgdata) {
        use std::os::unix::fs::MetadataExt;
        for f in ["postgresql.auto.conf", "standby.signal"] {
            let _ = std::os::unix::fs::chown(pgdata.join(f), Some(md.uid()), Some(md.gid()));
        }
    }
    Ok(DuplicateReport {
        restore,
        port,
        standby: opts.standby.is_some(),
    })
}
