//! The manifest's file entries, produced lazily while the manifest is written.

use crate::channel_shared::FileOutcome;
use crate::scan::ScannedFile;
use recman_format::manifest::{EntryKind, ManifestEntry, ManifestSection};

/// A file's manifest entry from what its piece(s) recorded; None when no channel read it.
pub(super) fn file_entry(f: &ScannedFile, outs: &[&FileOutcome]) -> Option<ManifestEntry> {
    let first = outs.first()?;
    // A file in sections: its size is where the last section ended, its checksum the
    // sections' checksums combined in file order.
    let (size, crc, sections) = if first.section.is_some() {
        let mut crc = 0u32;
        let mut secs = Vec::new();
        for fo in outs {
            let (start, _) = fo
                .section
                .expect("all pieces of a sectioned file are sections");
            let len = fo.size.saturating_sub(start);
            crc = if secs.is_empty() {
                fo.crc32c
            } else {
                recman_format::crc32c_combine(crc, fo.crc32c, len)
            };
            secs.push(ManifestSection {
                piece_no: fo.piece_no,
                offset: start,
                len,
                crc32c: fo.crc32c,
            });
        }
        // Sections after a shrink read nothing; the file ends where data ended.
        let end = outs.iter().map(|fo| fo.size).max().unwrap_or(0);
        (end, crc, secs)
    } else {
        (first.size, first.crc32c, Vec::new())
    };
    Some(ManifestEntry {
        path: f.rel.clone(),
        kind: EntryKind::File,
        mode: f.mode,
        uid: f.uid,
        gid: f.gid,
        mtime: f.mtime,
        size: Some(size),
        crc32c: Some(crc),
        set_no: Some(first.set_no),
        link_target: None,
        volatile_blocks: outs
            .iter()
            .flat_map(|fo| fo.verdicts.volatile.iter().copied())
            .collect(),
        incremental: first.incremental,
        sections,
    })
}

/// The manifest's entries, produced one at a time while the manifest is written.
pub(super) struct LazyEntries<'a> {
    pub(super) dirs: &'a [ManifestEntry],
    pub(super) files: &'a [ScannedFile],
    pub(super) outs: &'a [Vec<&'a FileOutcome>],
    /// Files left out by backup optimization, held by the parent.
    pub(super) unchanged: &'a [ManifestEntry],
}

impl serde::Serialize for LazyEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(None)?;
        for e in self.dirs {
            seq.serialize_element(e)?;
        }
        for (f, outs) in self.files.iter().zip(self.outs) {
            if let Some(e) = file_entry(f, outs) {
                seq.serialize_element(&e)?;
            }
        }
        for e in self.unchanged {
            seq.serialize_element(e)?;
        }
        seq.end()
    }
}
