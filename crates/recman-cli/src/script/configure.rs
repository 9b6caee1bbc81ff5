//! CONFIGURE lowered to the command model's configure values, and what the device statements share: device type
//! names, PARMS strings, the check of a channel's PARMS and the default device of a copy.

use super::channels::{compression, format_without_flag};
use super::device::{device_word, parse_parms};
use super::refuse::unsupported;
use super::session::{Session, note};
use anyhow::{Result, bail};
use recman_command::{Command, ConfigureWhat};
use recman_lang::*;

fn v(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn cfg(w: ConfigureWhat) -> Vec<Command> {
    vec![Command::Configure(w)]
}

fn one(value: &str) -> String {
    value.to_string()
}

/// The cipher of an encrypted repository (docs/security.md).
const ENCRYPTION_ALGORITHM: &str = "AES-256-GCM";

/// RMAN's name for it, and recman's.
fn is_recmans_algorithm(a: &str) -> bool {
    ["AES256", "AES-256-GCM"]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(a.trim()))
}

pub(crate) fn configure(s: &Session, c: &Configure) -> Result<Vec<Command>> {
    Ok(match c {
        Configure::Retention(r) => retention(r),
        Configure::DefaultDevice(None) => cfg(ConfigureWhat::DefaultDeviceType {
            value: one("clear"),
        }),
        Configure::DefaultDevice(Some(d)) => cfg(ConfigureWhat::DefaultDeviceType {
            value: one(device_word(d)?),
        }),
        Configure::DeviceType { device, settings } => device_type(s, device, settings)?,
        Configure::Channel {
            auxiliary,
            number,
            device,
            operands,
        } => channel(s, number.is_some(), *auxiliary, device, operands)?,
        Configure::Compression(None) => cfg(ConfigureWhat::Compression {
            value: one("clear"),
        }),
        Configure::Compression(Some(cs)) => cfg(ConfigureWhat::Compression {
            value: one(compression(&cs.algorithm)?),
        }),
        Configure::ArchivelogDeletionPolicy(rules) => deletion_policy(rules)?,
        Configure::ControlfileAutobackup(_) => bail!(
            "CONFIGURE CONTROLFILE AUTOBACKUP: PostgreSQL's pg_control and configuration files are inside every backup, and the catalog can be rebuilt from the repository with CATALOG START WITH; there is no separate autobackup to configure"
        ),
        Configure::RpoTarget(v) => cfg(ConfigureWhat::RpoTarget {
            value: v.clone().unwrap_or_else(|| "clear".into()),
        }),
        Configure::Measure { name, value } => {
            let Some(spec) = recman_command::precedence::spec(name) else {
                bail!(
                    "CONFIGURE: setting {name} is unknown to this recman; hint: SHOW ALL lists the settings"
                );
            };
            cfg(ConfigureWhat::Named {
                name: spec.name,
                value: value.clone().unwrap_or_else(|| "clear".into()),
            })
        }
        Configure::SnapshotControlfile(_) => bail!(
            "CONFIGURE SNAPSHOT CONTROLFILE: recman reads pg_control from the data directory and needs no snapshot of it"
        ),
        // recman encrypts a whole repository, chosen at CREATE CATALOG, so there is no
        // per-backup setting to store: each backup of an encrypted repository is encrypted.
        Configure::EncryptionForDatabase(_) => bail!(
            "CONFIGURE ENCRYPTION FOR DATABASE: recman encrypts a whole repository ({ENCRYPTION_ALGORITHM}), chosen when it is created, not backup by backup; every backup written to an encrypted repository is encrypted; hint: create an encrypted repository with `recman --repo DIR create catalog --encrypt` and its key in RECMAN_PASSPHRASE, --key-file or --key-command (the same key option on every later command), then back up to it"
        ),
        Configure::EncryptionAlgorithm(a) => encryption_algorithm(s, a)?,
        Configure::Optimization(o) => cfg(ConfigureWhat::BackupOptimization {
            value: one(match o {
                recman_lang::ast::OnOff::On => "on",
                recman_lang::ast::OnOff::Off => "off",
                recman_lang::ast::OnOff::Clear => "clear",
            }),
        }),
        Configure::Maxsetsize(_) => bail!(
            "{}",
            unsupported(
                "CONFIGURE MAXSETSIZE",
                "write MAXSETSIZE on the BACKUP (backup database --maxsetsize)"
            )
        ),
        Configure::Copies {
            archivelog: false,
            count,
            ..
        } => cfg(ConfigureWhat::BackupCopies {
            value: match count {
                Some(n) => n.to_string(),
                None => "clear".into(),
            },
        }),
        Configure::Copies { .. } => bail!(
            "{}",
            unsupported(
                "ARCHIVELOG BACKUP COPIES (duplexed archived-log sets)",
                "BACKUP BACKUPSET to copy archived-log sets to a second device"
            )
        ),
        Configure::Exclude { .. } => bail!(
            "CONFIGURE EXCLUDE FOR TABLESPACE: PostgreSQL cannot start without every tablespace, so a backup without one could not be restored"
        ),
    })
}

/// CONFIGURE RETENTION POLICY.
fn retention(r: &Option<Retention>) -> Vec<Command> {
    match r {
        None => cfg(ConfigureWhat::RetentionPolicy {
            value: v(&["clear"]),
        }),
        Some(Retention::Redundancy(n)) => cfg(ConfigureWhat::RetentionPolicy {
            value: v(&["redundancy", &n.to_string()]),
        }),
        Some(Retention::WindowDays(n)) => cfg(ConfigureWhat::RetentionPolicy {
            value: v(&["recovery-window", &n.to_string()]),
        }),
        Some(Retention::None) => cfg(ConfigureWhat::RetentionPolicy {
            value: v(&["none"]),
        }),
    }
}

/// CONFIGURE DEVICE TYPE: its parallelism and backup type, or CLEAR.
fn device_type(
    s: &Session,
    device: &Device,
    settings: &Option<DeviceSettings>,
) -> Result<Vec<Command>> {
    Ok(match (device, settings) {
        (Device::Disk, None) => cfg(ConfigureWhat::Channels {
            value: one("clear"),
        }),
        (device, None) => {
            let t = device_word(device)?;
            note(
                &s.g,
                &format!(
                    "CONFIGURE DEVICE TYPE {device} CLEAR: recman clears all of the device type's settings (PARMS, BLKSIZE, ENV and PARALLELISM)"
                ),
            );
            cfg(ConfigureWhat::DeviceType {
                device: one(t),
                value: v(&["clear"]),
            })
        }
        (device, Some(st)) => {
            let t = device_word(device)?;
            let mut out = Vec::new();
            if let Some(p) = st.parallelism {
                out.extend(match device {
                    Device::Disk => cfg(ConfigureWhat::Channels {
                        value: p.to_string(),
                    }),
                    _ => cfg(ConfigureWhat::DeviceType {
                        device: one(t),
                        value: v(&["parallelism", &p.to_string()]),
                    }),
                });
            }
            if st.backup_type.is_some() && *device != Device::Disk {
                note(
                    &s.g,
                    &format!(
                        "CONFIGURE DEVICE TYPE {device} BACKUP TYPE: recman's compression setting applies to backups on every device type"
                    ),
                );
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
                Some((true, false)) => {
                    out.extend(cfg(ConfigureWhat::Compression { value: one("lz4") }))
                }
                Some((false, false)) => {
                    out.extend(cfg(ConfigureWhat::Compression { value: one("none") }))
                }
            }
            out
        }
    })
}

/// CONFIGURE CHANNEL: the operands every channel of a device type gets, or CLEAR.
fn channel(
    s: &Session,
    numbered: bool,
    auxiliary: bool,
    device: &Device,
    operands: &Option<Vec<ChannelOp>>,
) -> Result<Vec<Command>> {
    Ok(match (device, operands) {
        (device, _) if numbered || auxiliary => {
            bail!(
                "{}",
                unsupported(
                    "settings for one numbered or auxiliary channel",
                    &format!(
                        "CONFIGURE CHANNEL DEVICE TYPE {device} … applies to every channel of the device type"
                    )
                )
            )
        }
        (Device::Disk, None) => cfg(ConfigureWhat::Maxopenfiles {
            value: one("clear"),
        }),
        (device, None) => {
            let t = device_word(device)?;
            note(
                &s.g,
                &format!(
                    "CONFIGURE CHANNEL DEVICE TYPE {device} CLEAR: recman clears all of the device type's settings (PARMS, BLKSIZE, ENV and PARALLELISM)"
                ),
            );
            cfg(ConfigureWhat::DeviceType {
                device: one(t),
                value: v(&["clear"]),
            })
        }
        (device, Some(ops)) => {
            let t = device_word(device)?;
            let mut out = Vec::new();
            let mut words: Vec<String> = Vec::new();
            for op in ops {
                match op {
                    ChannelOp::MaxOpenFiles(n) => {
                        if *device != Device::Disk {
                            note(
                                &s.g,
                                &format!(
                                    "CONFIGURE CHANNEL DEVICE TYPE {device} MAXOPENFILES {n}: recman's MAXOPENFILES applies to backups on every device type"
                                ),
                            );
                        }
                        out.extend(cfg(ConfigureWhat::Maxopenfiles {
                            value: n.to_string(),
                        }))
                    }
                    // Like MAXOPENFILES, one value for backups on every device type.
                    ChannelOp::MaxPieceSize(size) => out.extend(cfg(ConfigureWhat::Named {
                        name: recman_command::option_table::MAXPIECESIZE.name,
                        value: size.bytes().to_string(),
                    })),
                    ChannelOp::Parms(p) => words.extend(parse_parms(p)?.words()),
                    ChannelOp::Format(f) => format_without_flag(
                        &s.g,
                        "CONFIGURE CHANNEL … FORMAT",
                        f,
                        "pieces are named by the repository; drop FORMAT",
                    )?,
                    other => bail!(
                        "{}",
                        unsupported(
                            &format!("CONFIGURE CHANNEL … {other}"),
                            &format!(
                                "CONFIGURE CHANNEL DEVICE TYPE {device} MAXOPENFILES n or PARMS '…'; RATE goes on ALLOCATE CHANNEL in a RUN block"
                            )
                        )
                    ),
                }
            }
            if !words.is_empty() {
                out.extend(cfg(ConfigureWhat::DeviceType {
                    device: one(t),
                    value: words,
                }));
            }
            out
        }
    })
}

/// CONFIGURE ARCHIVELOG DELETION POLICY.
fn deletion_policy(rules: &Option<Vec<DeletionRule>>) -> Result<Vec<Command>> {
    Ok(match rules {
        None => cfg(ConfigureWhat::ArchivelogDeletionPolicy {
            value: v(&["clear"]),
        }),
        Some(rules) if rules.is_empty() => cfg(ConfigureWhat::ArchivelogDeletionPolicy {
            value: v(&["none"]),
        }),
        Some(rules) => {
            let mut words: Vec<String> = Vec::new();
            for r in rules {
                match r {
                    DeletionRule::AppliedOnStandby { all: true } => {
                        words.push("applied-on-all-standby".into())
                    }
                    DeletionRule::BackedUp {
                        times,
                        device: Device::Disk,
                    } => words.extend(["backed-up".into(), times.to_string(), "times".into()]),
                    _ => bail!(
                        "{}",
                        unsupported(
                            "an ARCHIVELOG DELETION POLICY of SHIPPED TO STANDBY, APPLIED ON STANDBY without ALL, or another device",
                            "APPLIED ON ALL STANDBY and BACKED UP n TIMES TO DEVICE TYPE DISK"
                        )
                    ),
                }
            }
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            cfg(ConfigureWhat::ArchivelogDeletionPolicy { value: v(&words) })
        }
    })
}

/// CONFIGURE ENCRYPTION ALGORITHM: only recman's own is accepted, and nothing is stored.
fn encryption_algorithm(s: &Session, a: &Option<String>) -> Result<Vec<Command>> {
    Ok(match a {
        None => {
            note(
                &s.g,
                &format!(
                    "CONFIGURE ENCRYPTION ALGORITHM CLEAR: recman always encrypts with {ENCRYPTION_ALGORITHM}; nothing to clear"
                ),
            );
            vec![]
        }
        Some(a) if is_recmans_algorithm(a) => {
            note(
                &s.g,
                &format!(
                    "CONFIGURE ENCRYPTION ALGORITHM '{a}': an encrypted repository is always {ENCRYPTION_ALGORITHM}; nothing to store"
                ),
            );
            vec![]
        }
        Some(a) => bail!(
            "CONFIGURE ENCRYPTION ALGORITHM '{a}': recman encrypts only with {ENCRYPTION_ALGORITHM}; hint: CONFIGURE ENCRYPTION ALGORITHM 'AES256'; (or leave the statement out)"
        ),
    })
}
