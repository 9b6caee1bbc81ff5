//! CONFIGURE lowered to the command model's configure values, and what the device statements share: device type
//! names, PARMS strings, the check of a channel's PARMS and the default device of a copy.

use super::lower::compression;
use super::refuse::unsupported;
use super::{Session, note};
use crate::cli::Global;
use crate::device_cmds::{blksize_key, env_key, parse_blksize, parse_env};
use anyhow::{Result, bail};
use recman_command::{Command, ConfigureWhat};
use recman_engine::devices::{parms_key, repository_device};
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
        Configure::Retention(None) => cfg(ConfigureWhat::RetentionPolicy {
            value: v(&["clear"]),
        }),
        Configure::Retention(Some(Retention::Redundancy(n))) => {
            cfg(ConfigureWhat::RetentionPolicy {
                value: v(&["redundancy", &n.to_string()]),
            })
        }
        Configure::Retention(Some(Retention::WindowDays(n))) => {
            cfg(ConfigureWhat::RetentionPolicy {
                value: v(&["recovery-window", &n.to_string()]),
            })
        }
        Configure::Retention(Some(Retention::None)) => cfg(ConfigureWhat::RetentionPolicy {
            value: v(&["none"]),
        }),
        Configure::DefaultDevice(None) => cfg(ConfigureWhat::DefaultDeviceType {
            value: one("clear"),
        }),
        Configure::DefaultDevice(Some(d)) => cfg(ConfigureWhat::DefaultDeviceType {
            value: one(device_word(d)?),
        }),
        Configure::DeviceType {
            device: Device::Disk,
            settings: None,
        } => cfg(ConfigureWhat::Channels {
            value: one("clear"),
        }),
        Configure::DeviceType {
            device,
            settings: None,
        } => {
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
        Configure::DeviceType {
            device,
            settings: Some(st),
        } => {
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
        Configure::Channel {
            number: Some(_),
            device,
            ..
        }
        | Configure::Channel {
            auxiliary: true,
            device,
            ..
        } => {
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
        Configure::Channel {
            device: Device::Disk,
            operands: None,
            ..
        } => cfg(ConfigureWhat::Maxopenfiles {
            value: one("clear"),
        }),
        Configure::Channel {
            device,
            operands: None,
            ..
        } => {
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
        Configure::Channel {
            device,
            operands: Some(ops),
            ..
        } => {
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
                    ChannelOp::Parms(p) => words.extend(parse_parms(p)?.words()),
                    ChannelOp::Format(f) => super::lower::format_without_flag(
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
        Configure::Compression(None) => cfg(ConfigureWhat::Compression {
            value: one("clear"),
        }),
        Configure::Compression(Some(cs)) => cfg(ConfigureWhat::Compression {
            value: one(compression(&cs.algorithm)?),
        }),
        Configure::ArchivelogDeletionPolicy(None) => cfg(ConfigureWhat::ArchivelogDeletionPolicy {
            value: v(&["clear"]),
        }),
        Configure::ArchivelogDeletionPolicy(Some(rules)) if rules.is_empty() => {
            cfg(ConfigureWhat::ArchivelogDeletionPolicy {
                value: v(&["none"]),
            })
        }
        Configure::ArchivelogDeletionPolicy(Some(rules)) => {
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
        Configure::EncryptionAlgorithm(None) => {
            note(
                &s.g,
                &format!(
                    "CONFIGURE ENCRYPTION ALGORITHM CLEAR: recman always encrypts with {ENCRYPTION_ALGORITHM}; nothing to clear"
                ),
            );
            vec![]
        }
        Configure::EncryptionAlgorithm(Some(a)) if is_recmans_algorithm(a) => {
            note(
                &s.g,
                &format!(
                    "CONFIGURE ENCRYPTION ALGORITHM '{a}': an encrypted repository is always {ENCRYPTION_ALGORITHM}; nothing to store"
                ),
            );
            vec![]
        }
        Configure::EncryptionAlgorithm(Some(a)) => bail!(
            "CONFIGURE ENCRYPTION ALGORITHM '{a}': recman encrypts only with {ENCRYPTION_ALGORITHM}; hint: CONFIGURE ENCRYPTION ALGORITHM 'AES256'; (or leave the statement out)"
        ),
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

/// recman's name of a device type (`recman … --device-type NAME`).
pub(crate) fn device_word(d: &Device) -> Result<&'static str> {
    Ok(match d {
        Device::Disk => "disk",
        Device::Sbt => "sbt",
        Device::S3 => "s3",
        Device::Other(x) => bail!(
            "DEVICE TYPE '{x}' is not a device type of recman; hint: DISK, SBT (the virtual tape library or a media-manager plugin) or S3"
        ),
    })
}

/// The prefixes of recman's device specifications.
const SPEC_PREFIXES: [&str; 7] = [
    "vtape:", "plugin:", "s3://", "azure://", "gs://", "disk:/", "/",
];

/// What a PARMS string says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parms {
    /// A recman device specification: `vtape:/dir[,…]`, `plugin:PROGRAM ARGS`,
    /// `s3://bucket/prefix` or `/dir`.
    Spec(String),
    /// RMAN's settings: `BLKSIZE=n` (in bytes here) and `ENV=(K=V, …)` (as `K=V,…`).
    Settings {
        blksize: Option<u64>,
        env: Option<String>,
    },
}

impl Parms {
    /// The words of `recman configure device-type T …` that store it.
    pub(crate) fn words(&self) -> Vec<String> {
        match self {
            Parms::Spec(s) => vec!["parms".into(), s.clone()],
            Parms::Settings { blksize, env } => {
                let mut v = Vec::new();
                if let Some(b) = blksize {
                    v.extend(["blksize".to_string(), b.to_string()]);
                }
                if let Some(e) = env {
                    v.extend(["env".to_string(), e.clone()]);
                }
                v
            }
        }
    }
}

const PARMS_HINT: &str = "recman's way: PARMS 'vtape:/dir' (the built-in virtual tape library) or PARMS 'plugin:PROGRAM ARGS' (an external media-manager plugin); of RMAN's settings recman keeps BLKSIZE=n and ENV=(NAME=VALUE, …)";

/// Splits at the commas outside parentheses.
fn top_level_items(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Reads a PARMS string: a recman device specification, or RMAN's `KEY=VALUE` settings of
/// which BLKSIZE and ENV are kept; any other key is refused naming it.
pub(crate) fn parse_parms(text: &str) -> Result<Parms> {
    let t = text.trim();
    if SPEC_PREFIXES.iter().any(|p| t.starts_with(p)) {
        return Ok(Parms::Spec(t.to_string()));
    }
    let (mut blksize, mut env) = (None, None);
    for item in top_level_items(t)
        .into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        let Some((key, value)) = item.split_once('=') else {
            bail!(
                "PARMS '{text}': {item:?} is neither a recman device specification nor KEY=VALUE; hint: {PARMS_HINT}"
            );
        };
        let (key, value) = (key.trim().to_ascii_uppercase(), value.trim());
        match key.as_str() {
            "BLKSIZE" if blksize.is_none() => blksize = Some(parse_blksize(value)?),
            "ENV" if env.is_none() => {
                let inner = match value.strip_prefix('(') {
                    Some(v) => v.strip_suffix(')').ok_or_else(|| {
                        anyhow::anyhow!("PARMS '{text}': ENV=({v} lacks its closing parenthesis")
                    })?,
                    None => value,
                };
                env = Some(parse_env(inner)?);
            }
            "BLKSIZE" | "ENV" => bail!("PARMS '{text}': {key} is given twice; hint: give it once"),
            other => bail!(
                "PARMS key {other} is not supported by recman (it configures Oracle's media-management library); hint: {PARMS_HINT}"
            ),
        }
    }
    if blksize.is_none() && env.is_none() {
        bail!("PARMS '{text}' says nothing; hint: {PARMS_HINT}");
    }
    Ok(Parms::Settings { blksize, env })
}

/// An ALLOCATE CHANNEL's PARMS: the channel uses its device type's configuration, so PARMS
/// may only repeat what CONFIGURE CHANNEL … PARMS stored.
pub(crate) fn check_channel_parms(
    g: &Global,
    channel: &str,
    device: &Device,
    parms: &str,
) -> Result<()> {
    let t = device_word(device)?;
    let parsed = parse_parms(parms)?;
    let repo = crate::commands::open_repo(g)?;
    let cat = repo.catalog();
    let configure = format!("CONFIGURE CHANNEL DEVICE TYPE {device} PARMS '{parms}'");
    let mut wanted: Vec<(String, String, String)> = Vec::new();
    match &parsed {
        Parms::Spec(s) => wanted.push((parms_key(t), s.clone(), "the device".into())),
        Parms::Settings { blksize, env } => {
            if let Some(b) = blksize {
                wanted.push((blksize_key(t), b.to_string(), "BLKSIZE".into()));
            }
            if let Some(e) = env {
                wanted.push((env_key(t), e.clone(), "ENV".into()));
            }
        }
    }
    for (key, value, what) in wanted {
        match cat.config(&key)? {
            Some(c) if c == value => {}
            Some(c) => bail!(
                "channel {channel}: PARMS '{parms}' differs from {what} configured for DEVICE TYPE {device} ({c}); a channel uses its device type's configuration; hint: {configure} to change it, then ALLOCATE CHANNEL {channel} DEVICE TYPE {device} without PARMS"
            ),
            None => bail!(
                "channel {channel}: PARMS '{parms}': a channel uses its device type's configuration, and {what} of DEVICE TYPE {device} is not configured; hint: {configure} first, then ALLOCATE CHANNEL {channel} DEVICE TYPE {device} without PARMS"
            ),
        }
    }
    Ok(())
}

/// The device type a second-tier copy (`what`) goes to when neither the statement nor the
/// block's channels name one: the configured default device type, which must not be the
/// repository's own.
pub(crate) fn default_for_copy(g: &Global, what: &str) -> Result<String> {
    let repo = crate::commands::open_repo(g)?;
    let own = repository_device(&repo);
    let detail = match repo.catalog().config("default-device-type")? {
        Some(d) if d != own => return Ok(d),
        Some(d) => format!(
            " (the default device type, {}, is the repository itself)",
            d.to_uppercase()
        ),
        None => String::new(),
    };
    bail!(
        "{what} needs a device type other than the repository's{detail}; hint: CONFIGURE DEFAULT DEVICE TYPE TO SBT and CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'vtape:/dir' (or name it: BACKUP DEVICE TYPE SBT …)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parms_strings() {
        assert_eq!(
            parse_parms("vtape:/srv/vtape,drives=2").unwrap(),
            Parms::Spec("vtape:/srv/vtape,drives=2".into())
        );
        assert_eq!(
            parse_parms("BLKSIZE=1048576, ENV=(NB_ORA_CLASS=Oracle_backup)").unwrap(),
            Parms::Settings {
                blksize: Some(1 << 20),
                env: Some("NB_ORA_CLASS=Oracle_backup".into())
            }
        );
        assert_eq!(
            parse_parms("ENV=(A=1, B = 2)").unwrap().words(),
            ["env", "A=1,B=2"]
        );
        let e = parse_parms("SBT_LIBRARY=/opt/lib/libobk.so").unwrap_err();
        assert!(
            e.to_string().contains("SBT_LIBRARY") && e.to_string().contains("vtape:/dir"),
            "{e}"
        );
        assert!(parse_parms("BLKSIZE=1000").is_err());
        assert!(parse_parms("VTAPE").is_err());
        assert!(parse_parms("ENV=(A=1").is_err());
    }
}
