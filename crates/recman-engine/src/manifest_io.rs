//! Reading and writing backup manifests with their own checksum (recman-format's seal): every
//! manifest recman writes is sealed, and every manifest it trusts (restore, validate, rebuild,
//! an image copy's state) is checked first. In a repository with a MAC key the seal also
//! carries an HMAC under that key, bound to the manifest's object name. A manifest that fails
//! is named with what failed.

use crate::context::Context;
use crate::error::EngineError;
use recman_catalog::Repository;
use recman_format::manifest::BackupManifest;
use recman_format::seal::{MacFor, SealError, read_sealed_with, write_sealed_with};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::Write;

/// Writes `m` sealed into `w`, an object of `repo` being written at `rel`.
pub(crate) fn write<W: Write, T: Serialize>(
    repo: &Repository,
    w: W,
    m: &T,
    rel: &str,
) -> Result<(), EngineError> {
    let key = repo.mac_key()?;
    let mac = key.as_deref().map(|key| MacFor { key, name: rel });
    write_sealed_with(w, m, mac).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            EngineError::io("write manifest", rel, e)
        } else {
            EngineError::Failed {
                kind: crate::error::ErrorKind::of_io(&e),
                message: format!("cannot write manifest {rel}: {e}"),
            }
        }
    })
}

/// Checks and parses manifest `bytes` read from object `rel` of `repo`; `what` names it in
/// messages (its path, and the backup it describes), `hint` says what to do instead.
pub(crate) fn read<T: DeserializeOwned>(
    repo: &Repository,
    bytes: &[u8],
    rel: &str,
    what: &str,
    hint: &str,
) -> Result<T, EngineError> {
    let key = repo.mac_key()?;
    let mac = key.as_deref().map(|key| MacFor { key, name: rel });
    read_sealed_with(bytes, mac).map_err(|e| match e {
        SealError::Json(e) => EngineError::Corrupt(format!("{what} is damaged: {e}; hint: {hint}")),
        e @ (SealError::MacMismatch | SealError::MacMissing) => EngineError::Corrupt(format!(
            "{what} cannot be trusted: {e}; hint: if the MAC key given (--mac-key-file, --mac-key-command, RECMAN_MAC_KEY) is not the one the backup was made with, give that one; otherwise the manifest was tampered with: keep it for inspection and {hint}"
        )),
        e => EngineError::Corrupt(format!("{what} cannot be trusted: {e}; hint: {hint}")),
    })
}

/// Reads and checks one backup's manifest from the repository.
pub(crate) fn load_manifest(ctx: &Context, backup_id: &str) -> Result<BackupManifest, EngineError> {
    let rel = recman_catalog::layout::manifest(&ctx.db.name, backup_id);
    let path = format!("{}/{rel}", ctx.repo.location());
    let bytes = ctx.repo.media().get(&rel)?;
    let m: BackupManifest = crate::manifest_io::read(
        &ctx.repo,
        &bytes,
        &rel,
        &format!("backup manifest {path} (backup {backup_id})"),
        "restore from another backup with --from-tag",
    )?;
    if m.version > recman_format::manifest::MANIFEST_VERSION {
        return Err(crate::refusal::Backups::ManifestTooNew {
            path: path.to_string(),
            version: m.version,
        }
        .into());
    }
    Ok(m)
}
