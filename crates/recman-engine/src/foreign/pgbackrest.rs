//! pgBackRest repositories, read in place: info files and manifests (checked against their
//! own SHA-1), backup files whole or in bundles, gz/lz4/zst/bz2 compression, AES-256-CBC
//! encryption with the repository's passphrase, and the WAL archive. Read from pgBackRest's
//! documented behaviour and from repositories its 2.45 release wrote; nothing is written.

pub mod archive;
pub mod cipher;
pub mod config;
pub mod ini;
pub mod manifest;
pub mod repo;

pub use repo::Repo;
