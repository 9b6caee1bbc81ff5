//! Reading and writing backup manifests with their own checksum (recman-format's seal): every
//! manifest recman writes is sealed, and every manifest it trusts (restore, validate, rebuild,
//! an image copy's state) is checked first. A manifest that fails is named with what failed.

use crate::EngineError;
use recman_format::seal::{SealError, read_sealed, write_sealed};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::Write;

/// Writes `m` sealed into `w` (an object being written at `rel`).
pub(crate) fn write<W: Write, T: Serialize>(w: W, m: &T, rel: &str) -> Result<(), EngineError> {
    write_sealed(w, m).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            EngineError::io("write manifest", rel, e)
        } else {
            EngineError::Failed {
                kind: crate::ErrorKind::of_io(&e),
                message: format!("cannot write manifest {rel}: {e}"),
            }
        }
    })
}

/// Checks and parses manifest `bytes` read from `path`; `hint` says what to do instead.
pub(crate) fn read<T: DeserializeOwned>(
    bytes: &[u8],
    path: &str,
    hint: &str,
) -> Result<T, EngineError> {
    read_sealed(bytes).map_err(|e| match e {
        SealError::Json(e) => EngineError::Corrupt(format!(
            "backup manifest {path} is damaged: {e}; hint: {hint}"
        )),
        e => EngineError::Corrupt(format!(
            "backup manifest {path} cannot be trusted: {e}; hint: {hint}"
        )),
    })
}
