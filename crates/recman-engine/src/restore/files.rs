//! Laying a backup's files out on disk: where each path goes (tablespaces may move), checking
//! that nothing is overwritten, and scattering the chunks of every piece into their files.

use crate::{Context, EngineError, Progress};
use recman_catalog::IoStatRow;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry};
use recman_format::{PieceReader, Record};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::BufReader;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Layout {
    pub to: PathBuf,
    /// Tablespace oid → where its files go now.
    pub tablespaces: Vec<(u32, PathBuf)>,
}

/// What `prepare` created, so that a failed restore leaves nothing behind.
pub struct Created {
    made: Vec<PathBuf>,
}

impl Created {
    pub fn undo(self) {
        for p in self.made.iter().rev() {
            if p.is_dir() {
                // Remove what we wrote inside; keep a directory the user created beforehand.
                if let Ok(rd) = std::fs::read_dir(p) {
                    for e in rd.flatten() {
                        let path = e.path();
                        let _ = if path.is_dir() && !path.is_symlink() {
                            std::fs::remove_dir_all(&path)
                        } else {
                            std::fs::remove_file(&path)
                        };
                    }
                }
            }
        }
    }
}

impl Layout {
    pub fn new(
        to: &Path,
        m: &BackupManifest,
        map: &[(String, PathBuf)],
    ) -> Result<Layout, EngineError> {
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
                return Err(EngineError::Invalid(format!(
                    "--tablespace-map names {old:?}, which is not a tablespace of backup {}; hint: its tablespaces are: {}",
                    m.backup_id,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            }
        }
        for t in &m.tablespaces {
            let new = map
                .iter()
                .find(|(old, _)| old == &t.location || old == &t.name || old == &t.oid.to_string())
                .map(|(_, new)| new.clone())
                .unwrap_or_else(|| PathBuf::from(&t.location));
            if !new.is_absolute() {
                return Err(EngineError::Invalid(format!(
                    "tablespace location {} must be an absolute path",
                    new.display()
                )));
            }
            tablespaces.push((t.oid, new));
        }
        Ok(Layout {
            to: to.to_path_buf(),
            tablespaces,
        })
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

    pub fn check_empty(&self) -> Result<(), EngineError> {
        let mut dirs = vec![(self.to.clone(), "restore directory")];
        dirs.extend(
            self.tablespaces
                .iter()
                .map(|(_, p)| (p.clone(), "tablespace location")),
        );
        for (d, what) in dirs {
            if d.exists() && !super::is_empty_dir(&d) {
                let hint = if what == "restore directory" {
                    "restore into a new or empty directory"
                } else {
                    "move it aside, or restore the tablespace elsewhere with --tablespace-map OLD=NEW"
                };
                return Err(EngineError::Invalid(format!(
                    "{what} {} is not empty; nothing was written; hint: {hint}",
                    d.display()
                )));
            }
        }
        Ok(())
    }

    pub fn prepare(&self) -> Result<Created, EngineError> {
        let mut made = Vec::new();
        for d in std::iter::once(&self.to).chain(self.tablespaces.iter().map(|(_, p)| p)) {
            std::fs::create_dir_all(d).map_err(|e| EngineError::io("create directory", d, e))?;
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| EngineError::io("set mode of", d, e))?;
            made.push(d.clone());
        }
        Ok(Created { made })
    }
}

fn make_entries(m: &BackupManifest, layout: &Layout) -> Result<(), EngineError> {
    for e in &m.entries {
        let path = layout.real(&e.path);
        match e.kind {
            EntryKind::Dir => std::fs::create_dir_all(&path)
                .map_err(|er| EngineError::io("create directory", &path, er))?,
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
                std::os::unix::fs::symlink(&target, &path)
                    .map_err(|er| EngineError::io("create symlink", &path, er))?;
            }
            EntryKind::File => {}
        }
    }
    Ok(())
}

/// Applies modes and, when allowed, owners; directories last so their modes do not stop us.
fn apply_metadata(m: &BackupManifest, layout: &Layout) -> Result<(), EngineError> {
    let root = unsafe_free_is_root();
    for e in m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .chain(m.entries.iter().filter(|e| e.kind == EntryKind::Dir))
    {
        let path = layout.real(&e.path);
        if root {
            std::os::unix::fs::chown(&path, Some(e.uid), Some(e.gid))
                .map_err(|er| EngineError::io("set owner of", &path, er))?;
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(e.mode))
            .map_err(|er| EngineError::io("set mode of", &path, er))?;
    }
    if root {
        // The top directories take the owner of the data directory's files.
        if let Some(e) = m.entries.iter().find(|e| e.path == "global") {
            for d in std::iter::once(&layout.to).chain(layout.tablespaces.iter().map(|(_, p)| p)) {
                std::os::unix::fs::chown(d, Some(e.uid), Some(e.gid))
                    .map_err(|er| EngineError::io("set owner of", d, er))?;
            }
            for s in m.entries.iter().filter(|s| s.kind == EntryKind::Symlink) {
                let _ = std::os::unix::fs::lchown(layout.real(&s.path), Some(s.uid), Some(s.gid));
            }
        }
    }
    Ok(())
}

fn unsafe_free_is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// Restores every file of the backup; returns (files, bytes).
pub fn restore_files(
    ctx: &Context,
    m: &BackupManifest,
    layout: &Layout,
    channels: u32,
    progress: &dyn Progress,
) -> Result<(u64, u64, Vec<IoStatRow>), EngineError> {
    make_entries(m, layout)?;
    let files: HashMap<&str, &ManifestEntry> = m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| (e.path.as_str(), e))
        .collect();
    let total: u64 = files.values().filter_map(|e| e.size).sum();
    progress.start("restore", total);
    let mut pieces: Vec<_> = m.sets.iter().flat_map(|s| s.pieces.iter()).collect();
    pieces.sort_by_key(|p| std::cmp::Reverse(p.size));
    let mut lanes: Vec<Vec<_>> = vec![Vec::new(); channels as usize];
    let mut load = vec![0u64; channels as usize];
    for p in pieces {
        let k = (0..lanes.len())
            .min_by_key(|&k| load[k])
            .expect("channels > 0");
        load[k] += p.size;
        lanes[k].push(p);
    }
    let cancel = AtomicBool::new(false);
    let root = ctx.repo.root();
    let results: Vec<Result<(u64, Vec<IoStatRow>), EngineError>> = std::thread::scope(|s| {
        let hs: Vec<_> = lanes
            .iter()
            .enumerate()
            .map(|(k, lane)| {
                let (files, cancel) = (&files, &cancel);
                s.spawn(move || {
                    let mut stats = LaneStats {
                        channel: k as u32 + 1,
                        started: crate::util::now_micros(),
                        ..Default::default()
                    };
                    let mut n = 0;
                    for p in lane {
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        match restore_piece(
                            root, &p.path, p.size, p.crc32c, files, layout, progress, &mut stats,
                        ) {
                            Ok(k) => n += k,
                            Err(e) => {
                                cancel.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                    Ok((n, stats.finish()))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EngineError::Invalid("a restore channel panicked".into()))
                })
            })
            .collect()
    });
    progress.finish();
    let mut restored = 0;
    let mut rows = Vec::new();
    for r in results {
        let (n, r) = r?;
        restored += n;
        rows.extend(r);
    }
    // Each section of a file ends in its own piece.
    let expected: u64 = files.values().map(|e| e.sections.len().max(1) as u64).sum();
    for e in files.values().filter(|e| !e.sections.is_empty()) {
        let p = layout.real(&e.path);
        let f = OpenOptions::new()
            .write(true)
            .open(&p)
            .map_err(|er| EngineError::io("open", &p, er))?;
        f.set_len(e.size.unwrap_or(0))
            .and_then(|_| f.sync_all())
            .map_err(|er| EngineError::io("set length of", &p, er))?;
    }
    if restored != expected {
        return Err(EngineError::Invalid(format!(
            "backup {} restored {restored} of its {} files; hint: the manifest and pieces disagree, validate the backup with `recman validate backup {}`",
            m.backup_id, expected, m.backup_id
        )));
    }
    apply_metadata(m, layout)?;
    Ok((restored, total, rows))
}

/// Statistics of one restore channel: pieces read (INPUT rows), files written (OUTPUT).
#[derive(Default)]
struct LaneStats {
    channel: u32,
    started: i64,
    input: crate::io::IoCounters,
    output: crate::io::IoCounters,
    rows: Vec<IoStatRow>,
}

impl LaneStats {
    fn finish(mut self) -> Vec<IoStatRow> {
        let now = crate::util::now_micros();
        let out = crate::channel::stat_row(
            "OUTPUT",
            self.channel,
            Some("restored files".into()),
            &self.output,
            self.started,
            now,
            (0, 0),
        );
        let agg = crate::channel::stat_row(
            "AGGREGATE",
            self.channel,
            None,
            &self.input,
            self.started,
            now,
            (1 << 20, 1),
        );
        self.rows.push(out);
        self.rows.push(agg);
        self.rows
    }
}

#[allow(clippy::too_many_arguments)]
fn restore_piece(
    root: &Path,
    rel: &str,
    size: u64,
    crc: u32,
    files: &HashMap<&str, &ManifestEntry>,
    layout: &Layout,
    progress: &dyn Progress,
    stats: &mut LaneStats,
) -> Result<u64, EngineError> {
    let path = root.join(rel);
    let opened = crate::util::now_micros();
    let f = File::open(&path).map_err(|e| EngineError::io("open backup piece", &path, e))?;
    let (timed, counters) = crate::io::TimedReader::new(f);
    let mut r = PieceReader::open(BufReader::with_capacity(1 << 20, timed))
        .map_err(|e| EngineError::piece(rel, e))?;
    let names: Vec<String> = r.header().files.iter().map(|f| f.path.clone()).collect();
    let piece_no = r.header().piece_no;
    let sectioned: Vec<bool> = names
        .iter()
        .map(|n| {
            files
                .get(n.as_str())
                .is_some_and(|e| !e.sections.is_empty())
        })
        .collect();
    let mut open: HashMap<u32, (File, u32, PathBuf)> = HashMap::new();
    let mut done = 0;
    while let Some(rec) = r.next().map_err(|e| EngineError::piece(rel, e))? {
        match rec {
            Record::Chunk {
                file_index,
                file_offset,
                data,
            } => {
                let (out, running, p) =
                    get_open(&mut open, file_index, &names, &sectioned, layout, rel)?;
                let t = std::time::Instant::now();
                out.write_all_at(&data, file_offset)
                    .map_err(|e| EngineError::io("write", p.as_path(), e))?;
                stats.output.io_count += 1;
                stats.output.ready += 1;
                stats.output.bytes += data.len() as u64;
                stats.output.io_time += t.elapsed();
                *running = crc32c::crc32c_append(*running, &data);
                progress.advance(data.len() as u64);
            }
            Record::FileEnd {
                file_index,
                size: fsize,
                crc32c: fcrc,
            } => {
                let name = names.get(file_index as usize).cloned().unwrap_or_default();
                let (out, running, p) =
                    get_open(&mut open, file_index, &names, &sectioned, layout, rel)?;
                let expected = files.get(name.as_str()).copied();
                // A file in sections is checked section by section; its length is set once all
                // sections are in place, since another channel may be writing a later one.
                let section =
                    expected.and_then(|e| e.sections.iter().find(|s| s.piece_no == piece_no));
                let ok = *running == fcrc
                    && match section {
                        Some(sec) => sec.crc32c == fcrc && sec.offset + sec.len == fsize,
                        None => {
                            expected.is_none_or(|e| e.crc32c == Some(fcrc) && e.size == Some(fsize))
                        }
                    };
                if !ok {
                    return Err(EngineError::Invalid(format!(
                        "file {name} in backup piece {rel} does not match its recorded checksum; hint: the piece is damaged, restore from another backup with --from-tag"
                    )));
                }
                if section.is_none() {
                    out.set_len(fsize)
                        .map_err(|e| EngineError::io("set length of", p.as_path(), e))?;
                }
                out.sync_all()
                    .map_err(|e| EngineError::io("sync", p.as_path(), e))?;
                open.remove(&file_index);
                done += 1;
            }
        }
    }
    let summary = r.finish().map_err(|e| EngineError::piece(rel, e))?;
    let c = counters.lock().expect("counters lock").clone();
    let mut row = crate::channel::stat_row(
        "INPUT",
        stats.channel,
        Some(rel.to_string()),
        &c,
        opened,
        crate::util::now_micros(),
        (1 << 20, 1),
    );
    row.piece_no = Some(piece_no);
    stats.input.add(&c);
    stats.rows.push(row);
    if summary.size != size || summary.crc32c != crc {
        return Err(EngineError::Invalid(format!(
            "backup piece {rel} is not the piece the manifest recorded (size {} crc {:08x}, expected size {size} crc {crc:08x}); hint: restore from another backup with --from-tag",
            summary.size, summary.crc32c
        )));
    }
    if let Some((idx, _)) = open.iter().next() {
        return Err(EngineError::Invalid(format!(
            "file {} in backup piece {rel} has no end record; hint: the piece is truncated",
            names.get(*idx as usize).cloned().unwrap_or_default()
        )));
    }
    Ok(done)
}

fn get_open<'a>(
    open: &'a mut HashMap<u32, (File, u32, PathBuf)>,
    idx: u32,
    names: &[String],
    sectioned: &[bool],
    layout: &Layout,
    rel: &str,
) -> Result<&'a mut (File, u32, PathBuf), EngineError> {
    match open.entry(idx) {
        std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
        std::collections::hash_map::Entry::Vacant(v) => {
            let name = names.get(idx as usize).ok_or_else(|| {
                EngineError::Invalid(format!("backup piece {rel} refers to file #{idx}, which its header does not list; hint: the piece is damaged"))
            })?;
            let p = layout.real(name);
            // Sections of one file arrive in several pieces, each opening the file.
            let shared = sectioned.get(idx as usize).copied().unwrap_or(false);
            let f = OpenOptions::new()
                .write(true)
                .create_new(!shared)
                .create(shared)
                .mode(0o600)
                .open(&p)
                .map_err(|e| EngineError::io("create", &p, e))?;
            Ok(v.insert((f, 0, p)))
        }
    }
}
