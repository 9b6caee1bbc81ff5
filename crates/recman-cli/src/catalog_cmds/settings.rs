//! CONFIGURE and SHOW ALL. Settings are repository-wide rows of the catalog's config table;
//! a value is taken from, in order: the command's flag, the --config file, the catalog, the
//! built-in default. `show all` names which one applied.

use crate::cli::Global;
use anyhow::{Result, anyhow, bail};
use recman_command::ConfigureWhat;
use recman_engine::RetentionPolicy;
use recman_format::Compression;

use recman_command::precedence::{Layers, SPECS};

/// A setting's value and where it came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Setting {
    pub name: &'static str,
    pub value: String,
    /// "flag", "config file", "catalog" or "default".
    pub source: &'static str,
}

/// Checks a value of setting `name`, returning its stored form.
fn validate(name: &str, words: &[String]) -> Result<String> {
    let v = words.join(" ").trim().to_lowercase();
    let int = |what: &str| -> Result<String> {
        let (lo, hi) = crate::input::range_of(what);
        match crate::input::check_count(&v, lo, hi) {
            Ok(n) => Ok(n.to_string()),
            Err(why) => bail!("{what} {v:?}: {why}; hint: e.g. `recman configure {what} 4`"),
        }
    };
    match name {
        "retention-policy" => Ok(v.parse::<RetentionPolicy>()?.to_string()),
        "compression" => {
            let c: Compression = v.parse().map_err(|e| anyhow!("compression {v:?}: {e}"))?;
            Ok(c.to_string())
        }
        "channels" | "filesperset" | "maxopenfiles" => int(name),
        "backup-optimization" => match v.as_str() {
            "on" | "off" => Ok(v),
            _ => bail!("backup optimization {v:?} is not valid; hint: use `on` or `off`"),
        },
        "backup-copies" => match v.parse::<u32>() {
            Ok(n @ 1..=recman_engine::duplex::MAX_COPIES) => Ok(n.to_string()),
            _ => bail!(
                "backup copies {v:?} is not valid; hint: 1 to {}, e.g. `recman configure backup-copies 2`",
                recman_engine::duplex::MAX_COPIES
            ),
        },
        "tuning" => match v.as_str() {
            "auto" | "off" => Ok(v),
            _ => bail!("tuning {v:?} is not valid; hint: use `auto` or `off`"),
        },
        "section-size" if v == "none" => Ok(v),
        "section-size" => {
            let (lo, hi) = crate::input::SECTION_SIZE;
            let n = crate::input::check_size(&v, lo, hi).map_err(|e| {
                anyhow!("section size {v:?}: {e}; hint: e.g. `recman configure section-size 1G`, or `none`")
            })?;
            Ok(n.to_string())
        }
        "archivelog-deletion-policy" => {
            let w: Vec<&str> = v.split_whitespace().collect();
            match w.as_slice() {
                ["none"] => Ok("none".into()),
                ["backed-up", n, "times" | "time"]
                    if crate::input::check_count(
                        n,
                        crate::input::COPIES.0,
                        crate::input::COPIES.1,
                    )
                    .is_ok() =>
                {
                    Ok(format!("backed-up {n} times"))
                }
                _ => bail!(
                    "archivelog deletion policy {v:?} is not valid; hint: use `none` or `backed-up N times`"
                ),
            }
        }
        "incremental-forever" => match recman_engine::forever::parse(&v) {
            Ok(None) => Ok("off".into()),
            Ok(Some(p)) => Ok(p.to_setting()),
            Err(why) => bail!(
                "incremental forever: {why}; hint: e.g. `recman configure incremental-forever synthetic-full-every 7 days`, or `off`"
            ),
        },
        _ => unreachable!("every setting has a spec"),
    }
}

pub fn configure(g: &Global, what: ConfigureWhat) -> Result<()> {
    let (name, words) = match what {
        ConfigureWhat::DeviceType { device, value } => {
            return crate::device_cmds::configure_device(g, &device, &value);
        }
        ConfigureWhat::DefaultDeviceType { value } => {
            return crate::device_cmds::configure_default_device(g, &value);
        }
        ConfigureWhat::RetentionPolicy { value } => ("retention-policy", value),
        ConfigureWhat::Channels { value } => ("channels", vec![value]),
        ConfigureWhat::Compression { value } => ("compression", vec![value]),
        ConfigureWhat::Filesperset { value } => ("filesperset", vec![value]),
        ConfigureWhat::Maxopenfiles { value } => ("maxopenfiles", vec![value]),
        ConfigureWhat::SectionSize { value } => ("section-size", vec![value]),
        ConfigureWhat::BackupOptimization { value } => ("backup-optimization", vec![value]),
        ConfigureWhat::ArchivelogDeletionPolicy { value } => ("archivelog-deletion-policy", value),
        ConfigureWhat::Tuning { value } => ("tuning", vec![value]),
        ConfigureWhat::BackupCopies { value } => ("backup-copies", vec![value]),
        ConfigureWhat::IncrementalForever { value } => ("incremental-forever", value),
    };
    let spec = SPECS.iter().find(|s| s.name == name).expect("a spec");
    let repo = crate::commands::open_repo(g)?;
    let cat = repo.catalog();
    let say = |s: String| {
        if !g.quiet {
            println!("{s}");
        }
    };
    if words.len() == 1 && words[0].eq_ignore_ascii_case("clear") {
        cat.clear_config(spec.key)?;
        say(format!(
            "old configuration: {name} cleared; now {}  # default",
            spec.default
        ));
        return Ok(());
    }
    let value = validate(name, &words)?;
    let old = cat.config(spec.key)?;
    cat.set_config(spec.key, &value)?;
    match old {
        Some(o) => say(format!(
            "old configuration: {name} {o}\nnew configuration: {name} {value}"
        )),
        None => say(format!("new configuration: {name} {value}")),
    }
    say("new configuration stored in the catalog".into());
    Ok(())
}

/// Every setting as it applies now, without flags.
pub fn resolve_all(g: &Global) -> Result<Vec<Setting>> {
    let file = crate::config::file_settings(g)?;
    let repo = crate::commands::open_repo(g)?;
    let stored: std::collections::HashMap<String, String> =
        repo.catalog().config_all()?.into_iter().collect();
    let mut out = Vec::new();
    for s in SPECS {
        let from_file = match s.name {
            "retention-policy" => file.retention_policy.clone(),
            "channels" => file.channels.map(|v| v.to_string()),
            "compression" => file.compression.clone(),
            "filesperset" => file.filesperset.map(|v| v.to_string()),
            "maxopenfiles" => file.maxopenfiles.map(|v| v.to_string()),
            "archivelog-deletion-policy" => file.archivelog_deletion_policy.clone(),
            "section-size" => file.section_size.clone(),
            _ => None,
        };
        let from_file = from_file.map(|v| validate(s.name, &[v])).transpose()?;
        let (value, source) = Layers::new(s.default.to_string())
            .config_file(from_file)
            .catalog(stored.get(s.key).cloned())
            .resolve();
        let source = source.as_str();
        out.push(Setting {
            name: s.name,
            value,
            source,
        });
    }
    Ok(out)
}

pub fn setting(all: &[Setting], name: &str) -> String {
    all.iter()
        .find(|s| s.name == name)
        .map(|s| s.value.clone())
        .unwrap_or_default()
}

/// The retention policy in force (config file, catalog or default).
pub fn retention_policy(g: &Global) -> Result<RetentionPolicy> {
    Ok(setting(&resolve_all(g)?, "retention-policy").parse()?)
}

pub fn show_all(g: &Global, json: bool) -> Result<()> {
    let all = resolve_all(g)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(());
    }
    let repo = crate::commands::open_repo(g)?;
    println!(
        "recman configuration parameters for repository {} are:",
        repo.location()
    );
    for s in &all {
        println!("configure {} {};  # {}", s.name, s.value, s.source);
    }
    // Device types are free-form keys ("device-type.sbt.parms"), shown as they are set.
    for (k, v) in repo.catalog().config_all()? {
        if let Some(rest) = k.strip_prefix("device-type.")
            && let Some((device, what)) = rest.split_once('.')
        {
            println!("configure device-type {device} {what} {v};  # catalog");
        } else if k == "default-device-type" {
            println!("configure default-device-type {v};  # catalog");
        }
    }
    Ok(())
}

/// Backup settings resolved for `backup database`, each with its source.
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
}

/// Resolves flag > config file > catalog > built-in default for the backup settings.
pub fn backup_defaults(
    g: &Global,
    channels: Option<u32>,
    filesperset: Option<u32>,
    maxopenfiles: Option<u32>,
    compress: Option<&str>,
) -> Result<BackupDefaults> {
    let all = resolve_all(g)?;
    // A value stored by an older recman, or written in the config file, gets the same range
    // check as the flag.
    let num = |flag: Option<u32>, name: &str| -> Result<u32> {
        match flag {
            Some(v) => Ok(v),
            None => {
                let (lo, hi) = crate::input::range_of(name);
                let v = setting(&all, name);
                crate::input::check_count(&v, lo, hi)
                    .map(|n| n as u32)
                    .map_err(|e| {
                        anyhow!("setting {name} {v:?}: {e}; hint: `recman configure {name} clear`")
                    })
            }
        }
    };
    let compression = match compress {
        Some(c) => c.parse().map_err(|e| anyhow!("--compress: {e}"))?,
        None => setting(&all, "compression").parse().map_err(|e| {
            anyhow!("setting compression: {e}; hint: `recman configure compression clear`")
        })?,
    };
    Ok(BackupDefaults {
        channels: num(channels, "channels")?,
        filesperset: num(filesperset, "filesperset")?,
        maxopenfiles: num(maxopenfiles, "maxopenfiles")?,
        compression,
        section_size: setting(&all, "section-size").parse().ok(),
        optimization: setting(&all, "backup-optimization") == "on",
        tuning: setting(&all, "tuning") == "auto",
    })
}

/// The settings of a `backup database` resolved by precedence (flag > config file > catalog
/// > default), with its device, channels and BLKSIZE.
pub fn resolve_backup(
    g: &Global,
    repo: &recman_catalog::Repository,
    a: &recman_command::BackupDatabase,
) -> Result<recman_command::options::ResolvedBackup> {
    let d = backup_defaults(
        g,
        a.channels,
        a.filesperset,
        a.maxopenfiles,
        a.compress.as_deref(),
    )?;
    let device = crate::device_cmds::backup_device(
        repo,
        a.device_type.as_deref(),
        a.channels,
        d.channels,
        a.io.blksize.as_deref(),
    )?;
    Ok(recman_command::options::ResolvedBackup {
        filesperset: d.filesperset,
        maxopenfiles: d.maxopenfiles,
        compression: d.compression,
        section_size: d.section_size,
        optimization: d.optimization,
        tuning: d.tuning,
        device,
    })
}
