//! Atomic file creation on local disk (safety invariant 2): a reader sees either no file or
//! the whole file, even after a crash or power loss.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::CatalogError;

const BUF_SIZE: usize = 256 * 1024;

/// A file being written under a temporary name. [`AtomicFile::commit`] makes it appear under
/// its final name; dropping it without commit removes the temporary file.
#[derive(Debug)]
pub struct AtomicFile {
    writer: Option<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path` as "<name>.tmp-<pid>" in the same directory, which must exist:
    /// the rename that publishes it is only atomic within one file system.
    pub(crate) fn create(path: &Path) -> Result<AtomicFile, CatalogError> {
        let name = path
            .file_name()
            .ok_or_else(|| CatalogError::BadPath {
                rel: path.display().to_string(),
            })?
            .to_string_lossy();
        let tmp = path.with_file_name(format!("{name}.tmp-{}", std::process::id()));
        // Truncate: a leftover from a crashed process that had our pid is garbage.
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| CatalogError::io("create", &tmp, e))?;
        Ok(AtomicFile {
            writer: Some(BufWriter::with_capacity(BUF_SIZE, file)),
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// The final path, where the file appears on commit.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, fsyncs the file, renames it into place and fsyncs the directory, so both the
    /// content and the name survive a power loss. On error the temporary file is removed.
    pub fn commit(mut self) -> Result<(), CatalogError> {
        let Some(writer) = self.writer.take() else {
            unreachable!("the writer is only taken here, and commit consumes self")
        };
        let file = writer
            .into_inner()
            .map_err(|e| CatalogError::io("write", &self.tmp, e.into_error()))?;
        file.sync_all()
            .map_err(|e| CatalogError::io("fsync", &self.tmp, e))?;
        drop(file);
        fs::rename(&self.tmp, &self.path)
            .map_err(|e| CatalogError::io("rename into place", &self.path, e))?;
        // Renamed: nothing left for Drop to remove, even if the directory fsync fails.
        self.tmp = PathBuf::new();
        sync_parent(&self.path)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.writer.as_mut() {
            Some(w) => w.write(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.write_all(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.as_mut().map_or(Ok(()), |w| w.flush())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Drop the writer first: its own flush on drop must not recreate content after removal.
        self.writer = None;
        if !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Fsyncs a directory, making the names created in or renamed into it durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), CatalogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| CatalogError::io("fsync directory", dir, e))
}

fn sync_parent(path: &Path) -> Result<(), CatalogError> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => sync_dir(p),
        _ => sync_dir(Path::new(".")),
    }
}

/// Creates `dir` and its missing parents, fsyncing each new directory's parent so the new
/// entries survive a power loss as well as the files later written into them.
pub(crate) fn create_dir_all_durable(dir: &Path) -> Result<(), CatalogError> {
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
            Ok(()) => sync_parent(d)?,
            // A concurrent creator got there first; its own fsync covers the entry.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(CatalogError::io("create directory", d, e)),
        }
    }
    Ok(())
}
