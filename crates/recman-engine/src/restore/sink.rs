//! One backup's pass of a chain restore, and the sink that writes its pieces' chunks: what the
//! whole-piece scan and the index-guided read share, so neither has to reach into the other.

use super::dest::DestFile;
use super::files::Layout;
use super::writer::FileWriter;
use crate::error::EngineError;
use crate::pipeline::stages::FileRef;
use crate::pipeline::{ManifestFiles, Sink};
use crate::progress::Progress;
use recman_format::manifest::ManifestEntry;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

const BS: usize = recman_page::BLCKSZ;

/// Which files of a backup a partial restore writes (`restore database --include-db`,
/// `recover table`): a relative path in, whether it is restored out. Directories are asked
/// too, so an excluded database's directory is not even created.
pub type Keep<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// What newer backups of the chain already wrote.
#[derive(Default)]
pub(super) struct Written {
    /// Files restored whole from a newer backup.
    pub(super) whole: HashSet<String>,
    /// Blocks (bit per block) restored from newer level 1s.
    blocks: HashMap<String, Vec<u64>>,
}

/// One backup's pass over its pieces.
pub(super) struct Pass<'a> {
    /// This backup's own entries, to verify what its pieces say.
    pub(super) own: ManifestFiles<'a>,
    /// The files the restore writes; None: all of them.
    pub(super) keep: Option<Keep<'a>>,
    /// The newest backup's files: only those exist after the restore.
    pub(super) newest: &'a HashMap<&'a str, &'a ManifestEntry>,
    pub(super) written: &'a Mutex<Written>,
    pub(super) layout: &'a Layout,
    pub(super) progress: &'a dyn Progress,
}

impl Pass<'_> {
    /// Whether the restore writes file `name`.
    pub(super) fn keeps(&self, name: &str) -> bool {
        self.keep.is_none_or(|k| k(name))
    }
}

/// The parts of a chunk at `offset` still to write, as (start, len) within it; marks the
/// blocks as written when the chunk comes from a level 1.
pub(super) fn to_write(pass: &Pass, name: &str, offset: u64, len: usize) -> Vec<(usize, usize)> {
    if !pass.newest.contains_key(name) {
        return Vec::new();
    }
    let mut w = pass.written.lock().expect("written lock");
    if w.whole.contains(name) {
        return Vec::new();
    }
    let incremental = pass.own.get(name).is_some_and(|e| e.incremental);
    if !incremental && !w.blocks.contains_key(name) {
        return vec![(0, len)];
    }
    let bits = w.blocks.entry(name.to_string()).or_default();
    let first = (offset / BS as u64) as usize;
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < len {
        let n = (len - at).min(BS);
        let b = first + at / BS;
        if bits.len() <= b / 64 {
            bits.resize(b / 64 + 1, 0);
        }
        if bits[b / 64] & (1 << (b % 64)) == 0 {
            if incremental {
                bits[b / 64] |= 1 << (b % 64);
            }
            match out.last_mut() {
                Some((s, l)) if *s + *l == at => *l += n,
                _ => out.push((at, n)),
            }
        }
        at += n;
    }
    out
}

/// Writes a piece's chunks into the restored files, each block once across the chain.
pub(super) struct RestoreSink<'a, 'p> {
    pub(super) pass: &'a Pass<'p>,
    pub(super) out: &'a mut FileWriter,
    /// The files of the piece being read, open until their end record.
    pub(super) open: HashMap<u32, Arc<dyn DestFile>>,
    /// File parts of the restore that ended (a partial restore counts only its own).
    pub(super) ended: u64,
}

impl Sink for RestoreSink<'_, '_> {
    fn begin(&mut self, _: &recman_format::PieceHeader) -> Result<(), EngineError> {
        self.open.clear();
        self.ended = 0;
        Ok(())
    }

    fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let parts = to_write(self.pass, file.name, offset, data.len());
        if !parts.is_empty() {
            let out = match self.open.entry(file.slot) {
                Entry::Occupied(e) => e.into_mut(),
                // The restore directory was checked empty; files are opened by several pieces
                // (sections) and several backups (a chain).
                Entry::Vacant(v) => {
                    // A piece's own file names are held to the manifest's rules too.
                    super::confine::check_rel("a backup piece being restored", file.name)?;
                    v.insert(
                        self.pass
                            .layout
                            .dest
                            .open(&self.pass.layout.real(file.name))?,
                    )
                }
            };
            for (at, len) in parts {
                self.out
                    .write(out, offset + at as u64, &data[at..at + len])?;
            }
        }
        self.pass.progress.advance(data.len() as u64);
        Ok(())
    }

    fn file_end(&mut self, file: &FileRef, _: u64, _: u32) -> Result<(), EngineError> {
        if let Some(out) = self.open.remove(&file.slot) {
            self.out.end_file(&out)?;
            // The destination syncs it before the restore is done (at once, or with the rest).
            out.sync()?;
        }
        if self.pass.keeps(file.name) {
            self.ended += 1;
        }
        Ok(())
    }
}
