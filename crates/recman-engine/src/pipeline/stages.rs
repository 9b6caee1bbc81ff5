//! Stages: steps every verified chunk passes through on its way from the scanner to a sink,
//! stacked in the order given (the way pgBackRest stacks its I/O filters). Chunk checksums,
//! whole-file checksums and decompression are the scanner's own and always run; what is
//! stacked here is what a purpose adds: the page check of validation, and next the
//! decryption stage.

use crate::error::EngineError;
use crate::pagecheck::{PageRules, PageVerdicts, check_stored};
use std::collections::HashMap;

/// One step of the chain.
///
/// Contract: `begin` comes before each (re)read of a piece and drops what an earlier attempt
/// left; `chunk` sees data whose chunk checksum passed, in piece order, and must not keep it;
/// `file_end` comes once per file after its whole-file checksum passed. An error ends the
/// scan. A stage only looks: it does not change what the next stage or the sink receives.
pub(crate) trait Stage {
    fn begin(&mut self) {}
    fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError>;
    fn file_end(&mut self, _file: &FileRef, _size: u64, _crc: u32) -> Result<(), EngineError> {
        Ok(())
    }
}

/// Checks every page of relation files as it was backed up (checksum and header), and
/// collects the verdicts per file.
pub(crate) struct PageCheck<'a> {
    pub checksums: bool,
    pub start_lsn: u64,
    /// Blocks the backup already recorded as changing while read, per file.
    pub volatile: &'a dyn Fn(&str) -> &'a [u32],
    pub pages: u64,
    open: HashMap<u32, PageVerdicts>,
    /// The verdicts of the files ended so far, by name.
    pub done: Vec<(String, PageVerdicts)>,
}

impl<'a> PageCheck<'a> {
    pub fn new(checksums: bool, start_lsn: u64, volatile: &'a dyn Fn(&str) -> &'a [u32]) -> Self {
        PageCheck {
            checksums,
            start_lsn,
            volatile,
            pages: 0,
            open: HashMap::new(),
            done: Vec::new(),
        }
    }
}

impl Stage for PageCheck<'_> {
    fn begin(&mut self) {
        self.pages = 0;
        self.open.clear();
        self.done.clear();
    }

    fn chunk(&mut self, file: &FileRef, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let Some(rf) = recman_page::classify(file.name) else {
            return Ok(());
        };
        let rules = PageRules {
            relfile: &rf,
            checksums: self.checksums,
            start_lsn: Some(self.start_lsn),
            skip: (self.volatile)(file.name),
            logical: false,
        };
        check_stored(
            &rules,
            offset,
            data,
            self.open.entry(file.slot).or_default(),
        );
        self.pages += (data.len() / recman_page::BLCKSZ) as u64;
        Ok(())
    }

    fn file_end(&mut self, file: &FileRef, _: u64, _: u32) -> Result<(), EngineError> {
        let v = self.open.remove(&file.slot).unwrap_or_default();
        self.done.push((file.name.to_string(), v));
        Ok(())
    }
}

/// One file of the piece being scanned, as stages and sinks see it.
#[derive(Clone, Copy)]
pub(crate) struct FileRef<'a> {
    /// Its index in the piece header.
    pub slot: u32,
    /// Its path as the backup recorded it (relative to the data directory), or a WAL name.
    pub name: &'a str,
}
