//! The local disk driver: objects are files under a root directory, published by
//! temp + fsync + rename + directory fsync (safety invariant 2).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::direct::DirectWriter;
use crate::error::MediaError;
use crate::media::{Capabilities, Media, MediaReader, MediaWriter, ObjectInfo, check_name};

const BUF_SIZE: usize = 256 * 1024;
/// Temporary names end in ".tmp-<pid>-<n>"; list hides them and crosscheck may remove them.
const TMP_MARK: &str = ".tmp-";

/// Objects as files under `root`.
#[derive(Debug, Clone)]
pub struct DiskMedia {
    root: PathBuf,
}

impl DiskMedia {
    /// A driver for `root`, which must exist; it is made absolute so later changes of the
    /// working directory do not move it.
    pub fn new(root: &Path) -> Result<DiskMedia, MediaError> {
        let root = std::path::absolute(root)
            .map_err(|e| MediaError::io(&root.display().to_string(), "", "resolve", e))?;
        Ok(DiskMedia { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file behind `name` (for tools that must hand a path to another program).
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn err(&self, name: &str, op: &str, e: io::Error) -> MediaError {
        MediaError::io(&self.describe(), name, op, e)
    }
}

/// True for a temporary name left by an unfinished write.
pub fn is_temporary(name: &str) -> bool {
    name.rsplit('/')
        .next()
        .and_then(|base| base.rfind(TMP_MARK).map(|i| &base[i + TMP_MARK.len()..]))
        .is_some_and(|rest| {
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || c == '-')
        })
}

impl Media for DiskMedia {
    fn describe(&self) -> String {
        format!("disk {}", self.root.display())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::RANDOM_ACCESS
    }

    fn create(&self, name: &str) -> Result<Box<dyn MediaWriter>, MediaError> {
        check_name(&self.describe(), name)?;
        let path = self.root.join(name);
        if let Some(parent) = path.parent() {
            create_dir_all_durable(parent).map_err(|e| self.err(name, "create directory", e))?;
        }
        let w = AtomicFile::create_direct(&path).map_err(|e| self.err(name, "create", e))?;
        Ok(Box::new(DiskWriter {
            file: w,
            device: self.describe(),
            name: name.to_string(),
        }))
    }

    fn open(&self, name: &str) -> Result<Box<dyn MediaReader>, MediaError> {
        check_name(&self.describe(), name)?;
        let path = self.root.join(name);
        let file = File::open(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => MediaError::not_found(&self.describe(), name),
            _ => self.err(name, "open", e),
        })?;
        let len = file
            .metadata()
            .map_err(|e| self.err(name, "stat", e))?
            .len();
        Ok(Box::new(DiskReader { file, len }))
    }

    fn stat(&self, name: &str) -> Result<Option<u64>, MediaError> {
        check_name(&self.describe(), name)?;
        match fs::metadata(self.root.join(name)) {
            Ok(m) if m.is_file() => Ok(Some(m.len())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.err(name, "stat", e)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, MediaError> {
        // Walk only the directory the prefix points into, not the whole repository.
        let dir_part = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let mut out = Vec::new();
        let start = self.root.join(dir_part);
        let mut stack = vec![(start, dir_part.to_string())];
        while let Some((dir, rel)) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.err(&rel, "list", e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| self.err(&rel, "list", e))?;
                let fname = entry.file_name().to_string_lossy().into_owned();
                let name = if rel.is_empty() {
                    fname
                } else {
                    format!("{rel}/{fname}")
                };
                let ft = entry.file_type().map_err(|e| self.err(&name, "list", e))?;
                if ft.is_dir() {
                    if prefix.starts_with(&format!("{name}/")) || name.starts_with(prefix) {
                        stack.push((entry.path(), name));
                    }
                } else if ft.is_file() && name.starts_with(prefix) && !is_temporary(&name) {
                    let size = entry
                        .metadata()
                        .map_err(|e| self.err(&name, "stat", e))?
                        .len();
                    out.push(ObjectInfo { name, size });
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn remove(&self, name: &str) -> Result<bool, MediaError> {
        check_name(&self.describe(), name)?;
        let path = self.root.join(name);
        match fs::remove_file(&path) {
            Ok(()) => {
                if let Some(parent) = path.parent() {
                    sync_dir(parent).map_err(|e| self.err(name, "fsync directory", e))?;
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.err(name, "remove", e)),
        }
    }
}

struct DiskWriter {
    file: AtomicFile,
    device: String,
    name: String,
}

impl Write for DiskWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl MediaWriter for DiskWriter {
    fn commit(self: Box<Self>) -> Result<u64, MediaError> {
        let DiskWriter { file, device, name } = *self;
        file.commit()
            .map_err(|(op, e)| MediaError::io(&device, &name, op, e))
    }

    fn abort(self: Box<Self>) {}
}

struct DiskReader {
    file: File,
    len: u64,
}

impl Read for DiskReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

impl Seek for DiskReader {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.seek(pos)
    }
}

impl MediaReader for DiskReader {
    fn len(&self) -> u64 {
        self.len
    }
}

/// A file written under a temporary name in its final directory; [`AtomicFile::commit`]
/// publishes it, dropping it removes the temporary file.
#[derive(Debug)]
pub struct AtomicFile {
    sink: Option<Sink>,
    tmp: PathBuf,
    path: PathBuf,
    written: u64,
}

/// How the bytes reach the file: through the page cache, or with O_DIRECT from aligned
/// blocks, several in flight (`direct.rs`). Direct writes skip the copy into the page cache
/// and the flush at commit, which on this machine class is what limits an uncompressed backup
/// (buffered writes with fsync run at a sixth of direct ones and cost kernel CPU).
#[derive(Debug)]
enum Sink {
    Buffered(BufWriter<File>),
    Direct(Box<DirectWriter>),
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl AtomicFile {
    /// Starts writing `path` through the page cache; its directory must exist, since the
    /// publishing rename is only atomic within one file system.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        AtomicFile::open(path, false)
    }

    /// As [`AtomicFile::create`], with O_DIRECT writes where the file system allows them
    /// (tmpfs, for one, refuses; then the page cache is used).
    pub fn create_direct(path: &Path) -> io::Result<AtomicFile> {
        AtomicFile::open(path, true)
    }

    fn open(path: &Path, direct: bool) -> io::Result<AtomicFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?
            .to_string_lossy();
        // The pid and a per-process counter keep concurrent writers of one name apart.
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_file_name(format!("{name}{TMP_MARK}{}-{n}", std::process::id()));
        let open = |flags: i32| {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(crate::modes::FILE_MODE)
                .custom_flags(flags)
                .open(&tmp)?;
            crate::modes::set_file_mode(&f, crate::modes::FILE_MODE)?;
            Ok::<File, io::Error>(f)
        };
        let sink = match direct.then(|| open(libc::O_DIRECT)) {
            Some(Ok(f)) => Sink::Direct(Box::new(DirectWriter::new(f))),
            Some(Err(e)) if e.raw_os_error() != Some(libc::EINVAL) => return Err(e),
            _ => Sink::Buffered(BufWriter::with_capacity(BUF_SIZE, open(0)?)),
        };
        Ok(AtomicFile {
            sink: Some(sink),
            tmp,
            path: path.to_path_buf(),
            written: 0,
        })
    }

    /// The final path, where the file appears on commit.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, fsyncs, renames into place and fsyncs the directory; returns the size. On
    /// error the temporary file is removed and the failing step named.
    pub fn commit(mut self) -> Result<u64, (&'static str, io::Error)> {
        let Some(sink) = self.sink.take() else {
            unreachable!("the sink is only taken here, and commit consumes self")
        };
        let file = match sink {
            Sink::Buffered(w) => w.into_inner().map_err(|e| ("write", e.into_error()))?,
            Sink::Direct(d) => d.finish(self.written).map_err(|e| ("write", e))?,
        };
        file.sync_all().map_err(|e| ("fsync", e))?;
        drop(file);
        fs::rename(&self.tmp, &self.path).map_err(|e| ("rename into place", e))?;
        self.tmp = PathBuf::new();
        sync_parent(&self.path).map_err(|e| ("fsync directory", e))?;
        Ok(self.written)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.sink.as_mut() {
            Some(Sink::Buffered(w)) => w.write_all(buf)?,
            Some(Sink::Direct(d)) => d.write_all(buf)?,
            None => return Err(io::ErrorKind::BrokenPipe.into()),
        }
        self.written += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.sink.as_mut() {
            Some(Sink::Buffered(w)) => w.flush(),
            // Direct writes go out in whole blocks; the tail waits for commit.
            _ => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Drop the sink first: a buffered writer's flush on drop must not recreate content
        // after removal.
        self.sink = None;
        if !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Fsyncs a directory, making names created in or renamed into it durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => sync_dir(p),
        _ => sync_dir(Path::new(".")),
    }
}

/// Creates `dir` and its missing parents (mode [`crate::modes::DIR_MODE`]), fsyncing each new directory's parent so the new
/// entries survive a power loss as well as the files later written into them.
pub fn create_dir_all_durable(dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut cur = dir;
    while !cur.as_os_str().is_empty() && !cur.is_dir() {
        missing.push(cur);
        match cur.parent() {
            Some(p) => cur = p,
            None => break,
        }
    }
    for d in missing.into_iter().rev() {
        match fs::create_dir(d) {
            Ok(()) => {
                crate::modes::set_path_mode(d, crate::modes::DIR_MODE)?;
                sync_parent(d)?
            }
            // A concurrent creator got there first; its own fsync covers the entry.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
