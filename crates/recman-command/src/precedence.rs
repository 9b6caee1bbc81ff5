//! Where a setting's value comes from. recman takes it from, in order: the command's flag, the
//! environment, the --config file, the catalog (`configure`), the built-in default; `show all`
//! names the layer that applied. The front ends look the layers up (the CLI reads files and
//! the catalog) and hand the values here, so the order is decided in one place.

use crate::check::{check_count, ranges};

/// The layer a value came from, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Flag,
    Environment,
    ConfigFile,
    Catalog,
    Default,
}

impl Source {
    /// How `show all` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Environment => "environment",
            Source::ConfigFile => "config file",
            Source::Catalog => "catalog",
            Source::Default => "default",
        }
    }
}

/// The candidate values of one setting, one per layer.
#[derive(Debug, Clone)]
pub struct Layers<T> {
    pub flag: Option<T>,
    pub environment: Option<T>,
    pub config_file: Option<T>,
    pub catalog: Option<T>,
    pub default: T,
}

impl<T> Layers<T> {
    /// Only a built-in default so far; the `with_*` calls add the layers that are set.
    pub fn new(default: T) -> Self {
        Layers {
            flag: None,
            environment: None,
            config_file: None,
            catalog: None,
            default,
        }
    }

    pub fn flag(mut self, v: Option<T>) -> Self {
        self.flag = v;
        self
    }

    pub fn environment(mut self, v: Option<T>) -> Self {
        self.environment = v;
        self
    }

    pub fn config_file(mut self, v: Option<T>) -> Self {
        self.config_file = v;
        self
    }

    pub fn catalog(mut self, v: Option<T>) -> Self {
        self.catalog = v;
        self
    }

    /// The strongest layer that is set, and which one it was.
    pub fn resolve(self) -> (T, Source) {
        if let Some(v) = self.flag {
            (v, Source::Flag)
        } else if let Some(v) = self.environment {
            (v, Source::Environment)
        } else if let Some(v) = self.config_file {
            (v, Source::ConfigFile)
        } else if let Some(v) = self.catalog {
            (v, Source::Catalog)
        } else {
            (self.default, Source::Default)
        }
    }
}

/// One repository-wide setting: its name (CLI and `show all`), catalog key and default.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub key: &'static str,
    pub default: &'static str,
}

/// The settings `configure` stores and `show all` prints, in that order.
pub const SPECS: &[Spec] = &[
    Spec {
        name: "retention-policy",
        key: "retention_policy",
        default: "redundancy 1",
    },
    Spec {
        name: "channels",
        key: "channels",
        default: "1",
    },
    Spec {
        name: "compression",
        key: "compression",
        default: "none",
    },
    Spec {
        name: "filesperset",
        key: "filesperset",
        default: "64",
    },
    Spec {
        name: "maxopenfiles",
        key: "maxopenfiles",
        default: "8",
    },
    Spec {
        name: "backup-optimization",
        key: "backup_optimization",
        default: "off",
    },
    Spec {
        name: "section-size",
        key: "section_size",
        default: "none",
    },
    Spec {
        name: "archivelog-deletion-policy",
        key: "archivelog_deletion_policy",
        default: "none",
    },
    Spec {
        name: "backup-copies",
        key: "backup_copies",
        default: "1",
    },
    Spec {
        name: "tuning",
        key: "tuning",
        default: "off",
    },
    Spec {
        name: "incremental-forever",
        key: recman_engine::forever::KEY,
        default: "off",
    },
    // Whether retention counts imported backups (`catalog import`, issue 44).
    Spec {
        name: "imported-retention",
        key: "imported_retention",
        default: "off",
    },
    // The age past which the newest backup is a failure (`recman check`, issue 43).
    Spec {
        name: "rpo-target",
        key: "rpo_target",
        default: "none",
    },
    // The restore time past which a drill or the predicted restore is a failure.
    Spec {
        name: "rto-target",
        key: "rto_target",
        default: "none",
    },
    // How old the newest drill may grow before `recman check` asks for another.
    Spec {
        name: "drill-interval",
        key: "drill_interval",
        default: "none",
    },
    // A replication slot holding more WAL than this is a failure: 1G is enough for a
    // standby that is a few minutes behind, and small beside the disks a primary runs on.
    Spec {
        name: "slot-retention-limit",
        key: "slot_retention_limit",
        default: "1G",
    },
    // Free space the repository's file system must keep, besides room for one more full
    // backup; none: only that room.
    Spec {
        name: "repository-min-free",
        key: "repository_min_free",
        default: "none",
    },
    // A command holding the repository lock this long is stuck or far slower than planned:
    // a day is longer than any backup window, so a healthy backup never trips it.
    Spec {
        name: "repository-lock-limit",
        key: "repository_lock_limit",
        default: "24h",
    },
    // A fleet certificate ending within this is a failure: a month leaves time to issue and
    // roll out a new one.
    Spec {
        name: "certificate-expiry-warning",
        key: "certificate_expiry_warning",
        default: "30d",
    },
    // The time a full backup must fit in; none: no prediction is checked.
    Spec {
        name: "backup-window",
        key: "backup_window",
        default: "none",
    },
];

/// Settings the --config file may not set: they decide what the whole repository keeps
/// (imported backups counted by retention, the incremental-forever schedule), so one host's
/// file must not change them for every other host; CONFIGURE sets them in the catalog.
const CATALOG_ONLY: &[&str] = &["imported-retention", "incremental-forever"];

/// The key of setting `spec` in the --config file (its name with `_`), None when the file
/// may not set it.
pub fn file_key(spec: &Spec) -> Option<String> {
    (!CATALOG_ONLY.contains(&spec.name)).then(|| spec.name.replace('-', "_"))
}

/// The setting the --config file's `key` sets, if any.
pub fn spec_of_file_key(key: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| file_key(s).as_deref() == Some(key))
}

/// The spec of setting `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

/// The catalog key of a device type's setting (`parms`, `parallelism`, `blksize`, `env`).
pub fn device_key(device: &str, what: &str) -> String {
    format!("device-type.{device}.{what}")
}

/// What a backup writes to, with how many channels and which block size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceChoice {
    /// None: the repository itself.
    pub device: Option<String>,
    pub channels: u32,
    /// The device's configured BLKSIZE when no --blksize was given; None leaves the I/O
    /// engine's own (the flag, else 1M).
    pub blksize: Option<String>,
}

/// The catalog's device settings a backup may use, as stored.
#[derive(Debug, Clone, Default)]
pub struct DeviceSettings {
    pub default_device_type: Option<String>,
    /// `device-type.<device>.parallelism` of the chosen device.
    pub parallelism: Option<String>,
    /// `device-type.<device>.blksize` of the chosen device.
    pub blksize: Option<String>,
}

/// Why a stored device setting is refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error(
    "device-type {device} parallelism {value:?}: {why}; hint: `recman configure device-type {device} parallelism 4`"
)]
pub struct BadParallelism {
    pub device: String,
    pub value: String,
    pub why: String,
}

/// The device: the flag, else the configured default device type. Its channels: the
/// --channels flag, else the device's configured parallelism, else `channels` (the backup's
/// own resolved setting). Its block size: --blksize, else the device's BLKSIZE.
///
/// `lookup(device)` returns the catalog's settings once the device is known.
pub fn resolve_device(
    flag_device: Option<&str>,
    default_device: Option<String>,
    flag_channels: Option<u32>,
    channels: u32,
    flag_blksize: Option<&str>,
    lookup: impl FnOnce(&str) -> DeviceSettings,
) -> Result<DeviceChoice, BadParallelism> {
    let device = flag_device.map(str::to_lowercase).or(default_device);
    let Some(device) = device else {
        return Ok(DeviceChoice {
            device: None,
            channels,
            blksize: None,
        });
    };
    let stored = lookup(&device);
    let channels = match (flag_channels, stored.parallelism) {
        (None, Some(p)) => {
            let (lo, hi) = ranges::CHANNELS;
            check_count(&p, lo, hi).map_err(|why| BadParallelism {
                device: device.clone(),
                value: p.clone(),
                why,
            })? as u32
        }
        _ => channels,
    };
    let blksize = match flag_blksize {
        Some(_) => None,
        None => stored.blksize,
    };
    Ok(DeviceChoice {
        device: Some(device),
        channels,
        blksize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strongest_layer_that_is_set_wins() {
        let all = Layers::new(1)
            .flag(Some(5))
            .environment(Some(4))
            .config_file(Some(3))
            .catalog(Some(2));
        assert_eq!(all.resolve(), (5, Source::Flag));
        let no_flag = Layers::new(1)
            .environment(Some(4))
            .config_file(Some(3))
            .catalog(Some(2));
        assert_eq!(no_flag.resolve(), (4, Source::Environment));
        let file = Layers::new(1).config_file(Some(3)).catalog(Some(2));
        assert_eq!(file.resolve(), (3, Source::ConfigFile));
        assert_eq!(
            Layers::new(1).catalog(Some(2)).resolve(),
            (2, Source::Catalog)
        );
        assert_eq!(Layers::new(1).resolve(), (1, Source::Default));
        assert!(Source::Flag < Source::Environment && Source::Catalog < Source::Default);
        assert_eq!(Source::ConfigFile.as_str(), "config file");
    }

    #[test]
    fn every_setting_has_one_spec() {
        for s in SPECS {
            assert_eq!(
                SPECS.iter().filter(|o| o.name == s.name).count(),
                1,
                "{}",
                s.name
            );
        }
        assert_eq!(spec("channels").unwrap().default, "1");
    }

    fn stored(p: Option<&str>, b: Option<&str>) -> impl FnOnce(&str) -> DeviceSettings {
        let (p, b) = (p.map(String::from), b.map(String::from));
        move |_| DeviceSettings {
            default_device_type: None,
            parallelism: p,
            blksize: b,
        }
    }

    #[test]
    fn device_channels_and_blksize() {
        // No device anywhere: the repository, with the backup's channels.
        let c = resolve_device(None, None, None, 2, None, stored(Some("8"), None)).unwrap();
        assert_eq!(
            c,
            DeviceChoice {
                device: None,
                channels: 2,
                blksize: None
            }
        );
        // The configured default device and its parallelism and block size.
        let c = resolve_device(
            None,
            Some("sbt".into()),
            None,
            2,
            None,
            stored(Some("8"), Some("262144")),
        )
        .unwrap();
        assert_eq!(
            c,
            DeviceChoice {
                device: Some("sbt".into()),
                channels: 8,
                blksize: Some("262144".into())
            }
        );
        // Flags beat the device's settings.
        let c = resolve_device(
            Some("SBT"),
            Some("s3".into()),
            Some(3),
            3,
            Some("1M"),
            stored(Some("8"), Some("262144")),
        )
        .unwrap();
        assert_eq!(
            c,
            DeviceChoice {
                device: Some("sbt".into()),
                channels: 3,
                blksize: None
            }
        );
        let e =
            resolve_device(Some("sbt"), None, None, 1, None, stored(Some("0"), None)).unwrap_err();
        assert!(e.to_string().contains("1 to 256"), "{e}");
    }
}
