//! Decoders of bytes recman-media gets from outside its control: the frames a media-manager
//! plugin writes (docs/plugin-protocol.md) and the repository's key record `recman.key`.
//! Kept free of I/O drivers so that fuzz/ can exercise them on their own; each returns an
//! error for any input, never panics.

pub mod frame;
pub mod keyrecord;
