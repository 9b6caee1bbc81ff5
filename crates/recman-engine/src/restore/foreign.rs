//! Restoring an imported backup: its files are read through the origin (each checked against
//! the origin's checksum as it is read) and written into the restore's layout, over the
//! restore's channels; directories, links, lengths and modes come from recman's manifest of
//! it, as for recman's own backups. A file that fails its check stops the restore, which
//! then removes what it wrote: the restored directory is never left to be started.

use super::files::{Layout, apply_metadata, make_entries};
use crate::error::EngineError;
use crate::foreign::{ForeignEntry, ImportError, Opened, file_failure, open_origin};
use crate::progress::Progress;
use recman_catalog::IoStatRow;
use recman_format::manifest::{BackupManifest, EntryKind};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::Mutex;

const CHUNK: usize = 1 << 20;

/// Restores the newest backup of `chain` (imported backups, oldest first) into `layout`;
/// returns (files, bytes, statistics rows).
pub(crate) fn restore_foreign(
    chain: &[BackupManifest],
    layout: &Layout,
    channels: u32,
    progress: &dyn Progress,
) -> Result<(u64, u64, Vec<IoStatRow>), EngineError> {
    let m = chain.last().expect("a chain has at least one backup");
    let opened = open_origin(chain)?;
    let by_path: HashMap<&str, &ForeignEntry> = opened
        .entries()
        .iter()
        .map(|e| (e.path.as_str(), e))
        .collect();
    let mut files: Vec<&ForeignEntry> = Vec::new();
    for e in m.entries.iter().filter(|e| e.kind == EntryKind::File) {
        let Some(f) = by_path.get(e.path.as_str()) else {
            return Err(ImportError::NotFound(format!(
                "{} no longer lists file {} that was imported; hint: the origin changed since `catalog import`: import it again, or restore another backup",
                opened.describe(),
                e.path
            ))
            .into());
        };
        // backup_label and tablespace_map too: recovery's set-up writes them again after.
        if f.size > 0 {
            files.push(f);
        }
    }
    make_entries(m, layout)?;
    let total: u64 = files.iter().map(|f| f.size).sum();
    progress.start("restore", total);
    if opened.streams() > 0 {
        copy_streams(opened.as_ref(), &files, layout, channels, progress)?;
    } else {
        copy_files(opened.as_ref(), files, layout, channels, progress)?;
    }
    layout.dest.flush()?;
    let lens: Vec<_> = m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| (layout.real(&e.path), e.size.unwrap_or(0)))
        .collect();
    layout.dest.set_len_all(&lens)?;
    apply_metadata(m, layout)?;
    progress.finish();
    Ok((lens.len() as u64, total, Vec::new()))
}

/// Files opened one by one: largest first, each to the least loaded channel.
fn copy_files(
    o: &dyn Opened,
    mut files: Vec<&ForeignEntry>,
    layout: &Layout,
    channels: u32,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    files.sort_by_key(|f| std::cmp::Reverse(f.size));
    let n = channels.max(1) as usize;
    let mut lanes: Vec<Vec<&ForeignEntry>> = vec![Vec::new(); n];
    let mut load = vec![0u64; n];
    for f in files {
        let k = (0..n).min_by_key(|&k| load[k]).expect("channels > 0");
        load[k] += f.size;
        lanes[k].push(f);
    }
    crate::pipeline::pool::each(n, "restore", |w| {
        for f in &lanes[w.no as usize - 1] {
            w.check()?;
            let mut r = o.open(f).map_err(|e| failed(o, f, &e.to_string()))?;
            copy_file(o, f, &mut r, layout, progress)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Files stored in streams (tar files): each stream read once, from start to end, one
/// stream per channel at a time; a file the streams do not hold stops the restore.
fn copy_streams(
    o: &dyn Opened,
    files: &[&ForeignEntry],
    layout: &Layout,
    channels: u32,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    let wanted: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let seen = Mutex::new(HashSet::new());
    let streams = o.streams();
    let n = (channels.max(1) as usize).min(streams);
    crate::pipeline::pool::each(n, "restore", |w| {
        for k in (w.no as usize - 1..streams).step_by(n) {
            o.visit(k, &mut |f, r| {
                w.check()?;
                if !wanted.contains(f.path.as_str()) {
                    return Ok(());
                }
                copy_file(o, f, r, layout, progress)?;
                seen.lock().expect("seen lock").insert(f.path.clone());
                Ok(())
            })?;
        }
        Ok(())
    })?;
    let seen = seen.into_inner().expect("seen lock");
    if let Some(f) = files.iter().find(|f| !seen.contains(&f.path)) {
        return Err(failed(o, f, "it is in none of the backup's tar files"));
    }
    Ok(())
}

fn failed(o: &dyn Opened, f: &ForeignEntry, why: &str) -> EngineError {
    EngineError::Corrupt(format!(
        "{}; hint: the restore stops here and removes what it wrote; restore another backup (`--from-tag`), or validate this one (`recman validate backup`)",
        file_failure(o, f, why)
    ))
}

/// Copies one file from the origin into the layout, then makes it durable.
fn copy_file(
    o: &dyn Opened,
    f: &ForeignEntry,
    r: &mut dyn Read,
    layout: &Layout,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    super::confine::check_rel("an imported backup being restored", &f.path)?;
    let path = layout.real(&f.path);
    let failed = |why: String| failed(o, f, &why);
    let out = layout.dest.open(&path)?;
    let mut buf = vec![0u8; CHUNK];
    let mut bounce = None;
    let mut at = 0u64;
    loop {
        let n = crate::foreign::read_full(r, &mut buf).map_err(|e| failed(e.to_string()))?;
        if n == 0 {
            break;
        }
        out.write_at(&buf[..n], at, &mut bounce)?;
        at += n as u64;
        progress.advance(n as u64);
    }
    out.sync()
}
