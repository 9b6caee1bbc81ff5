//! CONFIGURE lowered to `recman configure …`.

use super::lower::{compression, has_flag};
use super::refuse::unsupported;
use super::{Session, note};
use anyhow::{Result, bail};
use recman_lang::*;

fn v(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn configure(s: &Session, c: &Configure) -> Result<Vec<Vec<String>>> {
    let cfg = |args: &[&str]| -> Vec<Vec<String>> {
        let mut a = v(&["configure"]);
        a.extend(v(args));
        vec![a]
    };
    Ok(match c {
        Configure::Retention(None) => cfg(&["retention-policy", "clear"]),
        Configure::Retention(Some(Retention::Redundancy(n))) => {
            cfg(&["retention-policy", "redundancy", &n.to_string()])
        }
        Configure::Retention(Some(Retention::WindowDays(n))) => {
            cfg(&["retention-policy", "recovery-window", &n.to_string()])
        }
        Configure::Retention(Some(Retention::None)) => cfg(&["retention-policy", "none"]),
        Configure::DefaultDevice(None | Some(Device::Disk)) => {
            note(
                &s.g,
                "CONFIGURE DEFAULT DEVICE TYPE: DISK is recman's device; nothing to change",
            );
            Vec::new()
        }
        Configure::DefaultDevice(Some(d)) => bail!(
            "{}",
            unsupported(&format!("DEVICE TYPE {d}"), "DEVICE TYPE DISK")
        ),
        Configure::DeviceType {
            device: Device::Disk,
            settings: None,
        } => cfg(&["channels", "clear"]),
        Configure::DeviceType {
            device: Device::Disk,
            settings: Some(st),
        } => {
            let mut out = Vec::new();
            if let Some(p) = st.parallelism {
                out.extend(cfg(&["channels", &p.to_string()]));
            }
            match st.backup_type {
                None => {}
                Some((_, true)) => bail!(
                    "{}",
                    unsupported(
                        "BACKUP TYPE TO COPY (image copies)",
                        "BACKUP TYPE TO BACKUPSET"
                    )
                ),
                Some((true, false)) => out.extend(cfg(&["compression", "lz4"])),
                Some((false, false)) => out.extend(cfg(&["compression", "none"])),
            }
            out
        }
        Configure::DeviceType { device, .. } | Configure::Channel { device, .. }
            if *device != Device::Disk =>
        {
            bail!(
                "{}",
                unsupported(
                    &format!("DEVICE TYPE {device}"),
                    "configure DISK; the repository's media driver writes the pieces"
                )
            )
        }
        Configure::Channel {
            number: Some(_), ..
        }
        | Configure::Channel {
            auxiliary: true, ..
        } => {
            bail!(
                "{}",
                unsupported(
                    "settings for one numbered or auxiliary channel",
                    "CONFIGURE CHANNEL DEVICE TYPE DISK MAXOPENFILES n applies to all"
                )
            )
        }
        Configure::Channel { operands: None, .. } => cfg(&["maxopenfiles", "clear"]),
        Configure::Channel {
            operands: Some(ops),
            ..
        } => {
            let mut out = Vec::new();
            for op in ops {
                match op {
                    ChannelOp::MaxOpenFiles(n) => {
                        out.extend(cfg(&["maxopenfiles", &n.to_string()]))
                    }
                    other => bail!(
                        "{}",
                        unsupported(
                            &format!("CONFIGURE CHANNEL … {other}"),
                            "CONFIGURE CHANNEL DEVICE TYPE DISK MAXOPENFILES n; RATE and FORMAT go on ALLOCATE CHANNEL in a RUN block"
                        )
                    ),
                }
            }
            out
        }
        Configure::Compression(None) => cfg(&["compression", "clear"]),
        Configure::Compression(Some(cs)) => cfg(&["compression", compression(&cs.algorithm)?]),
        Configure::ArchivelogDeletionPolicy(None) => cfg(&["archivelog-deletion-policy", "clear"]),
        Configure::ArchivelogDeletionPolicy(Some(rules)) if rules.is_empty() => {
            cfg(&["archivelog-deletion-policy", "none"])
        }
        Configure::ArchivelogDeletionPolicy(Some(rules)) => match rules.as_slice() {
            [
                DeletionRule::BackedUp {
                    times,
                    device: Device::Disk,
                },
            ] => cfg(&[
                "archivelog-deletion-policy",
                "backed-up",
                &times.to_string(),
                "times",
            ]),
            _ => bail!(
                "{}",
                unsupported(
                    "an ARCHIVELOG DELETION POLICY on standbys or other devices",
                    "BACKED UP n TIMES TO DEVICE TYPE DISK"
                )
            ),
        },
        Configure::ControlfileAutobackup(_) => bail!(
            "CONFIGURE CONTROLFILE AUTOBACKUP: PostgreSQL's pg_control and configuration files are inside every backup, and the catalog can be rebuilt from the repository with CATALOG START WITH; there is no separate autobackup to configure"
        ),
        Configure::SnapshotControlfile(_) => bail!(
            "CONFIGURE SNAPSHOT CONTROLFILE: recman reads pg_control from the data directory and needs no snapshot of it"
        ),
        Configure::EncryptionForDatabase(_) | Configure::EncryptionAlgorithm(_) => bail!(
            "{}",
            unsupported(
                "backup encryption",
                "encrypt the repository's file system or bucket"
            )
        ),
        Configure::Optimization(_) => bail!(
            "{}",
            unsupported(
                "BACKUP OPTIMIZATION",
                "every BACKUP DATABASE backs up every file"
            )
        ),
        Configure::Maxsetsize(_) if !has_flag(&["configure"], "maxsetsize") => bail!(
            "{}",
            unsupported("MAXSETSIZE", "FILESPERSET limits set sizes")
        ),
        Configure::Copies { .. } => bail!(
            "{}",
            unsupported("BACKUP COPIES (duplexing)", "copy the repository")
        ),
        Configure::Exclude { .. } => bail!(
            "CONFIGURE EXCLUDE FOR TABLESPACE: PostgreSQL cannot start without every tablespace, so a backup without one could not be restored"
        ),
        other => bail!(
            "{}",
            unsupported(
                &format!("CONFIGURE {other}"),
                "SHOW ALL lists the settings recman has"
            )
        ),
    })
}
