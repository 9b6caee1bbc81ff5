//! The repository-wide settings: how a CONFIGURE value is checked and stored, and which layer
//! a setting's value comes from (flag > config file > catalog > default; see
//! [`crate::precedence`]). The front end only hands over its config file's values
//! (`Env::config_file_settings`).

use crate::check::{check_count, check_size, ranges};
use crate::option_table::Kind;
use crate::precedence::{Layers, SPECS};
use recman_catalog::Repository;
use recman_engine::{EngineError, RetentionPolicy};
use recman_format::Compression;

/// A setting's value and where it came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Setting {
    pub name: &'static str,
    pub value: String,
    /// "flag", "config file", "catalog" or "default".
    pub source: &'static str,
}

fn invalid(s: String) -> EngineError {
    EngineError::Invalid(s)
}

/// Checks a value of setting `name`, returning its stored form.
pub fn validate(name: &str, words: &[String]) -> Result<String, EngineError> {
    let v = words.join(" ").trim().to_lowercase();
    let int = |what: &str| -> Result<String, EngineError> {
        let (lo, hi) = ranges::of_setting(what);
        match check_count(&v, lo, hi) {
            Ok(n) => Ok(n.to_string()),
            Err(why) => Err(invalid(format!(
                "{what} {v:?}: {why}; hint: e.g. `recman configure {what} 4`"
            ))),
        }
    };
    match name {
        "retention-policy" => Ok(v.parse::<RetentionPolicy>()?.to_string()),
        "compression" => {
            let c: Compression = v
                .parse()
                .map_err(|e| invalid(format!("compression {v:?}: {e}")))?;
            Ok(c.to_string())
        }
        "backup-optimization" => match v.as_str() {
            "on" | "off" => Ok(v),
            _ => Err(invalid(format!(
                "backup optimization {v:?} is not valid; hint: use `on` or `off`"
            ))),
        },
        "backup-copies" => match v.parse::<u32>() {
            Ok(n @ 1..=recman_engine::duplex::MAX_COPIES) => Ok(n.to_string()),
            _ => Err(invalid(format!(
                "backup copies {v:?} is not valid; hint: 1 to {}, e.g. `recman configure backup-copies 2`",
                recman_engine::duplex::MAX_COPIES
            ))),
        },
        "imported-retention" => match v.as_str() {
            "on" | "off" => Ok(v),
            _ => Err(invalid(format!(
                "imported retention {v:?} is not valid; hint: use `on` (retention counts imported backups) or `off`"
            ))),
        },
        "tuning" => match v.as_str() {
            "auto" | "off" => Ok(v),
            _ => Err(invalid(format!(
                "tuning {v:?} is not valid; hint: use `auto` or `off`"
            ))),
        },
        "archivelog-deletion-policy" => DeletionPolicy::parse(&v)
            .map(|p| p.to_setting())
            .ok_or_else(|| {
                invalid(format!(
                    "archivelog deletion policy {v:?} is not valid; hint: use `none`, `backed-up N times`, `applied-on-all-standby` or both"
                ))
            }),
        "incremental-forever" => match recman_engine::forever::parse(&v) {
            Ok(None) => Ok("off".into()),
            Ok(Some(p)) => Ok(p.to_setting()),
            Err(why) => Err(invalid(format!(
                "incremental forever: {why}; hint: e.g. `recman configure incremental-forever synthetic-full-every 7 days`, or `off`"
            ))),
        },
        "repository-min-free" if v == "none" => Ok(v),
        "slot-retention-limit" | "repository-min-free" => {
            let (lo, hi) = ranges::THRESHOLD_SIZE;
            let n = check_size(&v, lo, hi).map_err(|e| {
                invalid(format!(
                    "{name} {v:?}: {e}; hint: e.g. `recman configure {name} 1G`"
                ))
            })?;
            Ok(crate::check::human(n))
        }
        // The rest by their row's kind.
        _ => match crate::option_table::get(name).map(|d| d.kind) {
            Some(Kind::Count(_)) => int(name),
            Some(Kind::Duration) => duration_micros(name, &v).map(|_| v.replace(' ', "")),
            Some(Kind::Size(_)) if v == "none" => Ok(v),
            Some(Kind::Size((lo, hi))) => {
                let n = check_size(&v, lo, hi).map_err(|e| {
                    invalid(format!(
                        "{} {v:?}: {e}; hint: e.g. `recman configure {name} 1G`, or `none`",
                        name.replace('-', " ")
                    ))
                })?;
                Ok(n.to_string())
            }
            _ => unreachable!("every setting has a spec"),
        },
    }
}

/// RMAN's ARCHIVELOG DELETION POLICY: what must hold before DELETE ARCHIVELOG may remove a
/// segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeletionPolicy {
    /// Backups that must hold the segment (`backed-up N times`).
    pub copies: Option<u32>,
    /// Every standby must have replayed the segment (`applied-on-all-standby`).
    pub all_standby: bool,
}

impl DeletionPolicy {
    /// `none`, `backed-up N times`, `applied-on-all-standby`, or the last two together in
    /// either order; None when it is none of these.
    pub fn parse(v: &str) -> Option<DeletionPolicy> {
        let w: Vec<&str> = v.split_whitespace().collect();
        let mut p = DeletionPolicy::default();
        let mut rest = w.as_slice();
        if rest == ["none"] {
            return Some(p);
        }
        while !rest.is_empty() {
            rest = match rest {
                ["applied-on-all-standby", r @ ..] if !p.all_standby => {
                    p.all_standby = true;
                    r
                }
                ["backed-up", n, "times" | "time", r @ ..] if p.copies.is_none() => {
                    check_count(n, ranges::COPIES.0, ranges::COPIES.1).ok()?;
                    p.copies = Some(n.parse().ok()?);
                    r
                }
                _ => return None,
            };
        }
        Some(p)
    }

    /// The stored form: the standby rule first, as RMAN writes it.
    pub fn to_setting(self) -> String {
        let mut w = Vec::new();
        if self.all_standby {
            w.push("applied-on-all-standby".to_string());
        }
        if let Some(n) = self.copies {
            w.push(format!("backed-up {n} times"));
        }
        if w.is_empty() {
            "none".into()
        } else {
            w.join(" ")
        }
    }
}

/// An RPO target (`30s`, `15m`, `4h`, `1d`; `none`) in microseconds; None for `none`.
pub fn rpo_micros(v: &str) -> Result<Option<i64>, EngineError> {
    duration_micros("rpo-target", v)
}

/// A size threshold setting (`1G`; `none`) in bytes; None for `none`.
pub fn size_bytes(name: &str, v: &str) -> Result<Option<u64>, EngineError> {
    if v.trim().is_empty() || v.trim() == "none" {
        return Ok(None);
    }
    recman_engine::io::parse_size(v.trim())
        .map(Some)
        .map_err(|e| {
            invalid(format!(
                "{name} {v:?}: {e}; hint: e.g. `recman configure {name} 1G`"
            ))
        })
}

/// A duration setting (`30s`, `15m`, `4h`, `1d`; `none`) in microseconds; None for `none`.
pub fn duration_micros(name: &str, v: &str) -> Result<Option<i64>, EngineError> {
    let v = v.trim().replace(' ', "");
    if v.is_empty() || v == "none" {
        return Ok(None);
    }
    let bad = || {
        invalid(format!(
            "{} {v:?} is not a duration; hint: a whole number with s, m, h or d, e.g. `recman configure {name} 4h`, or `none`",
            name.replace('-', " ")
        ))
    };
    let split = v.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = v.split_at(split);
    let n: i64 = n.parse().map_err(|_| bad())?;
    let scale: i64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    match n.checked_mul(scale * 1_000_000) {
        Some(m) if n > 0 && n <= 3650 * 86_400 / scale => Ok(Some(m)),
        _ => Err(bad()),
    }
}

/// Every setting as it applies now, without flags: `file` holds the config file's values by
/// setting name.
pub fn resolve_all(
    repo: &Repository,
    file: &[(&'static str, String)],
) -> Result<Vec<Setting>, EngineError> {
    let stored: std::collections::HashMap<String, String> =
        repo.catalog().config_all()?.into_iter().collect();
    let mut out = Vec::new();
    for s in SPECS.iter() {
        let from_file = file
            .iter()
            .find(|(n, _)| *n == s.name)
            .map(|(_, v)| validate(s.name, std::slice::from_ref(v)))
            .transpose()?;
        let (value, source) = Layers::new(s.default.to_string())
            .config_file(from_file)
            .catalog(stored.get(s.key).cloned())
            .resolve();
        out.push(Setting {
            name: s.name,
            value,
            source: source.as_str(),
        });
    }
    Ok(out)
}

/// The value of `name` among `all` (empty when absent).
pub fn setting(all: &[Setting], name: &str) -> String {
    all.iter()
        .find(|s| s.name == name)
        .map(|s| s.value.clone())
        .unwrap_or_default()
}

/// The retention policy in force (config file, catalog or default).
pub fn retention_policy(
    repo: &Repository,
    file: &[(&'static str, String)],
) -> Result<RetentionPolicy, EngineError> {
    setting(&resolve_all(repo, file)?, "retention-policy").parse()
}

/// Whether retention counts imported backups (config file, catalog or default).
pub fn imported_retention(
    repo: &Repository,
    file: &[(&'static str, String)],
) -> Result<recman_engine::Imported, EngineError> {
    Ok(imported_of(&resolve_all(repo, file)?))
}

/// Whether retention counts imported backups, among settings `all`.
pub fn imported_of(all: &[Setting]) -> recman_engine::Imported {
    match setting(all, "imported-retention").as_str() {
        "on" => recman_engine::Imported::Counted,
        _ => recman_engine::Imported::Kept,
    }
}

/// Backup settings resolved for `backup database`.
#[derive(Debug, Clone)]
pub struct BackupDefaults {
    pub channels: u32,
    pub filesperset: u32,
    pub maxopenfiles: u32,
    pub compression: Compression,
    /// RMAN's SECTION SIZE in bytes, from `configure section-size` (the flag is applied by
    /// the caller).
    pub section_size: Option<u64>,
    /// `configure backup-optimization on`.
    pub optimization: bool,
    /// `configure tuning auto`.
    pub tuning: bool,
    /// The settings of the options whose flag the table makes, by name.
    pub table: std::collections::BTreeMap<&'static str, String>,
}

/// The flags of a backup that have a setting, each None when not given.
#[derive(Debug, Clone, Copy, Default)]
pub struct BackupFlags<'a> {
    pub channels: Option<u32>,
    pub filesperset: Option<u32>,
    pub maxopenfiles: Option<u32>,
    pub compress: Option<&'a str>,
}

/// Resolves flag > config file > catalog > built-in default for the backup settings.
pub fn backup_defaults(
    repo: &Repository,
    file: &[(&'static str, String)],
    f: BackupFlags<'_>,
) -> Result<BackupDefaults, EngineError> {
    let all = resolve_all(repo, file)?;
    // A value stored by an older recman, or written in the config file, gets the same range
    // check as the flag.
    let num = |flag: Option<u32>, name: &str| -> Result<u32, EngineError> {
        match flag {
            Some(v) => Ok(v),
            None => {
                let (lo, hi) = ranges::of_setting(name);
                let v = setting(&all, name);
                check_count(&v, lo, hi).map(|n| n as u32).map_err(|e| {
                    invalid(format!(
                        "setting {name} {v:?}: {e}; hint: `recman configure {name} clear`"
                    ))
                })
            }
        }
    };
    let compression = match f.compress {
        Some(c) => c.parse().map_err(|e| invalid(format!("--compress: {e}")))?,
        None => setting(&all, "compression").parse().map_err(|e| {
            invalid(format!(
                "setting compression: {e}; hint: `recman configure compression clear`"
            ))
        })?,
    };
    Ok(BackupDefaults {
        channels: num(f.channels, "channels")?,
        filesperset: num(f.filesperset, "filesperset")?,
        maxopenfiles: num(f.maxopenfiles, "maxopenfiles")?,
        compression,
        section_size: setting(&all, "section-size").parse().ok(),
        optimization: setting(&all, "backup-optimization") == "on",
        tuning: setting(&all, "tuning") == "auto",
        table: crate::option_table::backup_flags()
            .filter(|d| d.configurable())
            .map(|d| (d.name, setting(&all, d.name)))
            .collect(),
    })
}

/// The device type, channel count and block size of a backup, by the command model's
/// precedence (flag, else the catalog's default device type and its settings).
pub fn backup_device(
    repo: &Repository,
    flag: Option<&str>,
    channels_flag: Option<u32>,
    channels: u32,
    blksize_flag: Option<&str>,
) -> Result<crate::precedence::DeviceChoice, EngineError> {
    use recman_engine::devices::{check_device, parallelism_key};
    let cat = repo.catalog();
    let default = match flag {
        Some(_) => None,
        None => cat.config("default-device-type")?,
    };
    if let Some(d) = flag.map(str::to_lowercase).or(default.clone()) {
        check_device(&d)?;
    }
    let mut lookup_err = None;
    let choice = crate::precedence::resolve_device(
        flag,
        default,
        channels_flag,
        channels,
        blksize_flag,
        |device| {
            let mut get = |k: String| {
                cat.config(&k).unwrap_or_else(|e| {
                    lookup_err.get_or_insert(e);
                    None
                })
            };
            crate::precedence::DeviceSettings {
                default_device_type: None,
                parallelism: get(parallelism_key(device)),
                blksize: get(crate::precedence::device_key(device, "blksize")),
            }
        },
    )
    .map_err(|e| invalid(e.to_string()))?;
    if let Some(e) = lookup_err {
        return Err(e.into());
    }
    Ok(choice)
}

/// The settings of a `backup database` resolved by precedence (flag > config file > catalog
/// > default), with its device, channels and BLKSIZE.
pub fn resolve_backup(
    repo: &Repository,
    file: &[(&'static str, String)],
    a: &crate::command::BackupDatabase,
) -> Result<crate::options::ResolvedBackup, EngineError> {
    let d = backup_defaults(
        repo,
        file,
        BackupFlags {
            channels: a.channels,
            filesperset: a.filesperset,
            maxopenfiles: a.maxopenfiles,
            compress: a.compress.as_deref(),
        },
    )?;
    let device = backup_device(
        repo,
        a.device_type.as_deref(),
        a.channels,
        d.channels,
        a.io.blksize.as_deref(),
    )?;
    Ok(crate::options::ResolvedBackup {
        filesperset: d.filesperset,
        maxopenfiles: d.maxopenfiles,
        compression: d.compression,
        section_size: d.section_size,
        optimization: d.optimization,
        tuning: d.tuning,
        device,
        // A flag beats the setting.
        table: d.table.into_iter().chain(a.table.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(all: &[Setting], name: &str) -> (String, &'static str) {
        let s = all.iter().find(|s| s.name == name).expect(name);
        (s.value.clone(), s.source)
    }

    /// The config file beats the catalog, the catalog beats the default, a flag beats both,
    /// and a value from the file gets CONFIGURE's check.
    #[test]
    fn precedence_over_the_catalog_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::create(&dir.path().join("repo")).unwrap();
        let cat = repo.catalog();
        cat.set_config("channels", "4").unwrap();
        cat.set_config("maxopenfiles", "3").unwrap();
        let file = [("channels", "2".to_string()), ("filesperset", "16".into())];
        let all = resolve_all(&repo, &file).unwrap();
        assert_eq!(at(&all, "channels"), ("2".into(), "config file"));
        assert_eq!(at(&all, "filesperset"), ("16".into(), "config file"));
        assert_eq!(at(&all, "maxopenfiles"), ("3".into(), "catalog"));
        assert_eq!(at(&all, "compression"), ("none".into(), "default"));

        let flags = BackupFlags {
            channels: Some(7),
            ..Default::default()
        };
        let d = backup_defaults(&repo, &file, flags).unwrap();
        assert_eq!((d.channels, d.filesperset, d.maxopenfiles), (7, 16, 3));

        let bad = [("channels", "0".to_string())];
        let e = resolve_all(&repo, &bad).unwrap_err().to_string();
        assert!(
            e.starts_with("channels \"0\": ") && e.contains("hint:"),
            "{e}"
        );
    }

    #[test]
    fn configure_values_are_stored_in_one_form() {
        let v = |n: &str, w: &str| validate(n, &[w.to_string()]);
        assert_eq!(
            v("archivelog-deletion-policy", "Backed-Up 2 time").unwrap(),
            "backed-up 2 times"
        );
        let policy = |w: &str| v("archivelog-deletion-policy", w);
        assert_eq!(
            policy("backed-up 1 times applied-on-all-standby").unwrap(),
            "applied-on-all-standby backed-up 1 times",
            "the standby rule is stored first, as RMAN writes it"
        );
        assert_eq!(
            DeletionPolicy::parse("applied-on-all-standby"),
            Some(DeletionPolicy {
                copies: None,
                all_standby: true
            })
        );
        for bad in [
            "applied-on-all-standby applied-on-all-standby",
            "backed-up 0 times",
            "none applied-on-all-standby",
            "shipped",
        ] {
            assert!(policy(bad).is_err(), "{bad}");
        }
        assert_eq!(v("section-size", "1M").unwrap(), (1u64 << 20).to_string());
        assert_eq!(
            v("retention-policy", "redundancy 3").unwrap(),
            "redundancy 3"
        );
        assert!(v("backup-copies", "5").is_err());
        assert_eq!(v("rpo-target", "4H").unwrap(), "4h".to_string());
        assert_eq!(rpo_micros("15m").unwrap(), Some(900_000_000));
        assert_eq!(rpo_micros("none").unwrap(), None);
        for bad in ["4", "h", "0m", "4w", "-1h"] {
            assert!(v("rpo-target", bad).is_err(), "{bad}");
            assert!(v("rto-target", bad).is_err(), "{bad}");
            assert!(v("drill-interval", bad).is_err(), "{bad}");
        }
        assert_eq!(v("rto-target", "30M").unwrap(), "30m".to_string());
        assert_eq!(
            v("slot-retention-limit", "1024m").unwrap(),
            "1G".to_string()
        );
        assert_eq!(
            v("repository-min-free", "none").unwrap(),
            "none".to_string()
        );
        assert!(v("slot-retention-limit", "none").is_err());
        assert!(v("slot-retention-limit", "12").is_err());
        assert_eq!(size_bytes("x", "1G").unwrap(), Some(1 << 30));
        assert!(
            v("tuning", "maybe")
                .unwrap_err()
                .to_string()
                .contains("hint:")
        );
    }
}
