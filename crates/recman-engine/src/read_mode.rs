//! How data files are read (direct, buffered, or as the page cache suggests): a leaf below both
//! the data sources, which open files that way, and the I/O engine's settings, which carry it.

use std::fmt;

/// How a backup or validation reads the cluster's data files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// Each file (or section) the cheaper way: through the page cache when at least half of it
    /// is cached there, directly otherwise (see [`crate::residency`]). A cluster on a
    /// remote host is read directly.
    #[default]
    Auto,
    /// O_DIRECT where the file system allows it: no copy through the page cache (the CPU cost
    /// of a buffered read) and no eviction of the database's working set by a backup.
    Direct,
    /// Through the page cache, always.
    Buffered,
}

impl fmt::Display for ReadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadMode::Auto => "auto",
            ReadMode::Direct => "direct",
            ReadMode::Buffered => "buffered",
        })
    }
}
