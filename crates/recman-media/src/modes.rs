//! The modes of what recman creates in a repository or on a disk device: private by default
//! (DESIGN.md, invariant 10). Backups hold every row of the database, so nothing is readable
//! by other local users whatever the umask: directories 0750, objects 0640 (the group may be
//! a backup operators' group), the catalog and lock files 0600.
//!
//! Modes are set explicitly after creation (the umask only narrows a mode given to open(2)),
//! so a permissive umask cannot widen them.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Directories recman creates.
pub const DIR_MODE: u32 = 0o750;
/// Objects: pieces, manifests, archived WAL, tape cartridges.
pub const FILE_MODE: u32 = 0o640;
/// The catalog database and lock files.
pub const PRIVATE_MODE: u32 = 0o600;

/// Sets `file`'s mode (an fchmod: no race with a rename of its path).
pub fn set_file_mode(file: &File, mode: u32) -> io::Result<()> {
    file.set_permissions(Permissions::from_mode(mode))
}

/// Sets the mode of the file or directory at `path`.
pub fn set_path_mode(path: &Path, mode: u32) -> io::Result<()> {
    std::fs::set_permissions(path, Permissions::from_mode(mode))
}

/// Opens (creating when missing, never truncating) a lock or state file with `mode`, which a
/// file created here gets exactly.
pub fn open_private(path: &Path, mode: u32, read: bool) -> io::Result<File> {
    let existed = path.exists();
    let f = OpenOptions::new()
        .read(read)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(mode)
        .open(path)?;
    if !existed {
        set_file_mode(&f, mode)?;
    }
    Ok(f)
}
