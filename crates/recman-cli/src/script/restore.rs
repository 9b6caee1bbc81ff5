//! RESTORE and RECOVER lowered into the command model's restore and recover, and the values of UNTIL clauses.

use super::block::Block;
use super::channels::{Takes, channel_args};
use super::refuse::unsupported;
use crate::cli::Global;
use anyhow::{Result, anyhow, bail};
use recman_command as m;
use recman_lang::*;
use std::path::PathBuf;

/// RESTORE … PREVIEW and RESTORE … VALIDATE.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Preview,
    Validate,
}

/// RESTORE DATABASE: into TO '…' or SET NEWNAME FOR DATABASE, to the UNTIL of the statement,
/// else of a RECOVER joined to it, else of SET UNTIL.
pub(crate) fn restore(
    b: &Block,
    g: &Global,
    r: &Restore,
    recover_until: Option<&Until>,
) -> Result<m::Command> {
    match &r.object {
        RestoreObject::Database { skip_tablespaces } if skip_tablespaces.is_empty() => {}
        RestoreObject::Database { .. } => bail!(
            "RESTORE DATABASE SKIP TABLESPACE: PostgreSQL cannot start without every tablespace; hint: RESTORE DATABASE and move tablespaces with recman restore database --tablespace-map"
        ),
        RestoreObject::Tablespace(_) | RestoreObject::Datafile(_) => bail!(
            "RESTORE TABLESPACE/DATAFILE: PostgreSQL cannot restore part of a running cluster; hint: RESTORE DATABASE TO '/new/dir' and copy data back with SQL"
        ),
        RestoreObject::Controlfile { from: Some(piece) } if piece != "AUTOBACKUP" => {
            if !r.options.is_empty() {
                bail!(
                    "RESTORE CONTROLFILE FROM '{piece}' takes no other clause; hint: RESTORE CONTROLFILE FROM '/path/ctl_piece.rbf'"
                );
            }
            return Ok(m::Command::RestoreControlfile {
                from: std::path::PathBuf::from(piece),
            });
        }
        RestoreObject::Controlfile { .. } => bail!(
            "RESTORE CONTROLFILE: recman restores its catalog from a piece of BACKUP CURRENT CONTROLFILE, named by path (there is no autobackup to search); hint: RESTORE CONTROLFILE FROM '/path/ctl_piece.rbf', or CATALOG START WITH '/repo' to rebuild the catalog from the manifests"
        ),
        RestoreObject::Spfile { .. } | RestoreObject::StandbyControlfile => bail!(
            "RESTORE CONTROLFILE/SPFILE: pg_control and the configuration files come back with RESTORE DATABASE; hint: RESTORE DATABASE TO '/new/dir'"
        ),
        RestoreObject::Archivelog(_) => bail!(
            "RESTORE ARCHIVELOG: a restored cluster fetches WAL from the repository itself through restore_command = 'recman archive-get …'; hint: recman archive-get NAME DEST fetches one file"
        ),
    }
    let mut to = b.newname.clone();
    let mut until = None;
    let mut tag = None;
    // RESTORE … PREVIEW and RESTORE … VALIDATE read the plan of the same restore, and need
    // no directory: they write nothing.
    let mut mode = None;
    for o in &r.options {
        match o {
            RestoreOpt::To(p) => to = Some(p.clone()),
            RestoreOpt::Until(u) => until = Some(u.clone()),
            RestoreOpt::FromTag(t) => tag = Some(t.clone()),
            RestoreOpt::FromBackupset
            | RestoreOpt::Force
            | RestoreOpt::DeviceType(Device::Disk) => {}
            RestoreOpt::DeviceType(d) => {
                super::device::device_word(d)?;
                super::session::note(
                    g,
                    &format!(
                        "RESTORE … DEVICE TYPE {d}: recman reads each piece from wherever the catalog has it (the repository or its copies on other device types)"
                    ),
                );
            }
            RestoreOpt::FromDatafilecopy => bail!(
                "{}",
                unsupported(
                    "FROM DATAFILECOPY (image copies)",
                    "restore from backup sets"
                )
            ),
            RestoreOpt::Preview { .. } => mode = Some(Mode::Preview),
            RestoreOpt::Validate => mode = Some(Mode::Validate),
            RestoreOpt::CheckLogical => bail!(
                "{}",
                unsupported(
                    "CHECK LOGICAL (amcheck)",
                    "start the restored cluster and run pg_amcheck"
                )
            ),
            RestoreOpt::Channel(c) => bail!(
                "{}",
                unsupported(
                    &format!("CHANNEL {c} (restoring on one channel)"),
                    "drop CHANNEL"
                )
            ),
        }
    }
    let until = until.or(recover_until.cloned()).or(b.until.clone());
    let to = match to {
        Some(to) => Some(PathBuf::from(to)),
        None if mode.is_some() => None,
        None => bail!(
            "RESTORE DATABASE needs a new directory: recman never restores over the running cluster; hint: RESTORE DATABASE TO '/new/dir', or SET NEWNAME FOR DATABASE TO '/new/dir' in the RUN block"
        ),
    };
    let mut c = m::RestoreDatabase::into(to);
    c.preview = mode == Some(Mode::Preview);
    c.validate = mode == Some(Mode::Validate);
    c.from_tag = tag;
    match &until {
        None => {}
        Some(Until::Time(d)) => c.until_time = Some(resolve_date(d)?),
        Some(Until::Scn(l)) => c.until_lsn = Some(lsn_text(l)),
        Some(Until::Sequence { seq, thread }) => {
            c.until_lsn = Some(sequence_lsn(*seq, *thread)?);
        }
        Some(Until::RestorePoint(n)) => c.until_restore_point = Some(n.clone()),
    }
    let ch = channel_args(b, g, Takes::default())?;
    if let Some(n) = ch.channels {
        c.channels = n;
    }
    Ok(m::Command::RestoreDatabase(Box::new(c)))
}

/// RECOVER not joined to a RESTORE DATABASE of its block: RECOVER COPY OF DATABASE becomes
/// `recover copy`; the rest is refused with what PostgreSQL does instead.
pub(crate) fn recover_alone(r: &Recover) -> Result<Option<m::Command>> {
    if let RecoverObject::CopyOfDatabase { tag } = &r.object {
        let tag = tag.clone().ok_or_else(|| {
            anyhow!("RECOVER COPY OF DATABASE needs WITH TAG 'name': recman's image copies are named by their tag; hint: RECOVER COPY OF DATABASE WITH TAG 'incr_update'")
        })?;
        let mut until_time = None;
        for o in &r.options {
            match o {
                RecoverOpt::Until(Until::Time(d)) => until_time = Some(resolve_date(d)?),
                _ => bail!(
                    "{}",
                    unsupported(
                        "this option of RECOVER COPY OF DATABASE",
                        "RECOVER COPY OF DATABASE WITH TAG 'name' [UNTIL TIME '...']"
                    )
                ),
            }
        }
        return Ok(Some(m::Command::RecoverCopy { tag, until_time }));
    }
    if let RecoverObject::Table { table, database } = &r.object {
        return recover_table(r, table, database.clone()).map(Some);
    }
    match &r.object {
        RecoverObject::Table { .. } => unreachable!("lowered above"),
        RecoverObject::Database => bail!(
            "RECOVER DATABASE without RESTORE DATABASE before it in the same RUN block: PostgreSQL recovers by replaying WAL when it starts on a restored directory; hint: RUN {{ SET NEWNAME FOR DATABASE TO '/new/dir'; RESTORE DATABASE; RECOVER DATABASE; }} then pg_ctl -D /new/dir start"
        ),
        RecoverObject::CopyOfDatabase { .. } => unreachable!("lowered above"),
        RecoverObject::Tablespace(_) | RecoverObject::Datafile(_) => bail!(
            "RECOVER TABLESPACE/DATAFILE: PostgreSQL replays WAL for a whole cluster only; hint: restore the database into a new directory"
        ),
        RecoverObject::Block { file, blocks } => {
            no_options(r)?;
            Ok(Some(super::blockrec::recover_block(file, blocks)?))
        }
        RecoverObject::CorruptionList => {
            no_options(r)?;
            Ok(Some(m::Command::RecoverBlock {
                blocks: Vec::new(),
                corruption_list: true,
                auxiliary_dir: None,
            }))
        }
    }
}

/// RECOVER TABLE as `recover table`: UNTIL TIME|SCN, REMAP TABLE, AUXILIARY DESTINATION, and
/// DUMP FILE with NOTABLEIMPORT (recman writes a dump only when it does not load it).
fn recover_table(r: &Recover, table: &str, database: Option<String>) -> Result<m::Command> {
    let mut t = m::RecoverTable {
        table: table.to_string(),
        database,
        channels: 1,
        ..Default::default()
    };
    let mut no_import = false;
    for o in &r.options {
        match o {
            RecoverOpt::Until(Until::Time(d)) => t.until_time = Some(resolve_date(d)?),
            RecoverOpt::Until(Until::Scn(l)) => t.until_lsn = Some(lsn_text(l)),
            RecoverOpt::AuxiliaryDestination(d) => t.auxiliary_dir = Some(d.into()),
            RecoverOpt::RemapTable { from, to } => {
                if !from.eq_ignore_ascii_case(table) {
                    bail!(
                        "REMAP TABLE {from}:{to} names another table than RECOVER TABLE {table}; hint: REMAP TABLE {table}:{to}"
                    );
                }
                t.remap_table = Some(to.clone());
            }
            RecoverOpt::DumpFile(f) => t.dump = Some(f.into()),
            RecoverOpt::NoTableImport => no_import = true,
            _ => bail!(
                "{}",
                unsupported(
                    "this option of RECOVER TABLE",
                    "RECOVER TABLE s.t [OF PLUGGABLE DATABASE db] UNTIL TIME '...'|SCN lsn [AUXILIARY DESTINATION '...'] [REMAP TABLE s.t:new] [DUMP FILE '...' NOTABLEIMPORT]"
                )
            ),
        }
    }
    if t.dump.is_some() != no_import {
        bail!(
            "RECOVER TABLE writes a dump file only when it does not import the table: DUMP FILE and NOTABLEIMPORT go together; hint: DUMP FILE '/tmp/t.sql' NOTABLEIMPORT, or neither to load the table"
        );
    }
    Ok(m::Command::RecoverTable(Box::new(t)))
}

/// Block media recovery takes no option: the backup and the WAL are chosen for it.
fn no_options(r: &Recover) -> Result<()> {
    if r.options.is_empty() && r.device.is_none() {
        return Ok(());
    }
    bail!(
        "{}",
        unsupported(
            "an option of block media recovery",
            "RECOVER DATAFILE 'base/5/16384' BLOCK 3; or RECOVER CORRUPTION LIST; (the newest backup before the cluster's last checkpoint is used)"
        )
    )
}

/// A date string as `--until-time` takes it, evaluated now (SYSDATE is the client's clock).
pub(crate) fn resolve_date(d: &DateExpr) -> Result<String> {
    match d {
        DateExpr::Sysdate { sign, num, den } => {
            let secs = (*num as i128 * 86_400 / *den as i128).min(i64::MAX as i128) as i64;
            let delta = chrono::Duration::try_seconds(secs)
                .ok_or_else(|| anyhow!("SYSDATE offset of {num}/{den} days is too large"))?;
            let now = chrono::Local::now();
            let t = if *sign < 0 {
                now.checked_sub_signed(delta)
            } else {
                now.checked_add_signed(delta)
            };
            let t =
                t.ok_or_else(|| anyhow!("SYSDATE offset of {num}/{den} days is out of range"))?;
            Ok(t.format("%Y-%m-%d %H:%M:%S%:z").to_string())
        }
        DateExpr::ToDate { value, format } => {
            let f = date::oracle_format_to_strftime(format).ok_or_else(|| anyhow!("TO_DATE format '{format}' has an element recman does not know; hint: use YYYY MM DD HH24 MI SS"))?;
            let t = chrono::NaiveDateTime::parse_from_str(value, &f)
                .or_else(|_| {
                    chrono::NaiveDate::parse_from_str(value, &f)
                        .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight"))
                })
                .map_err(|e| anyhow!("TO_DATE('{value}', '{format}'): {e}"))?;
            Ok(t.format("%Y-%m-%d %H:%M:%S").to_string())
        }
        DateExpr::Literal(s) => Ok(s.clone()),
    }
}

/// An SCN as PostgreSQL writes an LSN.
/// PostgreSQL's WAL segment size unless initdb was told otherwise.
const DEFAULT_WAL_SEGMENT: u64 = 16 * 1024 * 1024;

/// RMAN's log sequence n is WAL segment number n (the last 16 hex digits of its file name);
/// like RMAN, recovery stops before it: at the LSN where segment n begins, the end of n-1.
fn sequence_lsn(seq: u64, thread: Option<u64>) -> Result<String> {
    if thread.is_some_and(|t| t != 1) {
        bail!(
            "UNTIL SEQUENCE {seq} THREAD {}: a PostgreSQL cluster writes one WAL stream; hint: leave THREAD out or write THREAD 1",
            thread.unwrap_or_default()
        );
    }
    let lsn = seq.checked_mul(DEFAULT_WAL_SEGMENT).filter(|_| seq > 0).ok_or_else(|| {
        anyhow::anyhow!(
            "UNTIL SEQUENCE {seq} names no WAL position; hint: give a segment number from 1 up, as `list archivelog` shows them"
        )
    })?;
    Ok(lsn_text(&Lsn::Number(lsn)))
}

pub(crate) fn lsn_text(l: &Lsn) -> String {
    match l {
        Lsn::Number(n) => format!("{:X}/{:X}", n >> 32, n & 0xffff_ffff),
        Lsn::Text(t) => t.clone(),
    }
}
