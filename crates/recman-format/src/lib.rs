//! recman-format: the backup piece container (format v1) and the backup
//! manifest.
//!
//! A backup piece is one file (or tape file) of a backup set. It is written
//! front to back without seeking:
//!
//! ```text
//! piece header | record* | index record | footer
//! ```
//!
//! * the header names the backup, set and piece and lists the set's files;
//! * records are chunks of file data (up to [`MAX_CHUNK`] raw bytes each,
//!   compressed per chunk, CRC-32C per chunk) and file-end markers; chunks
//!   of several files interleave (multiplexing);
//! * the index lists, per file, where its chunks are, so one file can be
//!   restored without reading the rest of the piece;
//! * the fixed-size footer points at the index and holds the CRC-32C of the
//!   whole piece.
//!
//! The byte layout is specified in `docs/format.md`.

pub mod manifest;
pub mod seal;

mod codec;
mod crc;
mod error;
mod layout;
mod random;
mod reader;
mod types;
mod writer;

pub use crc::{crc32c, crc32c_append, crc32c_combine};
pub use error::FormatError;
pub use layout::*;
pub use random::*;
pub use reader::*;
pub use types::*;
pub use writer::*;
