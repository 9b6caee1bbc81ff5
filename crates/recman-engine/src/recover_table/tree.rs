//! The auxiliary directory's file work: phase 2 starts from a copy of phase 1's restore.

use crate::error::EngineError;
use std::path::Path;

/// Copies a restored directory with its modes and owners (links as links).
pub(super) fn copy_tree(from: &Path, to: &Path) -> Result<(), EngineError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let md = std::fs::symlink_metadata(from).map_err(|e| EngineError::io("read", from, e))?;
    if md.is_symlink() {
        let t = std::fs::read_link(from).map_err(|e| EngineError::io("read", from, e))?;
        std::os::unix::fs::symlink(t, to).map_err(|e| EngineError::io("create", to, e))?;
        return Ok(());
    }
    if md.is_dir() {
        std::fs::create_dir(to).map_err(|e| EngineError::io("create", to, e))?;
        for e in std::fs::read_dir(from).map_err(|e| EngineError::io("read", from, e))? {
            let e = e.map_err(|er| EngineError::io("read", from, er))?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
    } else {
        std::fs::copy(from, to).map_err(|e| EngineError::io("copy", from, e))?;
    }
    let _ = std::os::unix::fs::lchown(to, Some(md.uid()), Some(md.gid()));
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(md.mode()))
        .map_err(|e| EngineError::io("set mode of", to, e))
}

/// The bytes of the files under `d`.
pub(super) fn dir_bytes(d: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(d) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
