//! Encryption at rest: every object of an encrypted repository (pieces, archived WAL,
//! manifests, copies on other devices) is sealed with AES-256-GCM by [`EncryptedMedia`], a
//! `Media` that wraps the real driver. Sealing at the media seam means every writer and
//! reader, on every driver, gets it without knowing.
//!
//! Key hierarchy (docs/security.md):
//! - the **master key**: Argon2id of the passphrase (salt and parameters in the key record),
//!   or 32 bytes given as 64 hex digits by a key file or key command;
//! - **key-encryption keys** (KEKs): random, wrapped by the master key in the key record
//!   `recman.key`; rotation adds a new one and re-wraps them all under the new master key;
//! - a random **data key per object**, wrapped by the current KEK in the object's own header.
//!
//! Rotation therefore rewrites one small object atomically and no data object.

mod envelope;
mod keyring;
mod media;
mod source;
#[cfg(test)]
mod tests;

pub use envelope::{HEADER_LEN, SEGMENT, plain_len};
pub use keyring::{KEY_RECORD, KeyInfo, Keyring, is_clear_object, try_random};
pub use media::EncryptedMedia;
pub use source::{KeySource, Secret, set_key_source, set_mac_key_source};
