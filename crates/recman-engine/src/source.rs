//! Where a backup reads the cluster's files: the data directory on this host ([`LocalSource`])
//! or a database host's agent over the fleet transport ([`remote::RemoteSource`]). The
//! channels, the tracked reads, backup optimization and the tracking's WAL reads all go
//! through one [`DataSource`], so nothing else knows which it is. The local source opens
//! files exactly as before (O_DIRECT where allowed) and the I/O engines read them as before;
//! a remote file is read by the helper-thread engine, each request one call to the agent,
//! many in flight at once on one HTTP/2 connection.

pub mod agent;
pub mod agent_pg;
pub mod remote;
pub mod remote_pg;

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::EngineError;
pub use crate::read_at::ReadAt;
use crate::read_mode::ReadMode;
use crate::scan::Scan;

/// An open file of a source.
#[derive(Clone)]
pub enum SourceFile {
    Local(Arc<File>),
    /// A file read through an agent, and its size when it was opened.
    Remote(Arc<dyn ReadAt + Send + Sync>, u64),
}

impl SourceFile {
    /// The local file, for engines that hand its descriptor to the kernel (io_uring).
    pub fn local(&self) -> Option<&Arc<File>> {
        match self {
            SourceFile::Local(f) => Some(f),
            SourceFile::Remote(..) => None,
        }
    }

    /// The file's size now (local), or when it was opened (remote).
    pub fn size(&self) -> io::Result<u64> {
        match self {
            SourceFile::Local(f) => f.metadata().map(|m| m.len()),
            SourceFile::Remote(_, size) => Ok(*size),
        }
    }
}

impl ReadAt for SourceFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        match self {
            SourceFile::Local(f) => FileExt::read_at(f.as_ref(), buf, off),
            SourceFile::Remote(r, _) => r.read_at(buf, off),
        }
    }
}

/// A cluster's data directory as a backup reads it.
pub trait DataSource: Send + Sync {
    /// For messages: the directory, or the agent's URL and its directory.
    fn describe(&self) -> String;
    /// The path a file of the backup's namespace (`rel`) is opened by and named by in
    /// messages.
    fn path_of(&self, rel: &str) -> PathBuf;
    /// Every file and directory an online backup copies (see [`crate::scan::scan_data_dir`]).
    fn scan(&self) -> Result<Scan, EngineError>;
    /// PG_VERSION and pg_control, read where the directory is.
    fn facts(&self) -> Result<recman_pg::DataDirFacts, EngineError>;
    /// The directory with symlinks resolved, to compare with the server's data_directory.
    fn canonical(&self) -> Option<PathBuf>;
    /// Opens `path` (from [`DataSource::path_of`]) to read `range` of it as `reads` says: a
    /// local source opens it with O_DIRECT when asked, or for [`ReadMode::Auto`] when less
    /// than half of the range is in the page cache, and its file system takes it (the bool
    /// says whether it did). NotFound when the file is gone.
    fn open(
        &self,
        path: &Path,
        reads: ReadMode,
        range: (u64, u64),
    ) -> io::Result<(SourceFile, bool)>;
    /// A small file whole (a timeline history, a WAL segment); None when it does not exist.
    fn read_small(&self, rel: &str) -> Result<Option<Vec<u8>>, EngineError>;
    /// The local directory, when the source is one (the tuner groups sets by device).
    fn local_root(&self) -> Option<&Path>;
    /// The agent's URL, when the files are read through one: the INPUT statistics rows of
    /// its files name it (as their device).
    fn agent_url(&self) -> Option<String> {
        None
    }
    /// A server session held by the agent the files are read through (None for a local
    /// source): the backup host then never connects to PostgreSQL itself.
    fn agent_session(&self) -> Option<Result<recman_pg::Session, EngineError>> {
        None
    }
}

/// The data directory on this host.
pub struct LocalSource {
    pub root: PathBuf,
}

impl LocalSource {
    pub fn new(root: &Path) -> LocalSource {
        LocalSource {
            root: root.to_path_buf(),
        }
    }
}

/// A whole file, as the range to [`DataSource::open`].
pub const WHOLE: (u64, u64) = (0, u64::MAX);

/// Opens a file on this host to read `range` of it as `reads` says (see
/// [`DataSource::open`]): opened once, its page-cache residency asked of that descriptor, and
/// O_DIRECT then set on it where wanted. tmpfs and some others refuse O_DIRECT with EINVAL;
/// those are read through the page cache.
pub(crate) fn open_local(
    path: &Path,
    reads: ReadMode,
    (start, end): (u64, u64),
) -> io::Result<(File, bool)> {
    let f = File::open(path)?;
    let direct = match reads {
        ReadMode::Buffered => false,
        ReadMode::Direct => true,
        ReadMode::Auto => !crate::residency::mostly_cached(&f, start, end),
    };
    let direct = direct && set_direct(&f, true)?;
    Ok((f, direct))
}

/// Adds O_DIRECT to an open file's status flags (`on`), or takes it away; false where its file
/// system refuses it. The reader of a backup switches a file between direct and buffered reads
/// while it reads it: a request in flight at the switch may go either way, which is safe
/// because both read the same bytes and every request the reader makes is already aligned as a
/// direct read needs (whole buffers from an aligned start, into aligned memory).
pub(crate) fn set_direct(f: &File, on: bool) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL on a descriptor `f` owns and keeps open for both calls;
    // they read and set its status flags and touch no memory of ours.
    let set = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        let want = match on {
            true => flags | libc::O_DIRECT,
            false => flags & !libc::O_DIRECT,
        };
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, want) == 0
    };
    if set {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINVAL) {
        Ok(false)
    } else {
        Err(e)
    }
}

impl DataSource for LocalSource {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }
    fn path_of(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    fn scan(&self) -> Result<Scan, EngineError> {
        crate::scan::scan_data_dir(&self.root)
    }
    fn facts(&self) -> Result<recman_pg::DataDirFacts, EngineError> {
        Ok(recman_pg::read_data_dir_facts(&self.root)?)
    }
    fn canonical(&self) -> Option<PathBuf> {
        std::fs::canonicalize(&self.root).ok()
    }
    fn open(
        &self,
        path: &Path,
        reads: ReadMode,
        range: (u64, u64),
    ) -> io::Result<(SourceFile, bool)> {
        let (f, d) = open_local(path, reads, range)?;
        Ok((SourceFile::Local(Arc::new(f)), d))
    }
    fn read_small(&self, rel: &str) -> Result<Option<Vec<u8>>, EngineError> {
        let path = self.root.join(rel);
        match std::fs::read(&path) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(EngineError::io("read", &path, e)),
        }
    }
    fn local_root(&self) -> Option<&Path> {
        Some(&self.root)
    }
}

/// The source a command on `ctx` reads the cluster from: the agent the database was
/// registered with (`register database --agent URL`), else the data directory given.
pub fn of_context(
    ctx: &crate::context::Context,
    what: &str,
) -> Result<Box<dyn DataSource>, EngineError> {
    if let Some(url) = ctx.repo.catalog().db_agent(ctx.db.id)? {
        let tls = ctx.tls.as_ref().ok_or_else(|| {
            EngineError::from(crate::refusal::Fleet::NoTlsForAgent {
                db: ctx.db.name.clone(),
                url: url.to_string(),
                what: what.to_string(),
            })
        })?;
        return Ok(Box::new(remote::RemoteSource::connect(&url, tls)?));
    }
    let pgdata = ctx.pgdata.as_deref().ok_or_else(|| {
        EngineError::from(crate::refusal::Cluster::NeedsDataDir {
            what: what.to_string(),
            agent_ok: true,
        })
    })?;
    Ok(Box::new(LocalSource::new(pgdata)))
}

/// The session a backup starts and stops through: libpq to `--target` when it was given,
/// else, for a cluster read through its agent, the agent's own session to it (the backup
/// host needs no route to PostgreSQL), else libpq with its defaults.
pub fn server_session(
    ctx: &crate::context::Context,
    source: &dyn DataSource,
) -> Result<recman_pg::Session, EngineError> {
    if ctx.conninfo.is_none()
        && let Some(s) = source.agent_session()
    {
        return s;
    }
    let target = recman_pg::resolve_conninfo(ctx.conninfo.as_deref())?;
    Ok(recman_pg::Session::connect(&target)?)
}

/// The agent database `ctx.db` was registered with, connected; None when it reads locally.
pub fn registered_agent(
    ctx: &crate::context::Context,
) -> Result<Option<Box<dyn DataSource>>, EngineError> {
    if ctx.repo.catalog().db_agent(ctx.db.id)?.is_none() {
        return Ok(None);
    }
    of_context(ctx, "validate database").map(Some)
}
