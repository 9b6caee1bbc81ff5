//! The database host's side of a restore through its agent: each request names one
//! [`Destination`] operation, which runs on this host's file system after its path is
//! confined to the directories the agent was started for (`recman server --restore-dir DIR`).
//!
//! The backup host checked the manifest already (`confine.rs`); the agent checks again
//! because it must not trust its caller more than the repository: a path is absolute, has no
//! ".", ".." or empty components, lies inside one of the allowed roots, and no directory
//! between the root and it is a symbolic link (a link may only be created, or have its owner
//! changed, never be written through).

use super::dest::{Destination, LocalDest};
use crate::error::EngineError;
use serde_json::{Value, json};
use std::path::{Component, Path, PathBuf};

/// The method names a restore through an agent uses; an agent routes them here.
pub const METHODS: &[&str] = &[
    "restore-dir-state",
    "restore-empty-dir",
    "restore-create-dir-all",
    "restore-write-whole",
    "restore-read-whole",
    "restore-remove-file",
    "restore-write-at",
    "restore-sync",
    "restore-set-len",
    "restore-symlink",
    "restore-set-meta",
    "restore-set-len-all",
    "restore-set-meta-all",
    "restore-sync-all",
    "restore-owner-of",
    "restore-may-chown",
];

fn refuse(path: &str, why: &str) -> EngineError {
    crate::refusal::Fleet::AgentRefusesPath {
        path: path.to_string(),
        why: why.to_string(),
    }
    .into()
}

/// Checks that `path` lies inside one of `roots` without passing through a symbolic link;
/// `final_may_be_link` allows the last component to be one (creating it, changing its owner).
pub fn confine(
    roots: &[PathBuf],
    path: &str,
    final_may_be_link: bool,
) -> Result<PathBuf, EngineError> {
    let p = Path::new(path);
    if !p.is_absolute() || path.contains('\0') || path.ends_with('/') && path != "/" {
        return Err(refuse(path, "which is not a plain absolute path"));
    }
    if !p
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        || path
            .split('/')
            .skip(1)
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(refuse(
            path,
            "a path with an empty, \".\" or \"..\" component",
        ));
    }
    let Some(root) = roots.iter().find(|r| p.starts_with(r)) else {
        return Err(refuse(
            path,
            "which lies outside the agent's restore directories",
        ));
    };
    let rest: Vec<_> = p
        .strip_prefix(root)
        .expect("starts with root")
        .components()
        .collect();
    let mut at = root.clone();
    for (i, c) in rest.iter().enumerate() {
        at.push(c);
        let last = i + 1 == rest.len();
        if last && final_may_be_link {
            break;
        }
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(refuse(
                path,
                &format!("which lies at or below the symbolic link {}", at.display()),
            ));
        }
    }
    Ok(p.to_path_buf())
}

fn s<'a>(meta: &'a Value, key: &str) -> Result<&'a str, EngineError> {
    meta.get(key).and_then(Value::as_str).ok_or_else(|| {
        EngineError::from(crate::refusal::Fleet::RequestLacks {
            key: key.to_string(),
        })
    })
}

fn n(meta: &Value, key: &str) -> Option<u64> {
    meta.get(key).and_then(Value::as_u64)
}

/// Runs one restore request on this host; returns the reply's metadata and body.
pub fn serve(
    roots: &[PathBuf],
    method: &str,
    meta: &Value,
    body: &[u8],
) -> Result<(Value, Vec<u8>), EngineError> {
    if let Some(single) = method
        .strip_suffix("-all")
        .filter(|m| matches!(*m, "restore-set-len" | "restore-set-meta" | "restore-sync"))
    {
        // A batch: each operation runs, and is confined, exactly as if sent on its own; the
        // first failure stops the batch (the caller fails the restore).
        let ops = meta.get("ops").and_then(Value::as_array).ok_or_else(|| {
            EngineError::from(crate::refusal::Fleet::RequestLacksOps {
                method: method.to_string(),
            })
        })?;
        for op in ops {
            serve(roots, single, op, &[])?;
        }
        return Ok((json!({"done": ops.len()}), Vec::new()));
    }
    let d = LocalDest::immediate();
    let ok = |v: Value| Ok((v, Vec::new()));
    // Only an owner change may name a link itself (lchown); every other method follows the
    // path, so its last component must not be a link either.
    let link =
        method == "restore-set-meta" && meta.get("link").and_then(Value::as_bool).unwrap_or(false);
    let path = || -> Result<PathBuf, EngineError> {
        confine(roots, s(meta, "path")?, link || method == "restore-symlink")
    };
    match method {
        "restore-may-chown" => ok(json!({"yes": d.may_chown()})),
        "restore-dir-state" => {
            let state = d.dir_state(&path()?, s(meta, "marker")?)?;
            ok(json!({ "state": state }))
        }
        "restore-empty-dir" => ok({
            d.empty_dir(&path()?)?;
            json!({})
        }),
        "restore-create-dir-all" => {
            let mode = n(meta, "mode").map(|m| m as u32);
            d.create_dir_all(&path()?, mode)?;
            ok(json!({}))
        }
        "restore-write-whole" => {
            d.write_whole(&path()?, body)?;
            ok(json!({}))
        }
        "restore-read-whole" => match d.read_whole(&path()?)? {
            Some(b) => Ok((json!({"exists": true}), b)),
            None => ok(json!({"exists": false})),
        },
        "restore-remove-file" => {
            d.remove_file(&path()?)?;
            ok(json!({}))
        }
        "restore-write-at" => {
            let f = d.open(&path()?)?;
            f.write_at(body, n(meta, "offset").unwrap_or(0), &mut None)?;
            // What the caller checks before it counts the write as done.
            ok(json!({"written": body.len()}))
        }
        "restore-sync" => {
            d.open(&path()?)?.sync()?;
            ok(json!({}))
        }
        "restore-set-len" => {
            d.set_len(&path()?, n(meta, "len").unwrap_or(0))?;
            ok(json!({}))
        }
        "restore-symlink" => {
            d.symlink(Path::new(s(meta, "target")?), &path()?)?;
            ok(json!({}))
        }
        "restore-set-meta" => {
            let owner = n(meta, "uid")
                .zip(n(meta, "gid"))
                .map(|(u, g)| (u as u32, g as u32));
            let mode = n(meta, "mode").map(|m| m as u32);
            if link && mode.is_some() {
                // chmod follows a link: it would change the file the link points to.
                return Err(refuse(
                    s(meta, "path")?,
                    "a mode for a symbolic link, which would change the file it points to",
                ));
            }
            d.set_meta(&path()?, owner, mode, link)?;
            ok(json!({}))
        }
        "restore-owner-of" => ok(match d.owner_of(&path()?) {
            Some((u, g)) => json!({"uid": u, "gid": g}),
            None => json!({}),
        }),
        other => Err(crate::refusal::Fleet::NoRestoreMethod {
            method: other.to_string(),
        }
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::dest::Destination;
    use super::super::dest_remote::{Caller, RemoteDest};
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    /// The agent's handler called in-process, as the transport would.
    struct Direct(Vec<PathBuf>);

    impl Caller for Direct {
        fn name(&self) -> String {
            "direct".into()
        }
        fn call(&self, m: &str, meta: Value, body: &[u8]) -> Result<(Value, Vec<u8>), EngineError> {
            serve(&self.0, m, &meta, body)
        }
    }

    #[test]
    fn paths_outside_the_roots_or_through_links_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("pgdata");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        let roots = vec![root.clone()];
        let r = root.display().to_string();
        for bad in [
            "../../x".to_string(),
            format!("{r}/../../x"),
            format!("{r}/base/./1"),
            format!("{r}//base"),
            "/etc/passwd".to_string(),
            format!("{r}x/base"),
            format!("{r}/link/passwd"),
            format!("{r}/link"),
        ] {
            let e = confine(&roots, &bad, false).unwrap_err().to_string();
            assert!(e.contains("nothing was written"), "{bad}: {e}");
        }
        // Writing through the link is refused at the handler too.
        let e = serve(
            &roots,
            "restore-write-whole",
            &json!({"path": format!("{r}/link/x")}),
            b"x",
        )
        .unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(!Path::new("/etc/x").exists());
        // A caller's "link" flag lets only an owner change name the link, never a write or
        // a mode (chmod would follow the link to /etc).
        let e = serve(
            &roots,
            "restore-write-whole",
            &json!({"path": format!("{r}/link"), "link": true}),
            b"x",
        )
        .unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"o").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("to-outside")).unwrap();
        let e = serve(
            &roots,
            "restore-set-meta",
            &json!({"path": format!("{r}/to-outside"), "link": true, "mode": 0o777}),
            b"",
        )
        .unwrap_err();
        assert!(e.to_string().contains("nothing was written"), "{e}");
        let mode = std::fs::metadata(&outside).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the file behind the link kept its mode");
        // The link itself may be given an owner; a new path inside is fine.
        confine(&roots, &format!("{r}/link"), true).unwrap();
        confine(&roots, &format!("{r}/base/1/1259"), false).unwrap();
        confine(&roots, &r, false).unwrap();
    }

    #[test]
    fn a_remote_destination_writes_through_the_handler() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("pgdata");
        let d = RemoteDest::new(Arc::new(Direct(vec![root.clone()])));
        assert_eq!(
            d.dir_state(&root, "m").unwrap(),
            super::super::dest::DirState::Missing
        );
        d.create_dir_all(&root.join("base/1"), Some(0o700)).unwrap();
        let f = d.open(&root.join("base/1/1259")).unwrap();
        f.write_at(&[7u8; 8192], 8192, &mut None).unwrap();
        f.sync().unwrap();
        d.flush().unwrap();
        d.set_len(&root.join("base/1/1259"), 3 * 8192).unwrap();
        d.write_whole(&root.join("PG_VERSION"), b"15\n").unwrap();
        d.set_meta(&root.join("PG_VERSION"), None, Some(0o600), false)
            .unwrap();
        let back = std::fs::read(root.join("base/1/1259")).unwrap();
        assert_eq!(back.len(), 3 * 8192);
        assert!(back[8192..16384].iter().all(|&b| b == 7) && back[..8192].iter().all(|&b| b == 0));
        assert_eq!(
            d.read_whole(&root.join("PG_VERSION")).unwrap().unwrap(),
            b"15\n"
        );
        assert_eq!(d.read_whole(&root.join("nope")).unwrap(), None);
        assert_eq!(
            d.dir_state(&root, "PG_VERSION").unwrap(),
            super::super::dest::DirState::Marked
        );
        // Batches: each operation as if sent alone, confined alike.
        let batch = [(root.join("base/1/2"), 8192), (root.join("base/1/3"), 0)];
        d.set_len_all(&batch).unwrap();
        assert_eq!(
            std::fs::metadata(root.join("base/1/2")).unwrap().len(),
            8192
        );
        let meta = |p: PathBuf| super::super::dest::MetaChange {
            path: p,
            owner: None,
            mode: Some(0o640),
            link: false,
        };
        d.set_meta_all(&[meta(root.join("base/1/2")), meta(root.join("base/1/3"))])
            .unwrap();
        let mode = std::fs::metadata(root.join("base/1/3"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        let e = d
            .set_len_all(&[(root.join("base/1/4"), 1), (dir.path().join("outside"), 1)])
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("outside the agent's restore directories"),
            "{e}"
        );
        assert!(!dir.path().join("outside").exists());
        let e = d
            .write_whole(&dir.path().join("outside"), b"x")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("outside the agent's restore directories"),
            "{e}"
        );
    }
}
