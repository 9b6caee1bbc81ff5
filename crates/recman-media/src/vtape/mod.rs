//! The virtual tape library ("vtape"), recman's built-in SBT device.
//!
//! It is a model of a tape library, not a tape driver: objects are stored as real data in
//! cartridge files (`DIR/cartridges/C0001.tape`, ...), and a timing model (native rate,
//! hardware compression measured on the data itself, per-block overhead, load and position
//! times, streaming and shoe-shining, a drive buffer) decides how long each block takes. The
//! writer sleeps to follow the model clock, so wall time behaves like the modelled drives and
//! the seeds' tape findings can be reproduced without tape hardware (docs/vtape.md).
//!
//! Layout of a library directory:
//!
//! ```text
//! DIR/library.json          the VtapeConfig
//! DIR/index.json            objects -> extents on cartridges, cartridge fill; temp+fsync+rename
//! DIR/lock                  flock for index updates shared by processes
//! DIR/drives/D01.lock       flock held by whoever uses drive 1
//! DIR/cartridges/C0001.tape blocks of BLKSIZE bytes, append-only
//! ```

mod config;
mod drive;
mod library;
mod model;
mod reader;
mod writer;

pub use config::VtapeConfig;
pub use library::Extent;
pub use model::{DriveStats, MAX_COMPRESSION_RATIO, STREAM_SLACK, lz4_ratio};

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::disk::create_dir_all_durable;
use crate::error::MediaError;
use crate::media::{Capabilities, Media, MediaReader, MediaWriter, ObjectInfo, check_name};
use drive::Drives;
use library::Index;

/// A virtual tape library in a directory. Clones share drives, clocks and statistics.
#[derive(Clone, Debug)]
pub struct VtapeMedia {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    device: String,
    config: VtapeConfig,
    /// Time zero of the model clock.
    epoch: Instant,
    drives: Drives,
    /// Threads of this process take this before the flock on `lock`, which only separates
    /// open files, not threads sharing one.
    index_mutex: Mutex<()>,
    lock_file: File,
}

impl Inner {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    fn sleep_until(&self, t: Duration) {
        let now = self.now();
        if t > now {
            std::thread::sleep(t - now);
        }
    }

    fn err(&self, object: &str, op: &str, e: io::Error) -> MediaError {
        MediaError::io(&self.device, object, op, e)
    }
}

const LIBRARY_FILE: &str = "library.json";

impl VtapeMedia {
    /// Creates a library in `dir` (made if missing) with `config`, and opens it.
    pub fn create_library(dir: &Path, config: &VtapeConfig) -> Result<VtapeMedia, MediaError> {
        let device = format!("vtape {}", dir.display());
        config
            .check()
            .map_err(|m| config_error(&device, "create", &m))?;
        if dir.join(LIBRARY_FILE).exists() {
            return Err(MediaError::permanent(
                &device,
                "",
                &format!("a vtape library already exists in {}", dir.display()),
            )
            .with_op("create")
            .with_hint("open it instead, or choose an empty directory"));
        }
        let io_err = |op: &str, e| MediaError::io(&device, "", op, e);
        for sub in ["cartridges", "drives"] {
            create_dir_all_durable(&dir.join(sub)).map_err(|e| io_err("create directory", e))?;
        }
        let index = Index::empty(config.cartridges);
        library::write_json(&dir.join(library::INDEX_FILE), &index, false)
            .map_err(|e| io_err("write index", e))?;
        // library.json comes last: its presence marks a complete library.
        library::write_json(&dir.join(LIBRARY_FILE), config, true)
            .map_err(|e| io_err("write library.json", e))?;
        VtapeMedia::open(dir)
    }

    /// Opens the library in `dir`, reading its configuration from `library.json`.
    pub fn open(dir: &Path) -> Result<VtapeMedia, MediaError> {
        let dir = std::path::absolute(dir)
            .map_err(|e| MediaError::io(&format!("vtape {}", dir.display()), "", "resolve", e))?;
        let device = format!("vtape {}", dir.display());
        let io_err = |op: &str, e| MediaError::io(&device, "", op, e);
        let text = fs::read(dir.join(LIBRARY_FILE)).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => MediaError::permanent(
                &device,
                "",
                &format!(
                    "no vtape library in {} (library.json is missing)",
                    dir.display()
                ),
            )
            .with_op("open")
            .with_hint("create one first (vtape:DIR creates it when the directory has none)"),
            _ => io_err("read library.json", e),
        })?;
        let config: VtapeConfig = serde_json::from_slice(&text)
            .map_err(|e| config_error(&device, "open", &format!("library.json: {e}")))?;
        config
            .check()
            .map_err(|m| config_error(&device, "open", &m))?;
        // A library made with fewer drives gets the lock files of the new ones here.
        create_dir_all_durable(&dir.join("drives")).map_err(|e| io_err("create directory", e))?;
        let drives =
            Drives::open(&dir, config.drives).map_err(|e| io_err("open drive locks", e))?;
        let lock_file =
            crate::modes::open_private(&dir.join("lock"), crate::modes::PRIVATE_MODE, false)
                .map_err(|e| io_err("open lock", e))?;
        Ok(VtapeMedia {
            inner: Arc::new(Inner {
                dir,
                device,
                config,
                epoch: Instant::now(),
                drives,
                index_mutex: Mutex::new(()),
                lock_file,
            }),
        })
    }

    pub fn config(&self) -> &VtapeConfig {
        &self.inner.config
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The model clock: time since this library was opened.
    pub fn clock(&self) -> Duration {
        self.inner.now()
    }

    /// Per-drive counters of this handle (and its clones), drive 1 first.
    pub fn drive_stats(&self) -> Vec<DriveStats> {
        self.inner.drives.stats()
    }

    /// Where a committed object lies on tape, in order; None when it does not exist.
    pub fn extents(&self, name: &str) -> Result<Option<Vec<Extent>>, MediaError> {
        check_name(&self.inner.device, name)?;
        let index = Index::load(&self.inner)?;
        Ok(index.objects.get(name).map(|o| o.extents.clone()))
    }

    /// The file that holds cartridge `number` (1-based).
    pub fn cartridge_path(&self, number: u32) -> PathBuf {
        library::cartridge_path(&self.inner.dir, number)
    }
}

fn config_error(device: &str, op: &str, message: &str) -> MediaError {
    MediaError::permanent(
        device,
        "",
        &format!("invalid vtape configuration: {message}"),
    )
    .with_op(op)
    .with_hint("fix the setting in library.json (durations are in seconds)")
}

impl Media for VtapeMedia {
    fn describe(&self) -> String {
        self.inner.device.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            atomic_commit: true,
            ranged_read: false,
            list: true,
            block_size: self.inner.config.block_size,
        }
    }

    fn create(&self, name: &str) -> Result<Box<dyn MediaWriter>, MediaError> {
        check_name(&self.inner.device, name)?;
        Ok(Box::new(writer::VtapeWriter::start(
            self.inner.clone(),
            name,
        )?))
    }

    fn open(&self, name: &str) -> Result<Box<dyn MediaReader>, MediaError> {
        check_name(&self.inner.device, name)?;
        let mut index = Index::load(&self.inner)?;
        let entry = index
            .objects
            .remove(name)
            .ok_or_else(|| MediaError::not_found(&self.inner.device, name))?;
        Ok(Box::new(reader::VtapeReader::new(
            self.inner.clone(),
            name,
            entry,
        )))
    }

    fn stat(&self, name: &str) -> Result<Option<u64>, MediaError> {
        check_name(&self.inner.device, name)?;
        Ok(Index::load(&self.inner)?.objects.get(name).map(|o| o.size))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, MediaError> {
        let index = Index::load(&self.inner)?;
        Ok(index
            .objects
            .range(prefix.to_string()..)
            .take_while(|(name, _)| name.starts_with(prefix))
            .map(|(name, o)| ObjectInfo {
                name: name.clone(),
                size: o.size,
            })
            .collect())
    }

    fn remove(&self, name: &str) -> Result<bool, MediaError> {
        check_name(&self.inner.device, name)?;
        library::remove(&self.inner, name)
    }
}
