//! The piece pipeline: every piece is written by one [`SetWriter`] and read by one scanner
//! ([`scanner`]), which verifies it and feeds a [`Sink`] through a chain of [`Stage`]s; work
//! spread over threads runs in one [`pool`]. docs/pipeline.md draws the data path.

pub(crate) mod pool;
pub(crate) mod scanner;
pub(crate) mod stages;
pub(crate) mod stats;
mod writer;

pub(crate) use scanner::{
    AnyFile, Expect, Failover, ManifestFiles, NullSink, OpenPiece, Scan, Scanned, Sink, Wording,
    scan_from,
};
pub(crate) use stages::PageCheck;
pub(crate) use writer::{ObjectWriter, OutputShape, SetOut, SetWriter, Uncommitted, WrittenPiece};
