//! The contract every driver keeps: [`Media`] with its writers and readers, what a driver can
//! do ([`Capabilities`]), Object Lock where a store has it, and the rules for object names.

use std::fmt::Debug;
use std::io::{Read, Seek, Write};

use crate::error::MediaError;
use crate::retention::Retention;

/// What a driver can do, so callers choose how to use it rather than probing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// A committed object appears whole or not at all, even after a crash.
    pub atomic_commit: bool,
    /// Seeking a reader is cheap (a ranged read), not a repositioning of the medium.
    pub ranged_read: bool,
    /// Objects can be listed by prefix.
    pub list: bool,
    /// Physical block size in bytes: writes reach the medium in blocks of this size
    /// (0: no block structure).
    pub block_size: usize,
}

impl Capabilities {
    /// A file system or an object store: atomic commits, cheap ranged reads, listing, no
    /// block structure.
    pub const RANDOM_ACCESS: Capabilities = Capabilities {
        atomic_commit: true,
        ranged_read: true,
        list: true,
        block_size: 0,
    };
}

/// One stored object as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// The name given to [`Media::create`].
    pub name: String,
    pub size: u64,
}

/// S3 Object Lock, which an immutable repository puts on every object it writes
/// (docs/immutable.md). Only the S3 driver has it.
pub trait ObjectLock {
    /// Whether the bucket was made with Object Lock enabled.
    fn bucket_lock_enabled(&self) -> Result<bool, MediaError>;
    /// Every object written from now on carries `r` (None: plain objects). An existing object
    /// is then never overwritten, and removing one removes all its versions, once no
    /// retention holds any of them.
    fn lock_writes(&self, r: Option<Retention>);
    /// The retention of object `name` (its current version); None when it has none or is gone.
    fn retention(&self, name: &str) -> Result<Option<Retention>, MediaError>;
    /// Extends the retention of object `name` to `r`; a longer one is left as it is.
    fn extend(&self, name: &str, r: Retention) -> Result<(), MediaError>;
}

/// A store of named, immutable objects.
///
/// Contract, checked by [`conformance::run`] for every driver:
/// - names are relative, '/'-separated, without empty, "." or ".." components; a driver
///   refuses anything else with a permanent error;
/// - [`Media::create`] starts a streaming write that nobody sees until
///   [`MediaWriter::commit`] returns Ok; dropping the writer, or [`MediaWriter::abort`],
///   leaves no object and no visible debris; committing over an existing name replaces it;
/// - [`Media::open`] of a missing object fails with [`ErrorClass::NotFound`];
/// - a reader returns exactly the committed bytes, and after any seek the bytes at that
///   offset; [`MediaReader::len`] is the committed size;
/// - [`Media::list`] returns every committed object whose name starts with `prefix`, sorted
///   by name, and no uncommitted one;
/// - [`Media::remove`] of a missing object is not an error (returns false);
/// - errors carry a class: transient ones were already retried by the driver as far as its
///   policy allows, so callers do not retry them again.
///
/// Drivers are shared between channel threads, so every method takes `&self`.
pub trait Media: Send + Sync + Debug {
    /// A description for messages and the catalog ("disk /srv/repo", "s3://bucket/prefix"),
    /// never containing a secret.
    fn describe(&self) -> String;

    fn capabilities(&self) -> Capabilities;

    /// Starts writing `name`.
    fn create(&self, name: &str) -> Result<Box<dyn MediaWriter>, MediaError>;

    /// Opens `name` for reading.
    fn open(&self, name: &str) -> Result<Box<dyn MediaReader>, MediaError>;

    /// The size of `name`, or None when it does not exist.
    fn stat(&self, name: &str) -> Result<Option<u64>, MediaError>;

    /// Committed objects under `prefix` (a plain string prefix, not a directory), by name.
    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, MediaError>;

    /// Removes `name`; Ok(false) when there was nothing to remove.
    fn remove(&self, name: &str) -> Result<bool, MediaError>;

    /// The driver's Object Lock, when it has one.
    fn object_lock(&self) -> Option<&dyn ObjectLock> {
        None
    }

    /// Reads a whole (small) object.
    fn get(&self, name: &str) -> Result<Vec<u8>, MediaError> {
        let mut r = self.open(name)?;
        let mut out = Vec::with_capacity(r.len() as usize);
        r.read_to_end(&mut out)
            .map_err(|e| MediaError::io(&self.describe(), name, "read", e))?;
        Ok(out)
    }

    /// Writes a whole (small) object atomically.
    fn put(&self, name: &str, data: &[u8]) -> Result<(), MediaError> {
        let mut w = self.create(name)?;
        w.write_all(data)
            .map_err(|e| MediaError::io(&self.describe(), name, "write", e))?;
        w.commit().map(|_| ())
    }
}

/// A write in progress. `std::io::Write` errors carry a [`MediaError`] inside when the driver
/// has one (see [`MediaError::from_io`]).
pub trait MediaWriter: Write + Send {
    /// Makes the object visible and durable; returns its size.
    fn commit(self: Box<Self>) -> Result<u64, MediaError>;

    /// Discards the write. Dropping the writer does the same.
    fn abort(self: Box<Self>);
}

/// A committed object being read.
pub trait MediaReader: Read + Seek + Send {
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Checks an object name against the contract's rules.
pub fn check_name(device: &str, name: &str) -> Result<(), MediaError> {
    let ok = !name.is_empty()
        && !name.starts_with('/')
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'));
    if ok {
        Ok(())
    } else {
        Err(MediaError::permanent(
            device,
            name,
            "invalid object name: it must be relative, '/'-separated, without empty, '.' or '..' parts",
        ))
    }
}
