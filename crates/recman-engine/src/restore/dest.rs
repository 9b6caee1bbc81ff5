//! Where a restore writes: the restore's one seam to the file system that receives the
//! restored cluster. [`LocalDest`] is this host's file system (the behaviour recman always
//! had); a remote destination (`dest_remote.rs`) sends the same operations to the database
//! host's agent, which runs them on its [`LocalDest`] after checking every path
//! (`dest_serve.rs`).
//!
//! Contract: paths are absolute paths on the destination host, already confined by the
//! caller (`confine.rs`); a remote destination confines them again on the far side. Every
//! operation either succeeds whole or returns an error naming the path; `write_whole` and
//! `set_len` make what they wrote durable, file writes become durable at the file's `sync`
//! once `flush` has returned (a remote destination pipelines writes and syncs until then).

pub use super::outfile::WriteMode;
pub use super::writes::WritePlan;
use crate::adapt::Adaptive;
use crate::aligned::AlignedBuf;
use crate::error::EngineError;
use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a restore target directory holds before the restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DirState {
    Missing,
    Empty,
    /// Not empty, and the restore marker is there: an interrupted restore wrote it.
    Marked,
    Occupied,
}

/// One [`Destination::set_meta`] of a batch.
#[derive(Clone, Debug)]
pub struct MetaChange {
    pub path: PathBuf,
    pub owner: Option<(u32, u32)>,
    pub mode: Option<u32>,
    pub link: bool,
}

/// One restored file open for writing.
pub trait DestFile: Send + Sync {
    /// Writes `data` at `offset`; `bounce` is the writer's aligned buffer, made on first use.
    fn write_at(
        &self,
        data: &[u8],
        offset: u64,
        bounce: &mut Option<AlignedBuf>,
    ) -> Result<(), EngineError>;
    /// Makes everything written to the file durable.
    fn sync(&self) -> Result<(), EngineError>;
}

/// The file system a restore writes into.
pub trait Destination: Send + Sync {
    /// Names the destination in messages: empty for this host, " on <agent>" otherwise.
    fn place(&self) -> String;
    /// Whether `dir` exists and what it holds; `marker` is the restore marker's file name.
    fn dir_state(&self, dir: &Path, marker: &str) -> Result<DirState, EngineError>;
    /// Removes everything inside `dir`, keeping `dir`; links are removed, never followed.
    fn empty_dir(&self, dir: &Path) -> Result<(), EngineError>;
    /// Creates `dir` and missing parents; with `mode`, gives `dir` (and new parents) that mode.
    fn create_dir_all(&self, dir: &Path, mode: Option<u32>) -> Result<(), EngineError>;
    /// Creates or replaces the small file `path` with `data`, durably.
    fn write_whole(&self, path: &Path, data: &[u8]) -> Result<(), EngineError>;
    /// The content of `path`, None when it does not exist.
    fn read_whole(&self, path: &Path) -> Result<Option<Vec<u8>>, EngineError>;
    fn remove_file(&self, path: &Path) -> Result<(), EngineError>;
    /// Opens `path` for writing, creating it (mode 0600) when missing, never truncating.
    fn open(&self, path: &Path) -> Result<Arc<dyn DestFile>, EngineError>;
    /// Creates `path` when missing and sets its length, durably.
    fn set_len(&self, path: &Path, len: u64) -> Result<(), EngineError>;
    fn symlink(&self, target: &Path, path: &Path) -> Result<(), EngineError>;
    /// Sets `path`'s mode and, with `owner`, its owner; `link` changes a symbolic link's
    /// owner only.
    fn set_meta(
        &self,
        path: &Path,
        owner: Option<(u32, u32)>,
        mode: Option<u32>,
        link: bool,
    ) -> Result<(), EngineError>;
    /// Waits for every file write and sync handed over (a remote destination keeps them in
    /// flight); the first failure among them. The restore calls it after its last write.
    fn flush(&self) -> Result<(), EngineError> {
        Ok(())
    }
    /// [`Destination::set_len`] for each of `files`, in order; a remote destination sends
    /// them in a few calls rather than one per file.
    fn set_len_all(&self, files: &[(PathBuf, u64)]) -> Result<(), EngineError> {
        files.iter().try_for_each(|(p, len)| self.set_len(p, *len))
    }
    /// [`Destination::set_meta`] for each of `items`, in order (a remote destination sends
    /// them in a few calls).
    fn set_meta_all(&self, items: &[MetaChange]) -> Result<(), EngineError> {
        items
            .iter()
            .try_for_each(|m| self.set_meta(&m.path, m.owner, m.mode, m.link))
    }
    /// Decides how the files of a restore of `bytes` into `dir` (created already) over
    /// `channels` channels are written: the way `asked`, or chosen while the restore writes
    /// ([`super::writes`]); None where the destination decides that itself (an agent's
    /// pipelined writes).
    fn plan_writes(
        &self,
        _dir: &Path,
        _bytes: u64,
        _channels: u32,
        _asked: Option<WriteMode>,
    ) -> Result<Option<WritePlan>, EngineError> {
        Ok(None)
    }
    /// The owner of `path`, None when it cannot be read.
    fn owner_of(&self, path: &Path) -> Option<(u32, u32)>;
    /// Whether the destination may give files away (it runs as root).
    fn may_chown(&self) -> bool;
}

/// This host's file system. Made [`LocalDest::immediate`], each file's sync runs when asked
/// (an agent serving one request at a time); made [`LocalDest::for_restore`], the syncs of a
/// restore's files are collected and run at [`Destination::flush`], many at once: a file system
/// commits concurrent fsyncs together, where one at a time each waits for its own journal
/// commit and device flush (a cluster has about a thousand files, most of them small).
#[derive(Debug)]
pub struct LocalDest {
    /// Set once by [`Destination::plan_writes`], before the first file is opened: the way
    /// every write goes, and the chooser when the way is chosen while the restore writes.
    mode: Mutex<(WriteMode, Option<Arc<Adaptive>>)>,
    /// None: syncs are immediate.
    later: Option<Arc<SyncList>>,
}

/// Files written and waiting for their sync, and those already synced by a flush.
#[derive(Debug, Default)]
struct SyncList {
    waiting: Mutex<Vec<(PathBuf, File)>>,
    synced: Mutex<HashSet<PathBuf>>,
}

impl SyncList {
    /// Syncs `files` together and counts them as synced, as the flush does.
    fn sync_now(&self, files: Vec<(PathBuf, File)>) -> Result<(), EngineError> {
        let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
        sync_many(files)?;
        self.synced.lock().expect("not poisoned").extend(paths);
        Ok(())
    }
}

impl LocalDest {
    pub fn immediate() -> LocalDest {
        LocalDest {
            mode: Mutex::new((WriteMode::Direct, None)),
            later: None,
        }
    }

    pub fn for_restore(mode: WriteMode) -> LocalDest {
        LocalDest {
            mode: Mutex::new((mode, None)),
            later: Some(Arc::default()),
        }
    }
}

/// The local destination of a restore, writing the way `mode` says, shared.
pub fn local(mode: WriteMode) -> Arc<dyn Destination> {
    Arc::new(LocalDest::for_restore(mode))
}

/// Files fsynced at once at most: enough for the file system to commit many together.
const SYNCS_AT_ONCE: usize = 16;

/// Files that wait for their sync, each holding its descriptor, before they are synced
/// together there and then. A cluster may hold a hundred thousand relation files, and a
/// process's descriptors are often limited to 1,024 (the usual soft limit of a login), so
/// waiting for the flush at the end with every one open runs out of them.
const WAITING_AT_MOST: usize = 256;

/// Syncs every file of `files`, several at once; the first failure, naming its file.
fn sync_many(files: Vec<(PathBuf, File)>) -> Result<(), EngineError> {
    if files.is_empty() {
        return Ok(());
    }
    let next = AtomicUsize::new(0);
    let first: Mutex<Option<EngineError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..SYNCS_AT_ONCE.min(files.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((p, f)) = files.get(i) else { break };
                    if let Err(e) = f.sync_all() {
                        first
                            .lock()
                            .expect("not poisoned")
                            .get_or_insert(EngineError::io("sync", p, e));
                        break;
                    }
                }
            });
        }
    });
    match first.into_inner().expect("not poisoned") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A restored file on this host, its sync run at once or collected for the flush.
struct LocalFile {
    out: super::outfile::OutFile,
    later: Option<Arc<SyncList>>,
    adapt: Option<Arc<Adaptive>>,
}

impl DestFile for LocalFile {
    fn write_at(
        &self,
        data: &[u8],
        offset: u64,
        bounce: &mut Option<AlignedBuf>,
    ) -> Result<(), EngineError> {
        let Some(a) = &self.adapt else {
            return self.out.write_at(data, offset, bounce);
        };
        let way = a.phase();
        let went = self.out.write_way(data, offset, bounce, way)?;
        // A write that could not go the way asked (a file's odd tail) says nothing of it.
        if went == way {
            a.count(way, data.len() as u64);
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), EngineError> {
        match &self.later {
            None => self.out.sync(),
            Some(l) => {
                let h = self.out.handle()?;
                let full = {
                    let mut waiting = l.waiting.lock().expect("not poisoned");
                    waiting.push((self.out.path.clone(), h));
                    match waiting.len() >= WAITING_AT_MOST {
                        true => std::mem::take(&mut *waiting),
                        false => Vec::new(),
                    }
                };
                l.sync_now(full)
            }
        }
    }
}

impl Destination for LocalDest {
    fn place(&self) -> String {
        String::new()
    }

    fn dir_state(&self, dir: &Path, marker: &str) -> Result<DirState, EngineError> {
        Ok(if !dir.exists() {
            DirState::Missing
        } else if super::is_empty_dir(dir) {
            DirState::Empty
        } else if dir.join(marker).is_file() {
            DirState::Marked
        } else {
            DirState::Occupied
        })
    }

    fn empty_dir(&self, d: &Path) -> Result<(), EngineError> {
        let rd = std::fs::read_dir(d).map_err(|e| EngineError::io("read directory", d, e))?;
        for e in rd {
            let path = e
                .map_err(|e| EngineError::io("read directory", d, e))?
                .path();
            let r = if path.is_dir() && !path.is_symlink() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            r.map_err(|e| EngineError::io("remove", &path, e))?;
        }
        Ok(())
    }

    fn create_dir_all(&self, d: &Path, mode: Option<u32>) -> Result<(), EngineError> {
        match mode {
            None => std::fs::create_dir_all(d),
            Some(m) => std::fs::DirBuilder::new()
                .recursive(true)
                .mode(m)
                .create(d)
                .and_then(|()| std::fs::set_permissions(d, std::fs::Permissions::from_mode(m))),
        }
        .map_err(|e| EngineError::io("create directory", d, e))
    }

    fn write_whole(&self, p: &Path, data: &[u8]) -> Result<(), EngineError> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(p)
            .map_err(|e| EngineError::io("write", p, e))?;
        f.write_all(data)
            .and_then(|_| f.sync_all())
            .map_err(|e| EngineError::io("write", p, e))
    }

    fn read_whole(&self, p: &Path) -> Result<Option<Vec<u8>>, EngineError> {
        match std::fs::read(p) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(EngineError::io("read", p, e)),
        }
    }

    fn remove_file(&self, p: &Path) -> Result<(), EngineError> {
        std::fs::remove_file(p).map_err(|e| EngineError::io("remove", p, e))
    }

    fn open(&self, p: &Path) -> Result<Arc<dyn DestFile>, EngineError> {
        let (mode, adapt) = self.mode.lock().expect("not poisoned").clone();
        let out = super::outfile::OutFile::open(p.to_path_buf(), mode == WriteMode::Direct)?;
        Ok(Arc::new(LocalFile {
            out,
            later: self.later.clone(),
            adapt,
        }))
    }

    fn set_len(&self, p: &Path, len: u64) -> Result<(), EngineError> {
        let f = open_to_size(p)?;
        f.set_len(len)
            .and_then(|_| f.sync_all())
            .map_err(|er| EngineError::io("set length of", p, er))
    }

    fn symlink(&self, target: &Path, p: &Path) -> Result<(), EngineError> {
        std::os::unix::fs::symlink(target, p).map_err(|er| EngineError::io("create symlink", p, er))
    }

    fn set_meta(
        &self,
        p: &Path,
        owner: Option<(u32, u32)>,
        mode: Option<u32>,
        link: bool,
    ) -> Result<(), EngineError> {
        if let Some((u, g)) = owner {
            let r = if link {
                std::os::unix::fs::lchown(p, Some(u), Some(g))
            } else {
                std::os::unix::fs::chown(p, Some(u), Some(g))
            };
            r.map_err(|er| EngineError::io("set owner of", p, er))?;
        }
        // A link has no mode of its own, and chmod would follow it to its target.
        if let Some(m) = mode.filter(|_| !link) {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m))
                .map_err(|er| EngineError::io("set mode of", p, er))?;
        }
        Ok(())
    }

    fn plan_writes(
        &self,
        dir: &Path,
        bytes: u64,
        _channels: u32,
        asked: Option<WriteMode>,
    ) -> Result<Option<WritePlan>, EngineError> {
        let plan = match asked {
            Some(m) => WritePlan::chosen(m),
            None => super::writes::choose(dir, bytes)?,
        };
        *self.mode.lock().expect("not poisoned") = (plan.mode, plan.adapt.clone());
        Ok(Some(plan))
    }

    fn flush(&self) -> Result<(), EngineError> {
        let Some(l) = &self.later else {
            return Ok(());
        };
        let files = std::mem::take(&mut *l.waiting.lock().expect("not poisoned"));
        l.sync_now(files)
    }

    fn set_len_all(&self, files: &[(PathBuf, u64)]) -> Result<(), EngineError> {
        let Some(l) = &self.later else {
            return files.iter().try_for_each(|(p, len)| self.set_len(p, *len));
        };
        // A file a flush synced at the length it keeps needs no second sync; every other one
        // is sized and then synced with the rest, at once.
        let mut to_sync = Vec::new();
        {
            let synced = l.synced.lock().expect("not poisoned");
            for (p, len) in files {
                let f = open_to_size(p)?;
                let now = f
                    .metadata()
                    .map_err(|er| EngineError::io("read", p, er))?
                    .len();
                if now != *len {
                    f.set_len(*len)
                        .map_err(|er| EngineError::io("set length of", p, er))?;
                } else if synced.contains(p) {
                    continue;
                }
                to_sync.push((p.clone(), f));
                if to_sync.len() >= WAITING_AT_MOST {
                    sync_many(std::mem::take(&mut to_sync))?;
                }
            }
        }
        sync_many(to_sync)
    }

    fn owner_of(&self, p: &Path) -> Option<(u32, u32)> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).ok().map(|m| (m.uid(), m.gid()))
    }

    fn may_chown(&self) -> bool {
        // Only root may give files away; /proc/self is owned by the process's effective
        // user, which tells it without calling into libc.
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self")
            .map(|m| m.uid() == 0)
            .unwrap_or(false)
    }
}

/// Removes what a failed restore wrote inside each of `dirs`, keeping the directories
/// (the user may have made them beforehand); false when some could not be cleared (a
/// database host's agent that is gone).
pub(crate) fn clear_all(dest: &dyn Destination, dirs: &[PathBuf]) -> bool {
    let mut all = true;
    for d in dirs.iter().rev() {
        all &= match dest.dir_state(d, "") {
            Ok(DirState::Missing) => true,
            Ok(_) => dest.empty_dir(d).is_ok(),
            Err(_) => false,
        };
    }
    all
}

/// Opens (creating it, private, when missing) restored file `p` to give it its final length.
fn open_to_size(p: &Path) -> Result<std::fs::File, EngineError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(p)
        .map_err(|er| EngineError::io("create", p, er))
}
