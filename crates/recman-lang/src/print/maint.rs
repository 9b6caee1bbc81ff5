//! Canonical form of CONFIGURE and the catalog-maintenance clauses.

use super::objects::{file, names, quals};
use super::words::{list, name, q};
use crate::ast::*;
use std::fmt::{self, Display, Formatter};

fn on_off(o: &OnOff) -> &'static str {
    match o {
        OnOff::On => "ON",
        OnOff::Off => "OFF",
        OnOff::Clear => "CLEAR",
    }
}

impl Display for Configure {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Configure::Retention(None) => f.write_str("RETENTION POLICY CLEAR"),
            Configure::Retention(Some(r)) => match r {
                Retention::Redundancy(n) => write!(f, "RETENTION POLICY TO REDUNDANCY {n}"),
                Retention::WindowDays(n) => {
                    write!(f, "RETENTION POLICY TO RECOVERY WINDOW OF {n} DAYS")
                }
                Retention::None => f.write_str("RETENTION POLICY TO NONE"),
            },
            Configure::DefaultDevice(None) => f.write_str("DEFAULT DEVICE TYPE CLEAR"),
            Configure::DefaultDevice(Some(d)) => write!(f, "DEFAULT DEVICE TYPE TO {d}"),
            Configure::DeviceType { device, settings } => device_type(f, device, settings),
            Configure::Channel {
                auxiliary,
                number,
                device,
                operands,
            } => channel(f, *auxiliary, number, device, operands),
            Configure::ControlfileAutobackup(AutobackupSetting::Switch(o)) => {
                write!(f, "CONTROLFILE AUTOBACKUP {}", on_off(o))
            }
            Configure::ControlfileAutobackup(AutobackupSetting::Format { device, format }) => {
                write!(f, "CONTROLFILE AUTOBACKUP FORMAT FOR DEVICE TYPE {device}")?;
                match format {
                    None => f.write_str(" CLEAR"),
                    Some(s) => write!(f, " TO {}", q(s)),
                }
            }
            Configure::Optimization(o) => write!(f, "BACKUP OPTIMIZATION {}", on_off(o)),
            Configure::Compression(None) => f.write_str("COMPRESSION ALGORITHM CLEAR"),
            Configure::Compression(Some(c)) => compression(f, c),
            Configure::EncryptionForDatabase(o) => {
                write!(f, "ENCRYPTION FOR DATABASE {}", on_off(o))
            }
            Configure::EncryptionAlgorithm(None) => f.write_str("ENCRYPTION ALGORITHM CLEAR"),
            Configure::EncryptionAlgorithm(Some(a)) => write!(f, "ENCRYPTION ALGORITHM {}", q(a)),
            Configure::ArchivelogDeletionPolicy(None) => {
                f.write_str("ARCHIVELOG DELETION POLICY CLEAR")
            }
            Configure::ArchivelogDeletionPolicy(Some(rules)) if rules.is_empty() => {
                f.write_str("ARCHIVELOG DELETION POLICY TO NONE")
            }
            Configure::ArchivelogDeletionPolicy(Some(rules)) => deletion_policy(f, rules),
            Configure::Maxsetsize(None) => f.write_str("MAXSETSIZE CLEAR"),
            Configure::Maxsetsize(Some(None)) => f.write_str("MAXSETSIZE TO UNLIMITED"),
            Configure::Maxsetsize(Some(Some(s))) => write!(f, "MAXSETSIZE TO {s}"),
            Configure::Copies {
                archivelog,
                device,
                count,
            } => copies(f, *archivelog, device, count),
            Configure::Exclude { tablespace, clear } => write!(
                f,
                "EXCLUDE FOR TABLESPACE {}{}",
                name(tablespace),
                if *clear { " CLEAR" } else { "" }
            ),
            Configure::SnapshotControlfile(None) => f.write_str("SNAPSHOT CONTROLFILE NAME CLEAR"),
            Configure::SnapshotControlfile(Some(p)) => {
                write!(f, "SNAPSHOT CONTROLFILE NAME TO {}", q(p))
            }
            Configure::RpoTarget(None) => f.write_str("RPO TARGET CLEAR"),
            Configure::RpoTarget(Some(v)) => write!(f, "RPO TARGET TO {}", q(v)),
            Configure::Measure { name, value } => {
                f.write_str(crate::ast::measure_words(name).unwrap_or("UNKNOWN SETTING"))?;
                match value {
                    Some(v) => write!(f, " TO {}", q(v)),
                    None => f.write_str(" CLEAR"),
                }
            }
        }
    }
}

fn device_type(
    f: &mut Formatter<'_>,
    device: &Device,
    settings: &Option<DeviceSettings>,
) -> fmt::Result {
    write!(f, "DEVICE TYPE {device}")?;
    let Some(s) = settings else {
        return f.write_str(" CLEAR");
    };
    if let Some(p) = s.parallelism {
        write!(f, " PARALLELISM {p}")?;
    }
    if let Some((c, copy)) = s.backup_type {
        write!(
            f,
            " BACKUP TYPE TO {}{}",
            if c { "COMPRESSED " } else { "" },
            if copy { "COPY" } else { "BACKUPSET" }
        )?;
    }
    Ok(())
}

fn channel(
    f: &mut Formatter<'_>,
    auxiliary: bool,
    number: &Option<u64>,
    device: &Device,
    operands: &Option<Vec<ChannelOp>>,
) -> fmt::Result {
    if auxiliary {
        f.write_str("AUXILIARY ")?;
    }
    f.write_str("CHANNEL ")?;
    if let Some(n) = number {
        write!(f, "{n} ")?;
    }
    write!(f, "DEVICE TYPE {device}")?;
    match operands {
        None => f.write_str(" CLEAR"),
        Some(v) => {
            for o in v {
                write!(f, " {o}")?;
            }
            Ok(())
        }
    }
}

fn compression(f: &mut Formatter<'_>, c: &CompressionSetting) -> fmt::Result {
    write!(f, "COMPRESSION ALGORITHM {}", q(&c.algorithm))?;
    if let Some(r) = &c.release {
        write!(f, " AS OF RELEASE {}", q(r))?;
    }
    if let Some(l) = c.optimize_for_load {
        write!(f, " OPTIMIZE FOR LOAD {}", if l { "TRUE" } else { "FALSE" })?;
    }
    Ok(())
}

/// A policy with at least one rule (none prints as `TO NONE`).
fn deletion_policy(f: &mut Formatter<'_>, rules: &[DeletionRule]) -> fmt::Result {
    f.write_str("ARCHIVELOG DELETION POLICY TO")?;
    for r in rules {
        match r {
            DeletionRule::BackedUp { times, device } => {
                write!(f, " BACKED UP {times} TIMES TO DEVICE TYPE {device}")?
            }
            DeletionRule::AppliedOnStandby { all } => {
                write!(f, " APPLIED ON {}STANDBY", if *all { "ALL " } else { "" })?
            }
            DeletionRule::ShippedToStandby { all } => {
                write!(f, " SHIPPED TO {}STANDBY", if *all { "ALL " } else { "" })?
            }
        }
    }
    Ok(())
}

fn copies(
    f: &mut Formatter<'_>,
    archivelog: bool,
    device: &Device,
    count: &Option<u64>,
) -> fmt::Result {
    write!(
        f,
        "{} BACKUP COPIES FOR DEVICE TYPE {device}",
        if archivelog { "ARCHIVELOG" } else { "DATAFILE" }
    )?;
    match count {
        None => f.write_str(" CLEAR"),
        Some(n) => write!(f, " TO {n}"),
    }
}

impl Display for OfObject {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            OfObject::Database => f.write_str("DATABASE"),
            OfObject::Tablespace(v) => write!(f, "TABLESPACE {}", names(v)),
            OfObject::Datafile(v) => write!(f, "DATAFILE {}", list(v, file)),
            OfObject::Archivelog(a) => write!(f, "ARCHIVELOG {a}"),
            OfObject::Controlfile => f.write_str("CONTROLFILE"),
            OfObject::Spfile => f.write_str("SPFILE"),
        }
    }
}

impl Display for MaintObject {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            MaintObject::Backup(of) | MaintObject::Copy(of) => {
                f.write_str(if matches!(self, MaintObject::Backup(_)) {
                    "BACKUP"
                } else {
                    "COPY"
                })?;
                if let Some(o) = of {
                    write!(f, " OF {o}")?;
                }
                Ok(())
            }
            MaintObject::Backupset(v) => {
                f.write_str("BACKUPSET")?;
                if !v.is_empty() {
                    write!(f, " {}", list(v, |n| n.to_string()))?;
                }
                Ok(())
            }
            MaintObject::Backuppiece(v) => write!(f, "BACKUPPIECE {}", list(v, |s| q(s))),
            MaintObject::Archivelog(a) => write!(f, "ARCHIVELOG {a}"),
        }
    }
}

impl Display for Qualifier {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Qualifier::Tag(t) => write!(f, "TAG {}", q(t)),
            Qualifier::Like(s) => write!(f, "LIKE {}", q(s)),
            Qualifier::DeviceType(d) => write!(f, "DEVICE TYPE {d}"),
            Qualifier::CompletedAfter(d) => write!(f, "COMPLETED AFTER {d}"),
            Qualifier::CompletedBefore(d) => write!(f, "COMPLETED BEFORE {d}"),
            Qualifier::CompletedBetween(a, b) => write!(f, "COMPLETED BETWEEN {a} AND {b}"),
            Qualifier::BackedUp { times, device } => {
                write!(f, "BACKED UP {times} TIMES TO DEVICE TYPE {device}")
            }
        }
    }
}

impl Display for Retention2 {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Retention2::Redundancy(n) => write!(f, "REDUNDANCY {n}"),
            Retention2::WindowDays(n) => write!(f, "RECOVERY WINDOW OF {n} DAYS"),
            Retention2::Days(n) => write!(f, "DAYS {n}"),
            Retention2::Incremental(n) => write!(f, "INCREMENTAL {n}"),
            Retention2::Orphan => f.write_str("ORPHAN"),
        }
    }
}

impl Display for List {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            List::Objects {
                expired,
                object,
                summary,
                by_file,
                qualifiers,
            } => {
                if *expired {
                    f.write_str("EXPIRED ")?;
                }
                write!(f, "{object}")?;
                if *by_file {
                    f.write_str(" BY FILE")?;
                }
                if *summary {
                    f.write_str(" SUMMARY")?;
                }
                f.write_str(&quals(qualifiers))
            }
            List::Incarnation => f.write_str("INCARNATION"),
            List::RestorePoint(None) => f.write_str("RESTORE POINT ALL"),
            List::RestorePoint(Some(n)) => write!(f, "RESTORE POINT {}", name(n)),
            List::ScriptNames => f.write_str("SCRIPT NAMES"),
            List::Failure { all, ids, detail } => {
                f.write_str("FAILURE")?;
                if *all {
                    f.write_str(" ALL")?;
                }
                if !ids.is_empty() {
                    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                    write!(f, " {}", ids.join(", "))?;
                }
                if *detail {
                    f.write_str(" DETAIL")?;
                }
                Ok(())
            }
        }
    }
}

impl Display for Report {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Report::NeedBackup { rule, object } => {
                f.write_str("NEED BACKUP")?;
                if let Some(r) = rule {
                    write!(f, " {r}")?;
                }
                if let Some(o) = object {
                    write!(f, " {o}")?;
                }
                Ok(())
            }
            Report::Obsolete(r) => {
                f.write_str("OBSOLETE")?;
                if let Some(r) = r {
                    write!(f, " {r}")?;
                }
                Ok(())
            }
            Report::Schema => f.write_str("SCHEMA"),
            Report::Unrecoverable => f.write_str("UNRECOVERABLE"),
            Report::Slo => f.write_str("SLO"),
            Report::Costs => f.write_str("COSTS"),
        }
    }
}

impl Display for Delete {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.force {
            f.write_str("FORCE ")?;
        }
        if self.noprompt {
            f.write_str("NOPROMPT ")?;
        }
        match &self.what {
            DeleteWhat::Obsolete(r) => {
                f.write_str("OBSOLETE")?;
                if let Some(r) = r {
                    write!(f, " {r}")?;
                }
            }
            DeleteWhat::Expired(o) => write!(f, "EXPIRED {o}")?,
            DeleteWhat::Object(o) => write!(f, "{o}")?,
        }
        f.write_str(&quals(&self.qualifiers))
    }
}

impl Display for CatalogCmd {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CatalogCmd::StartWith { prefix, noprompt } => write!(
                f,
                "START WITH {}{}",
                q(prefix),
                if *noprompt { " NOPROMPT" } else { "" }
            ),
            CatalogCmd::RecoveryArea { noprompt } => write!(
                f,
                "RECOVERY AREA{}",
                if *noprompt { " NOPROMPT" } else { "" }
            ),
            CatalogCmd::Files { kind, names } => {
                write!(f, "{kind} {}", list(names, |s| q(s)))
            }
        }
    }
}
