//! Laying a backup's files out on disk: where each path goes (tablespaces may move), checking
//! that nothing is overwritten, directories, links, owners and modes.

use super::dest::{Destination, DirState};
use crate::error::EngineError;
use recman_format::manifest::{BackupManifest, EntryKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Layout {
    pub to: PathBuf,
    /// Tablespace oid → where its files go now.
    pub tablespaces: Vec<(u32, PathBuf)>,
    /// The file system `to` and the tablespaces are on.
    pub dest: Arc<dyn Destination>,
    /// How each restore channel writes.
    pub writes: super::writes::WritePlan,
}

/// The file a restore writes first into each directory it restores into and removes last: a
/// directory holding it was being restored into when recman stopped, and holds nothing else
/// than what that restore wrote (it began empty), so `--force` may clear it.
pub const RESTORE_MARKER: &str = ".recman-restore-in-progress";

/// What `prepare` created, so that a failed restore leaves nothing behind.
pub struct Created {
    made: Vec<PathBuf>,
    dest: Arc<dyn Destination>,
}

impl Created {
    /// Whether everything was removed.
    pub fn undo(self) -> bool {
        // Remove what we wrote inside; keep a directory the user created beforehand.
        super::dest::clear_all(self.dest.as_ref(), &self.made)
    }
}

impl Layout {
    pub fn new(
        to: &Path,
        m: &BackupManifest,
        map: &[(String, PathBuf)],
    ) -> Result<Layout, EngineError> {
        // Before any directory is made: a manifest that points outside is refused whole.
        super::confine::check_manifest(m)?;
        let mut tablespaces = Vec::new();
        for (old, _) in map {
            let known = m
                .tablespaces
                .iter()
                .any(|t| &t.location == old || &t.name == old || &t.oid.to_string() == old);
            if !known {
                let names: Vec<String> = m
                    .tablespaces
                    .iter()
                    .map(|t| format!("{} ({})", t.location, t.name))
                    .collect();
                return Err(crate::refusal::Backups::NotATablespace {
                    old: old.to_string(),
                    backup_id: m.backup_id.to_string(),
                    known: if names.is_empty() {
                        "none".to_string()
                    } else {
                        crate::util::cut_list(&names, ", ")
                    },
                }
                .into());
            }
        }
        for t in &m.tablespaces {
            let new = map
                .iter()
                .find(|(old, _)| old == &t.location || old == &t.name || old == &t.oid.to_string())
                .map(|(_, new)| new.clone())
                .unwrap_or_else(|| PathBuf::from(&t.location));
            if !new.is_absolute() {
                return Err(crate::refusal::Backups::TablespaceNotAbsolute {
                    path: new.display().to_string(),
                }
                .into());
            }
            tablespaces.push((t.oid, new));
        }
        Ok(Layout {
            to: to.to_path_buf(),
            tablespaces,
            dest: super::dest::local(super::dest::WriteMode::Direct),
            writes: super::writes::WritePlan::chosen(super::dest::WriteMode::Direct),
        })
    }

    /// The same layout on another file system (the database host's, through its agent).
    pub fn on(mut self, dest: Arc<dyn Destination>) -> Layout {
        self.dest = dest;
        self
    }

    /// Real path of a path of the backup's namespace.
    pub fn real(&self, rel: &str) -> PathBuf {
        if let Some(rest) = rel.strip_prefix("pg_tblspc/") {
            let (oid, tail) = rest.split_once('/').unwrap_or((rest, ""));
            if let Some((_, loc)) = self.tablespaces.iter().find(|(o, _)| o.to_string() == oid)
                && !tail.is_empty()
            {
                return loc.join(tail);
            }
        }
        self.to.join(rel)
    }

    /// Refuses a target that holds anything, except, with `force`, one that holds only what
    /// an interrupted restore of recman wrote (its [`RESTORE_MARKER`] is there): that one is
    /// emptied. Returns the directories emptied.
    pub fn check_empty(&self, force: bool) -> Result<Vec<PathBuf>, EngineError> {
        let mut dirs = vec![(self.to.clone(), "restore directory")];
        dirs.extend(
            self.tablespaces
                .iter()
                .map(|(_, p)| (p.clone(), "tablespace location")),
        );
        // Every directory is checked before any is cleared: --force clears all or nothing.
        let mut clear = Vec::new();
        for (d, what) in &dirs {
            let state = self.dest.dir_state(d, RESTORE_MARKER)?;
            if state == DirState::Marked {
                if !force {
                    return Err(EngineError::remedy(
                        crate::error::ErrorKind::InvalidInput,
                        format!(
                            "{what} {}{} holds what an interrupted restore wrote (its {RESTORE_MARKER} is there); nothing was written",
                            d.display(),
                            self.dest.place()
                        ),
                        crate::action::Hint::new()
                            .act(crate::action::Action::ClearInterruptedRestore),
                    ));
                }
                clear.push(d.clone());
                continue;
            }
            if state == DirState::Occupied {
                let hint = if *what == "restore directory" {
                    "restore into a new or empty directory"
                } else {
                    "move it aside, or restore the tablespace elsewhere with --tablespace-map OLD=NEW"
                };
                let forced = if force {
                    format!(
                        " (--force clears only a directory an interrupted recman restore wrote, marked by its {RESTORE_MARKER}, and this one has none)"
                    )
                } else {
                    String::new()
                };
                return Err(crate::refusal::Backups::RestoreDirNotEmpty {
                    what: what.to_string(),
                    dir: d.display().to_string(),
                    place: self.dest.place().to_string(),
                    forced,
                    hint,
                }
                .into());
            }
        }
        for d in &clear {
            self.dest.empty_dir(d)?;
        }
        Ok(clear)
    }

    /// Marks each target directory as being restored into, before any file is written: a
    /// restore killed half-way leaves the mark, and only a marked directory is ever cleared.
    pub fn mark(&self) -> Result<(), EngineError> {
        for d in std::iter::once(&self.to).chain(self.tablespaces.iter().map(|(_, p)| p)) {
            let m = d.join(RESTORE_MARKER);
            self.dest.write_whole(
                &m,
                format!(
                    "recman restore in progress (process {}); the directory holds nothing else recman did not write\n",
                    std::process::id()
                )
                .as_bytes(),
            )?;
        }
        Ok(())
    }

    /// Takes the marks away once the restore is complete.
    pub fn unmark(&self) -> Result<(), EngineError> {
        for d in std::iter::once(&self.to).chain(self.tablespaces.iter().map(|(_, p)| p)) {
            self.dest.remove_file(&d.join(RESTORE_MARKER))?;
        }
        Ok(())
    }

    pub fn prepare(&self) -> Result<Created, EngineError> {
        let mut made = Vec::new();
        for d in std::iter::once(&self.to).chain(self.tablespaces.iter().map(|(_, p)| p)) {
            // Missing parents are made private too (an image copy's directories in the
            // repository, a restore target's new parents).
            self.dest.create_dir_all(d, Some(0o700))?;
            made.push(d.clone());
        }
        Ok(Created {
            made,
            dest: Arc::clone(&self.dest),
        })
    }
}

pub(crate) fn make_entries(m: &BackupManifest, layout: &Layout) -> Result<(), EngineError> {
    for e in &m.entries {
        let path = layout.real(&e.path);
        match e.kind {
            EntryKind::Dir => layout.dest.create_dir_all(&path, None)?,
            EntryKind::Symlink => {
                let target = match e.path.strip_prefix("pg_tblspc/").and_then(|oid| {
                    layout
                        .tablespaces
                        .iter()
                        .find(|(o, _)| o.to_string() == oid)
                }) {
                    Some((_, loc)) => loc.clone(),
                    None => PathBuf::from(e.link_target.clone().unwrap_or_default()),
                };
                layout.dest.symlink(&target, &path)?;
            }
            EntryKind::File => {}
        }
    }
    Ok(())
}

/// Applies modes and, when allowed, owners; directories last so their modes do not stop us.
pub(crate) fn apply_metadata(m: &BackupManifest, layout: &Layout) -> Result<(), EngineError> {
    let dest = layout.dest.as_ref();
    let root = dest.may_chown();
    let changes: Vec<_> = m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .chain(m.entries.iter().filter(|e| e.kind == EntryKind::Dir))
        .map(|e| super::dest::MetaChange {
            path: layout.real(&e.path),
            owner: root.then_some((e.uid, e.gid)),
            mode: Some(e.mode),
            link: false,
        })
        .collect();
    dest.set_meta_all(&changes)?;
    if root {
        // The top directories take the owner of the data directory's files.
        if let Some(e) = m.entries.iter().find(|e| e.path == "global") {
            for d in std::iter::once(&layout.to).chain(layout.tablespaces.iter().map(|(_, p)| p)) {
                dest.set_meta(d, Some((e.uid, e.gid)), None, false)?;
            }
            for s in m.entries.iter().filter(|s| s.kind == EntryKind::Symlink) {
                let _ = dest.set_meta(&layout.real(&s.path), Some((s.uid, s.gid)), None, true);
            }
        }
    }
    Ok(())
}
