//! A command's options turned into the engine's: parsing of sizes, recovery targets and
//! tablespace maps, and the defaults that do not depend on the repository. What the
//! repository decides (the catalog's settings, the device) comes in already resolved by
//! [`crate::precedence`], so this module does no I/O and is tested without a repository.

use crate::command::*;
use recman_engine::io::{IoMode, IoSettings, ReadMode, parse_size};
use recman_engine::{BackupOptions, EngineError, RecoveryTarget, RestoreOptions};
use recman_format::Compression;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a command's options do not make engine options.
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    /// An option value the engine refuses (a size, a time, an I/O setting).
    #[error("--{option}: {source}")]
    Value {
        option: &'static str,
        #[source]
        source: Box<EngineError>,
    },
    #[error(
        "--tablespace-map {0:?} is not OLD=NEW; hint: e.g. --tablespace-map /data/ts1=/restore/ts1"
    )]
    TablespaceMap(String),
    #[error("--compress: {0}")]
    Compression(String),
    #[error(transparent)]
    Engine(Box<EngineError>),
}

impl From<EngineError> for OptionError {
    fn from(e: EngineError) -> Self {
        OptionError::Engine(Box::new(e))
    }
}

fn size(option: &'static str, v: &str) -> Result<u64, OptionError> {
    parse_size(v).map_err(|e| OptionError::Value {
        option,
        source: Box::new(e),
    })
}

/// A compression name (none, lz4, zstd, zstd:LEVEL).
pub fn compression(v: &str) -> Result<Compression, OptionError> {
    v.parse()
        .map_err(|e: recman_format::FormatError| OptionError::Compression(e.to_string()))
}

impl IoOptions {
    /// The I/O engine's settings; `device_blksize` is the device's configured BLKSIZE, used
    /// when no --blksize was given (see [`crate::precedence::resolve_device`]).
    pub fn settings(&self, device_blksize: Option<&str>) -> Result<IoSettings, OptionError> {
        let blksize = match (&self.blksize, device_blksize) {
            (Some(b), _) => size("blksize", b)?,
            // Stored by `configure` as a number of bytes.
            (None, Some(d)) => size("blksize", d)?,
            (None, None) => 1 << 20,
        };
        let s = IoSettings {
            mode: self.io_mode.parse::<IoMode>()?,
            slaves: self.io_slaves,
            input_buffers: self.input_buffers,
            input_buffer_size: self
                .input_buffer_size
                .as_deref()
                .map(|v| size("input-buffer-size", v).map(|n| n as usize))
                .transpose()?,
            output_buffers: self.output_buffers,
            blksize: blksize as usize,
            rate: self.rate.as_deref().map(|v| size("rate", v)).transpose()?,
            reads: match (self.buffered_reads, self.direct_reads) {
                (true, _) => ReadMode::Buffered,
                (false, true) => ReadMode::Direct,
                (false, false) => ReadMode::Auto,
            },
        };
        s.validate()?;
        Ok(s)
    }
}

/// The backup settings that precedence resolved against the config file and the catalog.
#[derive(Debug, Clone)]
pub struct ResolvedBackup {
    pub filesperset: u32,
    pub maxopenfiles: u32,
    pub compression: Compression,
    /// `configure section-size`, in bytes.
    pub section_size: Option<u64>,
    /// `configure backup-optimization on`.
    pub optimization: bool,
    /// `configure tuning auto`.
    pub tuning: bool,
    pub device: crate::precedence::DeviceChoice,
    /// The options whose flag the table makes, by name: the flag's value, else the setting's
    /// (stored form; `none` when unset).
    pub table: std::collections::BTreeMap<&'static str, String>,
}

impl ResolvedBackup {
    /// Size option `name` of the table in bytes; None when unset.
    pub fn size(&self, name: &'static str) -> Result<Option<u64>, OptionError> {
        match self.table.get(name).map(|v| v.trim()) {
            None | Some("" | "none") => Ok(None),
            Some(v) => size(name, v).map(Some),
        }
    }
}

/// A `--format` template (RMAN's FORMAT with a location).
pub(crate) fn piece_format(
    t: Option<&str>,
) -> Result<Option<recman_engine::piece_format::PieceFormat>, OptionError> {
    t.map(recman_engine::piece_format::PieceFormat::parse)
        .transpose()
        .map_err(|e| OptionError::Value {
            option: "format",
            source: Box::new(e),
        })
}

impl BackupDatabase {
    /// COPIES n: where copies 2..=n go, checked before the backup runs.
    pub fn duplex_targets(
        &self,
    ) -> Result<Vec<recman_engine::piece_format::PieceFormat>, OptionError> {
        let copies = self.copies.unwrap_or(1);
        let further = copies.saturating_sub(1) as usize;
        if copies > recman_engine::duplex::MAX_COPIES || self.copy_format.len() != further {
            return Err(OptionError::Value {
                option: "copies",
                source: Box::new(EngineError::Invalid(format!(
                    "COPIES {copies} needs {further} --copy-format location(s), one per copy after the first, and at most {} copies in all; {} given; hint: e.g. --copies 2 --copy-format '/mnt/second/ora_%U.rbf' (in a script: COPIES 2 FORMAT '/mnt/first/%U', '/mnt/second/%U')",
                    recman_engine::duplex::MAX_COPIES,
                    self.copy_format.len()
                ))),
            });
        }
        self.copy_format
            .iter()
            .map(|t| Ok(piece_format(Some(t))?.expect("a template was given")))
            .collect()
    }

    /// The engine's options: the command's flags over what precedence resolved.
    pub fn options(&self, r: &ResolvedBackup) -> Result<BackupOptions, OptionError> {
        Ok(BackupOptions {
            standby: self.standby.clone(),
            standby_agent: self.standby_agent.clone(),
            optimization: r.optimization && !self.force,
            device: r.device.device.clone(),
            channels: r.device.channels,
            filesperset: r.filesperset,
            maxopenfiles: r.maxopenfiles,
            compression: r.compression,
            tag: self.tag.clone(),
            maxcorrupt: self.maxcorrupt,
            archive_timeout: Duration::from_secs(self.archive_timeout),
            io: self.io.settings(r.device.blksize.as_deref())?,
            section_size: match &self.section_size {
                Some(v) => Some(size("section-size", v)?),
                None => r.section_size,
            },
            incremental_level: self.incremental_level,
            cumulative: self.cumulative,
            as_copy: self.as_copy,
            for_recover_of_copy: self.for_recover_of_copy,
            format: piece_format(self.format.as_deref())?,
            window: self.window()?,
            tune_auto: match self.tune.as_deref() {
                Some(t) => t.eq_ignore_ascii_case("auto"),
                None => r.tuning,
            },
            tune_notes: Vec::new(),
            tune_expected_rate: None,
            not_backed_up_since: match &self.not_backed_up_since {
                Some(t) => match RecoveryTarget::parse_time(t)? {
                    RecoveryTarget::Time { micros, .. } => Some(micros),
                    _ => None,
                },
                None => None,
            },
            check_logical: self.check_logical,
            maxsetsize: self
                .maxsetsize
                .as_deref()
                .map(|v| size("maxsetsize", v))
                .transpose()?,
            max_piece_size: r.size("maxpiecesize")?,
        })
    }

    /// The DURATION window, when one was given.
    fn window(&self) -> Result<Option<recman_engine::window::Window>, OptionError> {
        use recman_engine::window::{Minimize, Window};
        let Some(d) = &self.duration else {
            return Ok(None);
        };
        Ok(Some(Window {
            length: Window::parse_length(d).map_err(|e| OptionError::Value {
                option: "duration",
                source: Box::new(e),
            })?,
            partial: self.partial,
            minimize: match self.minimize.as_deref() {
                Some(m) if m.eq_ignore_ascii_case("load") => Minimize::Load,
                _ => Minimize::Time,
            },
        }))
    }
}

impl RestoreDatabase {
    /// The recovery target: one of the --until-… options, else the end of the archived WAL.
    pub fn target(&self) -> Result<RecoveryTarget, OptionError> {
        Ok(if let Some(t) = &self.until_time {
            RecoveryTarget::parse_time(t)?
        } else if let Some(l) = &self.until_lsn {
            RecoveryTarget::parse_lsn(l)?
        } else if let Some(x) = &self.until_xid {
            RecoveryTarget::parse_xid(x)?
        } else {
            RecoveryTarget::Latest
        })
    }

    /// The engine's options. `cwd` makes a relative --to absolute (restore_command runs from
    /// the restored directory); `recman_exe` and `restore_command_args` are what
    /// restore_command will call.
    pub fn options(
        &self,
        cwd: &Path,
        recman_exe: PathBuf,
        restore_command_args: Vec<String>,
    ) -> Result<RestoreOptions, OptionError> {
        let target = self.target()?;
        let mut map = Vec::new();
        for m in &self.tablespace_map {
            let (old, new) = m
                .split_once('=')
                .ok_or_else(|| OptionError::TablespaceMap(m.clone()))?;
            map.push((old.to_string(), PathBuf::from(new)));
        }
        Ok(RestoreOptions {
            // A preview or a validation writes nothing, so it needs no directory.
            to: self
                .to
                .as_deref()
                .map(|t| absolute(cwd, t))
                .unwrap_or_default(),
            target,
            from_tag: self.from_tag.clone(),
            channels: self.channels,
            tablespace_map: map,
            timeline: self.timeline.clone(),
            preserve_archive_mode: self.archive_mode == "preserve",
            from_copy: self.from_copy.clone(),
            switch_to_copy: self.switch_to_copy,
            recman_exe,
            restore_command_args,
            allow_wal_gap: self.allow_wal_gap,
            force: self.force,
            write_mode: match self.write_mode.as_str() {
                "direct" => Some(recman_engine::restore_dest::WriteMode::Direct),
                "buffered" => Some(recman_engine::restore_dest::WriteMode::Buffered),
                _ => None,
            },
        })
    }
}

/// `p` made absolute against `cwd`.
pub fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// RECOVER COPY's --until-time as microseconds since the epoch.
pub fn until_micros(until_time: Option<&str>) -> Result<Option<i64>, OptionError> {
    Ok(match until_time {
        Some(t) => match RecoveryTarget::parse_time(t)? {
            RecoveryTarget::Time { micros, .. } => Some(micros),
            _ => None,
        },
        None => None,
    })
}

/// `validate backup`'s channels: the flag, else one per core.
pub fn validate_channels(flag: Option<u32>) -> u32 {
    flag.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
}

impl ArchivePushAhead {
    pub fn options(&self) -> Result<recman_engine::PushOptions, OptionError> {
        let mut o = recman_engine::PushOptions::new(compression(&self.compress)?);
        if let Some(p) = self.parallel {
            o.parallel = p as usize;
        }
        Ok(o)
    }
}

impl Receive {
    /// The engine's settings for database `db` on the primary at `conninfo`.
    pub fn options(
        &self,
        db: &str,
        conninfo: Option<String>,
    ) -> Result<recman_engine::receive::ReceiveOptions, OptionError> {
        use recman_engine::receive::{ReceiveMode, ReceiveOptions};
        let mode = match self.mode.as_str() {
            "sync" => ReceiveMode::Sync,
            _ => ReceiveMode::Async,
        };
        // One segment at a time is the receiver's pace; more threads buy nothing.
        let mut push = recman_engine::PushOptions::new(compression(&self.compress)?);
        push.parallel = 2;
        Ok(ReceiveOptions {
            mode,
            slot: self.slot.clone(),
            create_slot: self.create_slot,
            flush_interval: std::time::Duration::from_millis(self.flush_interval_ms),
            conninfo,
            application_name: self
                .application_name
                .clone()
                .unwrap_or_else(|| default_application_name(db)),
            push,
        })
    }
}

/// `recman_<db>`, lower-cased, other characters as underscores: a name
/// synchronous_standby_names takes unquoted.
pub fn default_application_name(db: &str) -> String {
    let tail: String = db
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_') => c,
            _ => '_',
        })
        .collect();
    let mut s = format!("recman_{tail}");
    s.truncate(63);
    s
}

impl ArchivePush {
    pub fn options(&self) -> Result<recman_engine::PushOptions, OptionError> {
        let mut o = recman_engine::PushOptions::new(compression(&self.compress)?);
        o.batch = self.batch as usize;
        if let Some(p) = self.parallel {
            o.parallel = p as usize;
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::precedence::DeviceChoice;

    fn resolved(device_blksize: Option<&str>) -> ResolvedBackup {
        ResolvedBackup {
            filesperset: 64,
            maxopenfiles: 8,
            compression: Compression::None,
            section_size: Some(1 << 30),
            optimization: true,
            tuning: false,
            device: DeviceChoice {
                device: Some("sbt".into()),
                channels: 4,
                blksize: device_blksize.map(String::from),
            },
            table: Default::default(),
        }
    }

    #[test]
    fn backup_flags_over_resolved_settings() {
        let b = BackupDatabase {
            section_size: Some("256M".into()),
            force: true,
            ..Default::default()
        };
        let o = b.options(&resolved(Some("262144"))).unwrap();
        assert_eq!(o.section_size, Some(256 << 20));
        assert!(!o.optimization, "FORCE turns optimization off");
        assert_eq!((o.channels, o.io.blksize), (4, 262144));
        assert_eq!(o.device.as_deref(), Some("sbt"));
        let o = BackupDatabase::default().options(&resolved(None)).unwrap();
        assert_eq!((o.section_size, o.io.blksize), (Some(1 << 30), 1 << 20));
        assert!(o.optimization);
    }

    #[test]
    fn restore_target_and_map() {
        let mut r = RestoreDatabase::into(Some("rel/dir".into()));
        r.tablespace_map = vec!["/a=/b".into()];
        r.until_lsn = Some("0/3000000".into());
        let o = r
            .options(Path::new("/cwd"), "/bin/recman".into(), vec![])
            .unwrap();
        assert_eq!(o.to, Path::new("/cwd/rel/dir"));
        assert_eq!(
            o.tablespace_map,
            vec![("/a".to_string(), PathBuf::from("/b"))]
        );
        assert!(!matches!(o.target, RecoveryTarget::Latest));
        r.tablespace_map = vec!["nosign".into()];
        let e = r.options(Path::new("/"), "/x".into(), vec![]).unwrap_err();
        assert!(
            e.to_string().contains("OLD=NEW") && e.to_string().contains("hint:"),
            "{e}"
        );
    }
}
