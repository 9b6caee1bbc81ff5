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

/// One repository-wide setting: its name (CLI and `show all`), catalog key and default; a
/// view of its row in [`crate::option_table`].
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub key: &'static str,
    pub default: &'static str,
    /// Its key in the --config file; None when the file may not set it.
    pub file_key: Option<&'static str>,
}

/// The settings `configure` stores and `show all` prints, in that order: the rows of the
/// option table that have a catalog key.
pub static SPECS: std::sync::LazyLock<Vec<Spec>> = std::sync::LazyLock::new(|| {
    crate::option_table::TABLE
        .iter()
        .filter_map(|d| {
            Some(Spec {
                name: d.name,
                key: d.catalog_key?,
                default: d.default_text(),
                file_key: d.config_key,
            })
        })
        .collect()
});

/// The key of setting `spec` in the --config file, None when the file may not set it: the
/// settings that decide what the whole repository keeps (imported backups counted by
/// retention, the incremental-forever schedule) are the catalog's only, so one host's file
/// does not change them for every other host.
pub fn file_key(spec: &Spec) -> Option<String> {
    spec.file_key.map(String::from)
}

/// The setting the --config file's `key` sets, if any.
pub fn spec_of_file_key(key: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.file_key == Some(key))
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
        for s in SPECS.iter() {
            assert_eq!(
                SPECS.iter().filter(|o| o.name == s.name).count(),
                1,
                "{}",
                s.name
            );
        }
        assert_eq!(spec("channels").unwrap().default, "1");
    }

    /// The table gives the settings, their order, defaults and file keys that `show all` and
    /// the config file have always had.
    #[test]
    fn the_specs_are_the_table_s_settings() {
        let names: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
        assert_eq!(
            names[..20],
            [
                "retention-policy",
                "channels",
                "compression",
                "filesperset",
                "maxopenfiles",
                "backup-optimization",
                "section-size",
                "archivelog-deletion-policy",
                "backup-copies",
                "tuning",
                "incremental-forever",
                "imported-retention",
                "rpo-target",
                "rto-target",
                "drill-interval",
                "slot-retention-limit",
                "repository-min-free",
                "repository-lock-limit",
                "certificate-expiry-warning",
                "backup-window",
            ]
        );
        for s in SPECS.iter() {
            let catalog_only = ["imported-retention", "incremental-forever"].contains(&s.name);
            assert_eq!(
                file_key(s),
                (!catalog_only).then(|| s.name.replace('-', "_")),
                "{}",
                s.name
            );
            if s.name != "incremental-forever" {
                assert_eq!(s.key, s.name.replace('-', "_"));
            }
            let row = crate::option_table::get(s.name).unwrap();
            assert_eq!(row.catalog_key, Some(s.key));
            if let Some(k) = &file_key(s) {
                assert_eq!(spec_of_file_key(k).unwrap().name, s.name);
            }
        }
        assert_eq!(spec("slot-retention-limit").unwrap().default, "1G");
        assert_eq!(spec("section-size").unwrap().default, "none");
        assert_eq!(spec("retention-policy").unwrap().default, "redundancy 1");
        assert!(spec("maxsetsize").is_none(), "a flag only");
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
