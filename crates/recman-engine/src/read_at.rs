//! Positioned reads of a file: a leaf below the data sources that implement them and the page
//! checks that re-read through them.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Positioned reads: what page re-reads and the I/O engines need of a file.
pub trait ReadAt {
    /// Up to `buf.len()` bytes at `off`; fewer only at the end of the file (or a short read
    /// the caller repeats).
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize>;
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, off)
    }
}
