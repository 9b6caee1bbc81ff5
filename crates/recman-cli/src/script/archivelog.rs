//! BACKUP … ARCHIVELOG ALL lowered to `backup archivelog all`: the archived WAL of the
//! repository's archive put into backup sets, as the subcommand does.

use super::block::Block;
use super::channels::{channels_device, fit, format_without_flag, names_only, one_template};
use super::refuse::unsupported;
use super::session::note;
use crate::cli::Global;
use anyhow::{Result, bail};
use recman_command as m;
use recman_lang::*;

/// `BACKUP [AS [COMPRESSED] BACKUPSET] ARCHIVELOG ALL [NOT BACKED UP [n TIMES]]
/// [DELETE [ALL] INPUT] [TAG t] [FILESPERSET n]`.
pub(crate) fn backup_archivelog(
    b: &Block,
    g: &Global,
    spec: &ArchSpec,
    opts: &[&BackupOpt],
) -> Result<m::Command> {
    if spec.range != ArchRange::All || spec.like.is_some() || spec.thread.is_some() {
        bail!(
            "{}",
            unsupported(
                "BACKUP ARCHIVELOG of a range, LIKE or THREAD",
                "BACKUP ARCHIVELOG ALL NOT BACKED UP backs up every archived segment not yet in a backup set"
            )
        );
    }
    let mut c = m::BackupArchivelog {
        which: "all".into(),
        format: channels_for_wal(b, g)?,
        ..Default::default()
    };
    for o in opts {
        match o {
            BackupOpt::As {
                copy: false,
                compressed,
            } => {
                if *compressed {
                    c.compress = Some(b.compression.as_deref().unwrap_or("lz4").to_string());
                }
            }
            BackupOpt::NotBackedUp(NotBackedUp::Plain) => c.not_backed_up = Some(1),
            BackupOpt::NotBackedUp(NotBackedUp::Times(n)) => {
                c.not_backed_up = Some(fit(*n, "not-backed-up")?)
            }
            BackupOpt::NotBackedUp(NotBackedUp::Since(_)) => bail!(
                "{}",
                unsupported(
                    "NOT BACKED UP SINCE TIME",
                    "NOT BACKED UP [n TIMES] counts the backup sets that hold each segment"
                )
            ),
            // recman has one archive (the repository's), so ALL INPUT and INPUT are the same.
            BackupOpt::DeleteInput { .. } => c.delete_input = true,
            BackupOpt::Tag(t) => c.tag = Some(t.clone()),
            BackupOpt::FilesPerSet(n) => c.filesperset = Some(fit(*n, "filesperset")?),
            BackupOpt::DeviceType(d) => {
                let w = super::device::device_word(d)?;
                if w != repository_device(g) {
                    bail!(
                        "{}",
                        unsupported(
                            &format!(
                                "BACKUP DEVICE TYPE {} ARCHIVELOG (archived-log sets on another device)",
                                w.to_uppercase()
                            ),
                            "BACKUP ARCHIVELOG ALL into the repository, then BACKUP RECOVERY AREA copies the sets and the WAL to the device"
                        )
                    );
                }
            }
            BackupOpt::Format(f) if !names_only(f) => c.format = Some(one_template(f)?),
            BackupOpt::Format(f) => format_without_flag(
                g,
                "FORMAT",
                f,
                "archived-log sets are written into the repository; drop FORMAT",
            )?,
            BackupOpt::As { copy: true, .. } => bail!(
                "BACKUP AS COPY ARCHIVELOG: the repository's archive already holds a plain copy of every segment; hint: BACKUP AS BACKUPSET ARCHIVELOG ALL"
            ),
            other => bail!(
                "BACKUP ARCHIVELOG takes AS [COMPRESSED] BACKUPSET, NOT BACKED UP [n TIMES], DELETE [ALL] INPUT, TAG and FILESPERSET, so {other} does not apply; hint: drop it"
            ),
        }
    }
    Ok(m::Command::BackupArchivelog(c))
}

/// The device type of the repository named by `--repo` (DISK for a directory).
fn repository_device(g: &Global) -> &'static str {
    match &g.repo {
        Some(r) if crate::open::is_object_store(&r.to_string_lossy()) => "s3",
        _ => "disk",
    }
}

/// The block's channels for a backup of archived WAL: the segments are read from the
/// repository's archive, not from a server, so a channel's CONNECT does not change what is
/// read; the sets go into the repository, so the channels must be of its device type.
fn channels_for_wal(b: &Block, g: &Global) -> Result<Option<String>> {
    if let Some(d) = channels_device(b)?
        && d != repository_device(g)
    {
        bail!(
            "{}",
            unsupported(
                &format!(
                    "BACKUP ARCHIVELOG on {} channels (archived-log sets on another device)",
                    d.to_uppercase()
                ),
                "BACKUP ARCHIVELOG ALL into the repository, then BACKUP RECOVERY AREA copies the sets and the WAL to the device"
            )
        );
    }
    if b.channels
        .iter()
        .any(|c| c.ops.iter().any(|o| matches!(o, ChannelOp::Connect(_))))
    {
        note(
            g,
            "BACKUP ARCHIVELOG: the segments are read from the repository's archive, so the channels' CONNECT does not apply to them",
        );
    }
    // The channels' FORMAT with a location, when they agree on one (else the BACKUP's own).
    let mut format: Option<String> = None;
    for c in &b.channels {
        for op in &c.ops {
            if let ChannelOp::Format(f) = op
                && !names_only(f)
            {
                let t = one_template(f)?;
                if format.as_ref().is_some_and(|old| *old != t) {
                    bail!(
                        "channel {}: FORMAT '{t}' differs from another channel's; recman applies one value to all channels of a command; hint: give every channel the same FORMAT",
                        c.name
                    );
                }
                format = Some(t);
            }
        }
    }
    Ok(format)
}

/// `BACKUP CURRENT CONTROLFILE [FORMAT 'dir/ctl_%U.rbf']`: the catalog and pg_control as one
/// piece, in the FORMAT directory (the BACKUP's, else the channels'), else in the repository.
pub(crate) fn backup_controlfile(b: &Block, g: &Global, opts: &[&BackupOpt]) -> Result<m::Command> {
    let mut format = channels_for_wal(b, g)?;
    for o in opts {
        match o {
            BackupOpt::Format(f) if !names_only(f) => format = Some(one_template(f)?),
            BackupOpt::Format(f) => format_without_flag(
                g,
                "FORMAT",
                f,
                "the piece goes into the repository; drop FORMAT",
            )?,
            BackupOpt::DeviceType(d) if super::device::device_word(d)? == repository_device(g) => {}
            other => bail!(
                "BACKUP CURRENT CONTROLFILE takes FORMAT, so {other} does not apply; hint: drop it"
            ),
        }
    }
    Ok(m::Command::BackupControlfile { format })
}
