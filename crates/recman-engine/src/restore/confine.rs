//! Confined restores: whatever a manifest or a piece says, restore writes only inside the
//! target directory and the mapped tablespace locations. The whole manifest is checked before
//! anything is written; a piece's file name is checked again before its file is opened.

use std::collections::HashSet;

use recman_format::manifest::{BackupManifest, EntryKind};

use crate::error::EngineError;

fn refuse(whose: &str, path: &str, why: &str) -> EngineError {
    crate::refusal::Backups::Unconfined {
        whose: whose.to_string(),
        path: path.to_string(),
        why: why.to_string(),
    }
    .into()
}

/// Checks one path of a backup's namespace: relative, '/'-separated, without empty, "." or
/// ".." components or NUL bytes.
pub(crate) fn check_rel(whose: &str, path: &str) -> Result<(), EngineError> {
    if path.is_empty() {
        return Err(refuse(whose, path, "an empty path"));
    }
    if path.starts_with('/') {
        return Err(refuse(whose, path, "an absolute path"));
    }
    if path.contains('\0') {
        return Err(refuse(whose, path, "a path with a NUL byte"));
    }
    for c in path.split('/') {
        match c {
            ".." => return Err(refuse(whose, path, "a path with a \"..\" component")),
            "" | "." => {
                return Err(refuse(
                    whose,
                    path,
                    "a path with an empty or \".\" component",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks every entry of `m` before the restore writes anything: each path is confined, and
/// none lies below a symbolic link other than a tablespace's `pg_tblspc/<oid>`, which restore
/// points at the tablespace's (mapped) location.
pub(crate) fn check_manifest(m: &BackupManifest) -> Result<(), EngineError> {
    let tablespace_links: HashSet<String> = m
        .tablespaces
        .iter()
        .map(|t| format!("pg_tblspc/{}", t.oid))
        .collect();
    let whose = format!("the manifest of backup {}", m.backup_id);
    let mut links = HashSet::new();
    for e in &m.entries {
        check_rel(&whose, &e.path)?;
        if e.kind == EntryKind::Symlink && !tablespace_links.contains(&e.path) {
            links.insert(e.path.as_str());
        }
    }
    for e in &m.entries {
        let mut prefix = e.path.as_str();
        while let Some((parent, _)) = prefix.rsplit_once('/') {
            if links.contains(parent) {
                return Err(refuse(
                    &whose,
                    &e.path,
                    &format!("which lies below the symbolic link {parent:?}"),
                ));
            }
            prefix = parent;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_rel;

    #[test]
    fn paths_that_leave_the_target_are_refused() {
        for bad in [
            "../../x",
            "/etc/passwd",
            "base/../../x",
            "base//1",
            "./base",
            "",
            "a\0b",
        ] {
            let e = check_rel("backup B1", bad).unwrap_err().to_string();
            assert!(e.contains("nothing was written"), "{bad:?}: {e}");
        }
        for good in [
            "base/1/1259",
            "global/pg_control",
            "pg_tblspc/16384/PG_15/5/1",
            "a..b",
        ] {
            check_rel("backup B1", good).unwrap();
        }
    }
}
