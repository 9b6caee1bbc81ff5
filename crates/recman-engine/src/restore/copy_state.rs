//! Where an image copy lies in the repository and the state it holds (`copy.json`): what the
//! copy commands (`copy.rs`) and the restore from a copy both need, kept in the restore folder
//! so that restore does not import the copy commands built on top of it.

use super::files::Layout;
use crate::context::Context;
use crate::error::EngineError;
use recman_format::manifest::BackupManifest;
use std::path::PathBuf;

pub fn copy_rel(db: &str, tag: &str) -> String {
    recman_catalog::layout::copy_dir(db, tag)
}

/// The state a copy holds, or None when there is no copy with this tag.
pub fn load_copy(ctx: &Context, tag: &str) -> Result<Option<BackupManifest>, EngineError> {
    if ctx.repo.is_remote() {
        return Ok(None);
    }
    let rel = format!("{}/copy.json", copy_rel(&ctx.db.name, tag));
    let path = ctx.repo.disk_path(&rel)?;
    match std::fs::read(&path) {
        Ok(b) => crate::manifest_io::read(
            &ctx.repo,
            &b,
            &rel,
            &format!("image copy state {} (copy {tag})", path.display()),
            &format!("make a new copy with `backup database --as-copy --tag {tag}`"),
        )
        .map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EngineError::io("read", &path, e)),
    }
}

pub(crate) fn save_state(ctx: &Context, tag: &str, m: &BackupManifest) -> Result<(), EngineError> {
    let rel = format!("{}/copy.json", copy_rel(&ctx.db.name, tag));
    let mut f = ctx.repo.create_atomic(&rel)?;
    crate::manifest_io::write(&ctx.repo, &mut f, m, &rel)?;
    f.commit()?;
    Ok(())
}

/// Where the copy keeps its files: its data directory and tablespaces inside the repository.
pub(crate) fn copy_layout(
    ctx: &Context,
    tag: &str,
    m: &BackupManifest,
) -> Result<Layout, EngineError> {
    let root = ctx.repo.disk_path(&copy_rel(&ctx.db.name, tag))?;
    let map: Vec<(String, PathBuf)> = m
        .tablespaces
        .iter()
        .map(|t| {
            (
                t.oid.to_string(),
                root.join("tblspc").join(t.oid.to_string()),
            )
        })
        .collect();
    Layout::new(&root.join("data"), m, &map)
}

pub(crate) fn file_crc(p: &std::path::Path) -> Result<u32, EngineError> {
    crate::util::file_size_crc(p)
        .map(|(_, crc)| crc)
        .map_err(|e| EngineError::io("read", p, e))
}
