//! BACKUP and VALIDATE lowered straight into the command model, and what the statements
//! share: the options a block's channels give a command.

use super::block::Block;
use super::channels::{
    Takes, channel_args, channels_device, fit, format_without_flag, names_only, one_template,
};
use super::refuse::unsupported;
use super::session::note;
use crate::cli::Global;
use anyhow::{Result, bail};
use recman_command as m;
use recman_lang::*;

/// BACKUP: one command, or one per backup set named by BACKUP BACKUPSET.
pub(crate) fn backup(b: &Block, bk: &Backup, g: &Global) -> Result<Vec<m::Command>> {
    let mut opts: Vec<&BackupOpt> = bk.options.iter().collect();
    if bk.specs.len() != 1 {
        bail!(
            "{}",
            unsupported(
                "BACKUP of several objects in one statement",
                "write one BACKUP statement per object"
            )
        );
    }
    let spec = &bk.specs[0];
    opts.extend(spec.options.iter());
    match &spec.object {
        BackupObject::Database => {}
        BackupObject::Datafile(_) | BackupObject::Tablespace(_) => bail!(
            "BACKUP DATAFILE/TABLESPACE: PostgreSQL restores a cluster only as a whole, so a part alone could never be restored; hint: BACKUP DATABASE"
        ),
        BackupObject::Archivelog(a) => {
            if bk.plus_archivelog.is_some() {
                bail!(
                    "BACKUP ARCHIVELOG … PLUS ARCHIVELOG names the archived logs twice; hint: BACKUP ARCHIVELOG ALL"
                );
            }
            return Ok(vec![super::archivelog::backup_archivelog(b, g, a, &opts)?]);
        }
        BackupObject::CurrentControlfile { for_standby: false } => {
            return Ok(vec![super::archivelog::backup_controlfile(b, g, &opts)?]);
        }
        BackupObject::CurrentControlfile { for_standby: true } => bail!(
            "BACKUP CURRENT CONTROLFILE FOR STANDBY: a PostgreSQL standby is made from a base backup; hint: pg_basebackup -R, or RESTORE DATABASE TO '/dir' and a standby.signal"
        ),
        BackupObject::Spfile => bail!(
            "BACKUP SPFILE: postgresql.conf and postgresql.auto.conf are part of every BACKUP DATABASE; hint: BACKUP DATABASE"
        ),
        BackupObject::Backupset(_) | BackupObject::RecoveryArea | BackupObject::RecoveryFiles => {
            return second_tier(b, bk, &opts, g);
        }
        BackupObject::Datafilecopy(_) => bail!(
            "{}",
            unsupported(
                "BACKUP DATAFILECOPY (copying image copies to another device)",
                "BACKUP BACKUPSET ALL copies the backup sets; BACKUP DATABASE DEVICE TYPE SBT writes a new backup there"
            )
        ),
    }
    backup_database(b, bk, opts, g)
}

/// BACKUP DATABASE (or BACKUP VALIDATE DATABASE): the statement's options and its block's
/// channels as one command.
fn backup_database(
    b: &Block,
    bk: &Backup,
    opts: Vec<&BackupOpt>,
    g: &Global,
) -> Result<Vec<m::Command>> {
    if let Some(p) = &bk.plus_archivelog
        && !p.is_empty()
    {
        bail!(
            "{}",
            unsupported("operands of PLUS ARCHIVELOG", "write PLUS ARCHIVELOG alone")
        );
    }
    if opts.iter().any(|o| matches!(o, BackupOpt::Validate)) {
        return Ok(vec![validate_database(b, g, &opts)?]);
    }
    let mut c = m::BackupDatabase {
        device_type: target_device(b, &opts)?.map(str::to_string),
        // As `--plus-archivelog`: the current WAL archived and the archived WAL not yet in
        // a backup set put into sets, before the database and after it.
        plus_archivelog: bk.plus_archivelog.is_some(),
        ..Default::default()
    };
    for o in opts {
        database_option(b, g, &mut c, o)?;
    }
    let ch = channel_args(
        b,
        g,
        Takes {
            standby: true,
            maxopenfiles: true,
            rate: true,
            format: true,
        },
    )?;
    c.channels = ch.channels;
    // The BACKUP's own FORMAT wins over its channels', as in RMAN.
    if c.format.is_none() {
        c.format = ch.format;
    }
    c.maxopenfiles = ch.maxopenfiles;
    c.standby = ch.standby;
    c.standby_agent = ch.standby_agent;
    c.io.rate = ch.rate;
    c.table.extend(ch.table);
    if let Some(n) = b.maxcorrupt {
        c.maxcorrupt = fit(n, "maxcorrupt")?;
    }
    Ok(vec![m::Command::BackupDatabase(Box::new(c))])
}

/// One option of BACKUP DATABASE, set on the command or refused.
fn database_option(b: &Block, g: &Global, c: &mut m::BackupDatabase, o: &BackupOpt) -> Result<()> {
    match o {
        BackupOpt::Full => {}
        BackupOpt::Incremental { level, cumulative } if *level <= 1 => {
            c.incremental_level = Some(*level as u8);
            c.cumulative = *cumulative;
        }
        BackupOpt::Incremental { .. } | BackupOpt::IncrementalFromScn(_) => bail!(
            "{}",
            unsupported(
                "INCREMENTAL LEVEL above 1 and INCREMENTAL FROM SCN",
                "INCREMENTAL LEVEL 1 [CUMULATIVE]"
            )
        ),
        BackupOpt::As { copy: true, .. } => c.as_copy = true,
        BackupOpt::As { compressed, .. } => {
            if *compressed {
                c.compress = Some(b.compression.as_deref().unwrap_or("lz4").to_string());
            }
        }
        BackupOpt::ForRecoverOfCopy { tag } => {
            c.for_recover_of_copy = true;
            if let Some(t) = tag {
                c.tag = Some(t.clone());
            }
        }
        BackupOpt::SectionSize(s) => c.section_size = Some(s.bytes().to_string()),
        BackupOpt::Duration {
            hours,
            minutes,
            seconds,
            partial,
            minimize,
        } => {
            c.duration = Some(format!("{hours}:{minutes:02}:{:02}", seconds.unwrap_or(0)));
            c.partial = *partial;
            c.minimize = minimize.as_deref().map(str::to_lowercase);
        }
        BackupOpt::CheckLogical => c.check_logical = true,
        BackupOpt::NoChecksum => bail!(
            "NOCHECKSUM: recman always verifies page checksums and writes chunk checksums; there is no way to turn that off"
        ),
        BackupOpt::Force => c.force = true,
        BackupOpt::Skip(what) => bail!(
            "SKIP {what}: PostgreSQL has no offline, read-only or inaccessible tablespaces; hint: drop SKIP"
        ),
        BackupOpt::DeviceType(_) => {}
        BackupOpt::Channel(c) => bail!(
            "{}",
            unsupported(
                &format!("CHANNEL {c} (placing a backup on one channel)"),
                "let recman balance sets across channels by bytes"
            )
        ),
        BackupOpt::Copies(n) => c.copies = Some(fit(*n, "copies")?),
        // RMAN's FORMAT list gives each copy (COPIES, or CONFIGURE … BACKUP COPIES) its
        // place: the first template is the first copy's, the next ones the further
        // copies'; the command checks that there is one per copy.
        BackupOpt::Format(f) if !names_only(f) && f.len() > 1 => {
            c.format = Some(f[0].clone());
            c.copy_format = f[1..].to_vec();
        }
        BackupOpt::Format(f) if !names_only(f) => c.format = Some(one_template(f)?),
        BackupOpt::Format(f) => format_without_flag(
            g,
            "FORMAT",
            f,
            "pieces are named by the repository; drop FORMAT",
        )?,
        BackupOpt::Tag(t) => c.tag = Some(t.clone()),
        BackupOpt::FilesPerSet(n) => c.filesperset = Some(fit(*n, "filesperset")?),
        BackupOpt::MaxSetSize(s) => c.maxsetsize = Some(s.bytes().to_string()),
        BackupOpt::Keep {
            restore_point: Some(_),
            ..
        } => bail!(
            "{}",
            unsupported(
                "KEEP … RESTORE POINT",
                "CREATE RESTORE POINT name; before the BACKUP, and KEEP without RESTORE POINT"
            )
        ),
        BackupOpt::Keep { until: None, .. } => c.keep_forever = true,
        BackupOpt::Keep { until: Some(d), .. } => {
            c.keep_until = Some(super::restore::resolve_date(d)?)
        }
        BackupOpt::NoKeep => {}
        BackupOpt::NotBackedUp(NotBackedUp::Since(d)) => {
            c.not_backed_up_since = Some(super::restore::resolve_date(d)?)
        }
        BackupOpt::NotBackedUp(_) => bail!(
            "{}",
            unsupported("NOT BACKED UP", "BACKUP DATABASE backs up every file")
        ),
        BackupOpt::DeleteInput { .. } => bail!(
            "DELETE INPUT applies to archived logs and backup sets, not to BACKUP DATABASE; hint: DELETE ARCHIVELOG ALL BACKED UP 1 TIMES TO DISK"
        ),
        BackupOpt::Validate => unreachable!("handled above"),
    }
    Ok(())
}

/// The device type a BACKUP writes to: its DEVICE TYPE, else the one its block's channels
/// share; None leaves it to the command (`configure default-device-type`, else the
/// repository).
fn target_device(b: &Block, opts: &[&BackupOpt]) -> Result<Option<&'static str>> {
    let mut named: Option<&'static str> = None;
    for o in opts {
        if let BackupOpt::DeviceType(d) = o {
            let w = super::device::device_word(d)?;
            if let Some(old) = named
                && old != w
            {
                bail!(
                    "BACKUP names DEVICE TYPE {} and {}; hint: one DEVICE TYPE per BACKUP",
                    old.to_uppercase(),
                    w.to_uppercase()
                );
            }
            named = Some(w);
        }
    }
    let channels = channels_device(b)?;
    match (named, channels) {
        (Some(n), Some(c)) if n != c => bail!(
            "BACKUP DEVICE TYPE {} in a block whose channels are DEVICE TYPE {}: the block's channels write the backup; hint: drop DEVICE TYPE, or allocate {} channels",
            n.to_uppercase(),
            c.to_uppercase(),
            n.to_uppercase()
        ),
        (n, c) => Ok(n.or(c)),
    }
}

/// BACKUP BACKUPSET and BACKUP RECOVERY AREA (or FILES): copies of what the repository holds
/// on another device type: the statement's DEVICE TYPE, else the block's channels', else the
/// configured default device type.
fn second_tier(b: &Block, bk: &Backup, opts: &[&BackupOpt], g: &Global) -> Result<Vec<m::Command>> {
    let object = &bk.specs[0].object;
    let what = match object {
        BackupObject::Backupset(_) => "BACKUP BACKUPSET",
        BackupObject::RecoveryFiles => "BACKUP RECOVERY FILES",
        _ => "BACKUP RECOVERY AREA",
    };
    if bk.plus_archivelog.is_some() {
        bail!(
            "{what} … PLUS ARCHIVELOG: the copies are of backups already taken; hint: BACKUP RECOVERY AREA copies the archived WAL too"
        );
    }
    for o in opts {
        match o {
            BackupOpt::DeviceType(_)
            | BackupOpt::As {
                copy: false,
                compressed: false,
            } => {}
            BackupOpt::DeleteInput { .. } => bail!(
                "{}",
                unsupported(
                    &format!("{what} … DELETE INPUT (removing the repository's copy)"),
                    "keep both: restore reads the repository's copy and falls back to the one on the device"
                )
            ),
            other => bail!(
                "{what} copies backups to another device as they are, so {other} does not apply; hint: drop it"
            ),
        }
    }
    let device = match target_device(b, opts)? {
        Some(d) => d.to_string(),
        None => super::device::default_for_copy(g, what)?,
    };
    if b.channels.len() > 1 {
        note(
            g,
            &format!(
                "{what}: the copy streams one object at a time; the block's channels give its device type ({})",
                device.to_uppercase()
            ),
        );
    }
    let copy = |which: &str| m::Command::BackupBackupset {
        which: which.to_string(),
        device_type: device.clone(),
    };
    Ok(match object {
        BackupObject::Backupset(Selection::All) => vec![copy("all")],
        BackupObject::Backupset(Selection::Keys(keys)) => {
            keys.iter().map(|k| copy(&k.to_string())).collect()
        }
        BackupObject::Backupset(Selection::Names(names)) => names.iter().map(|n| copy(n)).collect(),
        BackupObject::Backupset(Selection::FromTag(t)) => vec![copy(t)],
        BackupObject::Backupset(Selection::Like(_)) => bail!(
            "{}",
            unsupported(
                "BACKUP BACKUPSET LIKE",
                "BACKUP BACKUPSET ALL, BACKUP BACKUPSET 'id or tag', or BACKUP BACKUPSET FROM TAG 'tag'"
            )
        ),
        _ => {
            if matches!(object, BackupObject::RecoveryFiles) {
                note(
                    g,
                    "BACKUP RECOVERY FILES: every recovery file of recman is in the repository; copying them as BACKUP RECOVERY AREA does",
                );
            }
            vec![m::Command::BackupRecoveryArea {
                device_type: device,
            }]
        }
    })
}

/// BACKUP VALIDATE DATABASE and VALIDATE DATABASE: every page read and checked, nothing written.
fn validate_database(b: &Block, g: &Global, opts: &[&BackupOpt]) -> Result<m::Command> {
    let mut check_logical = false;
    for o in opts {
        match o {
            BackupOpt::Validate | BackupOpt::Full | BackupOpt::As { copy: false, .. } => {}
            BackupOpt::CheckLogical => check_logical = true,
            other => {
                bail!("BACKUP VALIDATE writes nothing, so {other} has no effect; hint: drop it")
            }
        }
    }
    // The channels allocated in the RUN block read at once, as a backup's would.
    let ch = channel_args(
        b,
        g,
        Takes {
            standby: false,
            maxopenfiles: true,
            rate: true,
            format: false,
        },
    )?;
    Ok(m::Command::ValidateDatabase {
        channels: ch.channels,
        check_logical,
        maxopenfiles: ch.maxopenfiles.unwrap_or(m::DEFAULT_VALIDATE_MAXOPENFILES),
        io: m::IoOptions {
            rate: ch.rate,
            ..Default::default()
        },
    })
}

pub(crate) fn validate(b: &Block, g: &Global, v: &Validate) -> Result<Vec<m::Command>> {
    if v.check_logical && !matches!(v.object, ValidateObject::Database) {
        bail!(
            "{}",
            unsupported(
                "CHECK LOGICAL on VALIDATE of a backup set",
                "VALIDATE CHECK LOGICAL DATABASE, or BACKUP CHECK LOGICAL DATABASE"
            )
        );
    }
    if v.section_size.is_some() {
        bail!(
            "{}",
            unsupported(
                "VALIDATE … SECTION SIZE",
                "drop SECTION SIZE; files are at most 1 GB segments"
            )
        );
    }
    match &v.object {
        ValidateObject::Database => {
            let logical = BackupOpt::CheckLogical;
            let opts: &[&BackupOpt] = if v.check_logical { &[&logical] } else { &[] };
            Ok(vec![validate_database(b, g, opts)?])
        }
        ValidateObject::Backupset(keys) => Ok(keys
            .iter()
            .map(|k| m::Command::ValidateBackup {
                which: Some(k.to_string()),
                channels: None,
            })
            .collect()),
        ValidateObject::Tablespace(_) | ValidateObject::Datafile(_) => bail!(
            "{}",
            unsupported("VALIDATE of one tablespace or file", "VALIDATE DATABASE")
        ),
        ValidateObject::Archivelog(_) => bail!(
            "{}",
            unsupported(
                "VALIDATE ARCHIVELOG",
                "CROSSCHECK ARCHIVELOG ALL checks archived WAL"
            )
        ),
        ValidateObject::RecoveryArea => bail!(
            "{}",
            unsupported(
                "VALIDATE RECOVERY AREA",
                "VALIDATE BACKUPSET n for each backup"
            )
        ),
        ValidateObject::CurrentControlfile | ValidateObject::Spfile => bail!(
            "VALIDATE CURRENT CONTROLFILE / SPFILE: pg_control and the configuration files are checked with the data directory; hint: VALIDATE DATABASE"
        ),
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;

    fn lower_backup(src: &str) -> m::BackupDatabase {
        let script = recman_lang::parse_script(src).unwrap();
        let Statement::Backup(bk) = &script.statements[0].statement else {
            panic!("not a backup: {src}");
        };
        let g = Global {
            quiet: true,
            ..Default::default()
        };
        let b = Block::new(&[]);
        match backup(&b, bk, &g).unwrap().remove(0) {
            m::Command::BackupDatabase(c) => *c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn duration_and_not_backed_up_since_lower_to_the_flags() {
        let c = lower_backup(
            "BACKUP DURATION 0:00:20 PARTIAL MINIMIZE LOAD DATABASE NOT BACKED UP SINCE TIME '2026-11-25 10:00:00';",
        );
        assert_eq!(c.duration.as_deref(), Some("0:00:20"));
        assert!(c.partial);
        assert_eq!(c.minimize.as_deref(), Some("load"));
        assert_eq!(
            c.not_backed_up_since.as_deref(),
            Some("2026-11-25 10:00:00")
        );
        let c = lower_backup("BACKUP DURATION 1:30 DATABASE;");
        assert_eq!(c.duration.as_deref(), Some("1:30:00"));
        assert!(!c.partial && c.minimize.is_none());
        assert!(
            recman_lang::check_round_trip(
                "BACKUP DURATION 0:00:20 PARTIAL MINIMIZE TIME DATABASE;"
            )
            .is_ok()
        );
    }
}
