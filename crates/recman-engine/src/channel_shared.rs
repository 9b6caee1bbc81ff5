//! What a backup's channels share, and what reading one file yields: below both the channel and
//! the tracked reads it runs, so that neither imports the other.

use crate::io::IoSettings;
use crate::pagecheck::{PageRules, PageVerdicts};
use crate::plan::PlannedSet;
use crate::progress::Progress;
use crate::scan::ScannedFile;
use recman_format::PieceHeader;
use std::collections::VecDeque;
use std::sync::Mutex;

pub struct ChannelShared<'a> {
    /// Each channel opens its own handle: a catalog connection is not shared between threads.
    /// None for BACKUP VALIDATE without a repository: statistics rows are not stored.
    pub repo: Option<recman_catalog::RepoHandle>,
    /// Where this backup's pieces go: the repository's media or another device's.
    /// None: BACKUP VALIDATE, every file read and checked as for a backup, nothing written.
    pub output: Option<std::sync::Arc<dyn recman_media::Media>>,
    pub files: &'a [ScannedFile],
    /// Where the cluster's files are read: its data directory here, or its agent.
    pub source: &'a dyn crate::source::DataSource,
    /// Where relation files are read from when not from `source`: a standby's data directory.
    pub relation_source: Option<&'a dyn crate::source::DataSource>,
    pub header: PieceHeader,
    pub backup_dir: String,
    pub checksums: bool,
    /// CHECK LOGICAL: heap and B-tree pages are checked inside beyond checksum and header.
    pub logical: bool,
    /// Pages newer than this were being written while read (volatile, repaired by WAL
    /// replay), not corrupt; None: every failing page is corrupt (a cluster shut down).
    pub start_lsn: Option<u64>,
    pub progress: &'a dyn Progress,
    pub io: &'a IoSettings,
    /// For a level 1: the parent whose blocks are not taken again.
    pub increment: Option<&'a crate::incremental::Increment>,
    /// For a level 1 whose range change tracking answers for: the blocks to read.
    pub tracking: Option<&'a crate::tracking::Tracking>,
    /// Work not yet taken by a channel, heaviest first.
    pub queue: &'a Mutex<VecDeque<Unit<'a>>>,
    /// FORMAT with a location: each piece is named by it on `output`.
    pub format: Option<&'a crate::piece_format::PieceFormat>,
    /// A backup's meters, shared pacing and DURATION window; None for validation.
    pub live: Option<&'a crate::window::Live>,
    /// The chooser of direct or buffered reads for the files the page cache does not hold
    /// ([`crate::read_mode::ReadMode::Auto`]), shared by the channels.
    pub read_way: &'a crate::adapt::Adaptive,
}

impl<'a> ChannelShared<'a> {
    /// The page checks a channel applies to relation file `rf` as it reads it.
    pub(crate) fn page_rules<'r>(&self, rf: &'r recman_page::RelFile) -> PageRules<'r> {
        PageRules {
            relfile: rf,
            checksums: self.checksums,
            start_lsn: self.start_lsn,
            skip: &[],
            logical: self.logical,
        }
    }
}

#[derive(Debug, Clone)]
pub struct FileOutcome {
    pub index: usize,
    pub set_no: u32,
    /// The byte range this piece holds when the file is backed up in sections.
    pub section: Option<(u64, u64)>,
    pub piece_no: u32,
    /// Only blocks changed since the parent were written.
    pub incremental: bool,
    pub size: u64,
    pub crc32c: u32,
    pub verdicts: PageVerdicts,
    /// Pages checked (whole pages of a relation file's chunks).
    pub pages: u64,
    /// Dropped by the server after it was listed.
    pub vanished: bool,
}

impl ChannelShared<'_> {
    /// Whether file `index` is backed up by changed blocks only: a relation file the parent
    /// also had. Everything else goes whole, and so do visibility map forks (clearing a bit
    /// does not advance the map page's LSN) and files change tracking says were created or
    /// copied in the range.
    pub(crate) fn filtered(&self, index: usize) -> bool {
        let f = &self.files[index];
        self.increment.is_some_and(|i| {
            f.relfile.as_ref().is_some_and(|rf| {
                rf.fork != recman_page::Fork::Vm && !self.tracking.is_some_and(|t| t.whole(rf))
            }) && i.known.contains(&f.rel)
        })
    }

    /// The source file `index` is read from: a standby's for relation files when the
    /// backup reads from one, else the target's own.
    pub(crate) fn source_of(&self, index: usize) -> &dyn crate::source::DataSource {
        match self.relation_source {
            Some(r) if self.files[index].relfile.is_some() => r,
            _ => self.source,
        }
    }

    /// The path file `index` is opened by and named by in messages.
    pub(crate) fn path_of(&self, index: usize) -> std::path::PathBuf {
        self.source_of(index).path_of(&self.files[index].rel)
    }
}

/// One piece to write: a whole backup set, or one section of a multisection set.
#[derive(Clone, Copy, Debug)]
pub struct Unit<'a> {
    pub set: &'a PlannedSet,
    pub piece_no: u32,
    pub range: Option<(u64, u64)>,
}

impl Unit<'_> {
    pub fn bytes(&self) -> u64 {
        self.range.map(|(a, b)| b - a).unwrap_or(self.set.bytes)
    }

    /// Every unit of a plan: sections become pieces of their set, taken by any channel.
    pub fn all(sets: &[PlannedSet]) -> Vec<Unit<'_>> {
        let mut v = Vec::new();
        for set in sets {
            if set.sections.is_empty() {
                v.push(Unit {
                    set,
                    piece_no: 1,
                    range: None,
                });
            } else {
                for (i, r) in set.sections.iter().enumerate() {
                    v.push(Unit {
                        set,
                        piece_no: i as u32 + 1,
                        range: Some(*r),
                    });
                }
            }
        }
        v.sort_by_key(|u| std::cmp::Reverse(u.bytes()));
        v
    }
}
