//! The library's persistent state: the object index and the cartridges' fill.
//!
//! The index is the only place an object becomes visible, so committing one is a single
//! atomic replacement of `index.json`, made under the index lock after the data is on disk.
//! Tape is append-only: aborted writes leave dead space on their cartridge, which counts
//! against its capacity until the cartridge holds no live object and returns to scratch.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

use serde::{Deserialize, Serialize};

use super::Inner;
use crate::disk::AtomicFile;
use crate::error::{ErrorClass, MediaError};

pub(super) const INDEX_FILE: &str = "index.json";

/// A run of one object's blocks on one cartridge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extent {
    /// Cartridge number (1-based; file `cartridges/C0001.tape`).
    pub cartridge: u32,
    /// Offset of the first block in the cartridge file.
    pub offset: u64,
    /// Object bytes in this extent (the last block's padding excluded).
    pub len: u64,
    /// Bytes these blocks took on tape, after hardware compression.
    pub tape_len: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct ObjectEntry {
    pub size: u64,
    pub crc32c: u32,
    pub extents: Vec<Extent>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct CartRecord {
    /// Append point in the cartridge file.
    pub end: u64,
    /// Native capacity used, dead space included.
    pub tape_used: u64,
    /// A block did not fit: nothing more is appended until it returns to scratch.
    pub full: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Index {
    pub objects: BTreeMap<String, ObjectEntry>,
    /// Cartridge n is `cartridges[n - 1]`.
    pub cartridges: Vec<CartRecord>,
}

pub(super) fn cartridge_path(dir: &Path, number: u32) -> PathBuf {
    dir.join("cartridges").join(format!("C{number:04}.tape"))
}

/// Writes `value` as JSON by temp + fsync + rename + directory fsync.
pub(super) fn write_json<T: Serialize>(path: &Path, value: &T, pretty: bool) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    let text = if pretty {
        serde_json::to_vec_pretty(value)
    } else {
        serde_json::to_vec(value)
    }
    .map_err(io::Error::other)?;
    file.write_all(&text)?;
    file.commit().map(|_| ()).map_err(|(_, e)| e)
}

impl Index {
    pub fn empty(cartridges: usize) -> Index {
        Index {
            objects: BTreeMap::new(),
            cartridges: vec![CartRecord::default(); cartridges],
        }
    }

    /// Reads the committed index. Renames are atomic, so no lock is needed to read.
    pub fn load(inner: &Inner) -> Result<Index, MediaError> {
        let path = inner.dir.join(INDEX_FILE);
        let text = fs::read(&path).map_err(|e| inner.err("", "read index", e))?;
        let mut index: Index = serde_json::from_slice(&text).map_err(|e| {
            MediaError::permanent(
                &inner.device,
                "",
                &format!("damaged {}: {e}", path.display()),
            )
            .with_op("read index")
            .with_hint("restore index.json from a copy; the cartridges still hold the data")
        })?;
        // library.json may list more cartridges than when the index was written.
        if index.cartridges.len() < inner.config.cartridges {
            index
                .cartridges
                .resize(inner.config.cartridges, CartRecord::default());
        }
        Ok(index)
    }

    pub fn save(&self, inner: &Inner) -> Result<(), MediaError> {
        write_json(&inner.dir.join(INDEX_FILE), self, false)
            .map_err(|e| inner.err("", "write index", e))
    }

    /// Cartridges that hold part of a committed object.
    fn live(&self) -> BTreeSet<u32> {
        self.objects
            .values()
            .flat_map(|o| o.extents.iter().map(|e| e.cartridge))
            .collect()
    }
}

/// The right to change the index: the process mutex for threads, the flock for processes.
pub(super) struct IndexLock<'a> {
    _threads: MutexGuard<'a, ()>,
    file: &'a File,
}

pub(super) fn lock_index(inner: &Inner) -> Result<IndexLock<'_>, MediaError> {
    let threads = inner.index_mutex.lock().unwrap_or_else(|e| e.into_inner());
    inner
        .lock_file
        .lock()
        .map_err(|e| inner.err("", "lock index", e))?;
    Ok(IndexLock {
        _threads: threads,
        file: &inner.lock_file,
    })
}

impl Drop for IndexLock<'_> {
    fn drop(&mut self) {
        // Closing the library drops the flock as well; nothing better to do on failure.
        let _ = self.file.unlock();
    }
}

/// A cartridge one writer appends to. The flock on its file keeps other writers, of this
/// process or another, off it until the writer commits or gives up.
#[derive(Debug)]
pub(super) struct Reserved {
    pub number: u32,
    pub file: File,
    pub rec: CartRecord,
}

/// Picks a cartridge to append to, under the index lock: `prefer` (the one already in the
/// drive) when it has room, then partly written ones, then scratch ones, rewound to the start.
/// None when every cartridge is full or being written.
pub(super) fn reserve(
    inner: &Inner,
    index: &Index,
    object: &str,
    prefer: Option<u32>,
) -> Result<Option<Reserved>, MediaError> {
    let live = index.live();
    let all = 1..=index.cartridges.len() as u32;
    let mut order: Vec<u32> = prefer.into_iter().collect();
    order.extend(
        all.clone()
            .filter(|c| live.contains(c) && Some(*c) != prefer),
    );
    order.extend(all.filter(|c| !live.contains(c) && Some(*c) != prefer));
    let capacity = inner.config.cartridge_capacity;
    for number in order {
        let scratch = !live.contains(&number);
        let mut rec = index.cartridges[number as usize - 1].clone();
        if !scratch && (rec.full || rec.tape_used >= capacity) {
            continue;
        }
        let path = cartridge_path(&inner.dir, number);
        let file = crate::modes::open_private(&path, crate::modes::FILE_MODE, true)
            .map_err(|e| inner.err(object, "open cartridge", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => continue,
            Err(TryLockError::Error(e)) => return Err(inner.err(object, "lock cartridge", e)),
        }
        if scratch {
            file.set_len(0)
                .map_err(|e| inner.err(object, "rewrite scratch cartridge", e))?;
            rec = CartRecord::default();
        } else {
            // Blocks past the recorded end were written by a writer that never committed;
            // they are dead space, counted at their uncompressed size.
            let len = file
                .metadata()
                .map_err(|e| inner.err(object, "stat cartridge", e))?
                .len();
            if len > rec.end {
                rec.tape_used += len - rec.end;
                rec.end = len;
            }
            if rec.tape_used >= capacity {
                continue;
            }
        }
        return Ok(Some(Reserved { number, file, rec }));
    }
    Ok(None)
}

pub(super) fn library_full(inner: &Inner, object: &str, op: &str) -> MediaError {
    MediaError::new(
        ErrorClass::Permanent,
        &inner.device,
        object,
        op,
        format!(
            "no scratch cartridge left in vtape library {}",
            inner.dir.display()
        ),
    )
    .with_hint("add cartridges (cartridges in library.json) or remove old backups")
}

/// Returns to scratch those of `cartridges` that no longer hold a live object, unless a
/// writer is appending to one. Under the index lock; the caller saves the index.
pub(super) fn recycle(inner: &Inner, index: &mut Index, cartridges: &[u32]) {
    let live = index.live();
    for &number in cartridges {
        if live.contains(&number) {
            continue;
        }
        let Ok(file) = OpenOptions::new()
            .write(true)
            .open(cartridge_path(&inner.dir, number))
        else {
            continue;
        };
        // A busy or failing cartridge is simply recycled later, when a writer picks it.
        if file.try_lock().is_ok() && file.set_len(0).is_ok() {
            index.cartridges[number as usize - 1] = CartRecord::default();
        }
    }
}

/// Publishes `entry` as `name`, replacing any older object of that name.
pub(super) fn commit(
    inner: &Inner,
    name: &str,
    entry: ObjectEntry,
    written: &[Reserved],
) -> Result<(), MediaError> {
    let _lock = lock_index(inner)?;
    let mut index = Index::load(inner)?;
    for r in written {
        index.cartridges[r.number as usize - 1] = r.rec.clone();
    }
    if let Some(old) = index.objects.insert(name.to_string(), entry) {
        let carts: Vec<u32> = old.extents.iter().map(|e| e.cartridge).collect();
        recycle(inner, &mut index, &carts);
    }
    index.save(inner)
}

pub(super) fn remove(inner: &Inner, name: &str) -> Result<bool, MediaError> {
    let _lock = lock_index(inner)?;
    let mut index = Index::load(inner)?;
    let Some(old) = index.objects.remove(name) else {
        return Ok(false);
    };
    let carts: Vec<u32> = old.extents.iter().map(|e| e.cartridge).collect();
    recycle(inner, &mut index, &carts);
    index.save(inner).map_err(|e| e.with_op("remove"))?;
    Ok(true)
}
