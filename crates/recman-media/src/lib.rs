//! Media managers: where backup pieces, manifests and archived WAL are stored.
//!
//! Every driver (local disk, S3-compatible object storage, Azure Blob Storage, Google Cloud
//! Storage, the virtual tape library, an
//! external plugin process) implements [`Media`], and one conformance suite
//! ([`conformance::run`]) holds them to the same contract. The engine never touches a path of
//! a repository directly; it names objects ("main/backup/B1/p1.piece") and the driver decides
//! where they live.

pub mod conformance;
pub mod crypt;
mod direct;
/// Memory one piece written with O_DIRECT holds: its aligned blocks in flight and filling.
pub const DIRECT_WRITE_MEMORY: u64 = ((direct::DEPTH + 1) * direct::BLOCK) as u64;
pub mod azure;
pub mod disk;
mod error;
pub mod gcs;
mod media;
pub mod meter;
pub mod modes;
pub mod plugin;
mod retention;
pub mod s3;
mod size;
mod spec;
/// Test helpers (a local S3 server, a fault proxy, prerequisite checks) for the workspace's
/// tests; only builds with the `testkit` feature, which test builds turn on through
/// dev-dependencies, have them.
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod vtape;

pub use error::{ErrorClass, MediaError};
pub use media::{
    Capabilities, Media, MediaReader, MediaWriter, ObjectInfo, ObjectLock, check_name,
};
pub use retention::{LockMode, Retention};
pub use size::parse_size;
pub use spec::{open_spec, open_spec_as_of, set_azure_settings, set_gcs_settings};
