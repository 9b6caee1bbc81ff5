//! Manifests and archived WAL authenticated under a key kept outside the repository
//! (HMAC-SHA-256): the marker says that MACs are required and names the key by its id; the
//! key comes from `--mac-key-file`, `--mac-key-command` or `RECMAN_MAC_KEY`, and is asked for
//! only when a manifest or archived WAL file is written or read, so commands that touch
//! neither (list, report, register) run without it.

use std::sync::{Arc, OnceLock};

use recman_format::seal::{MAC_ALGORITHM, MacKey};
use recman_media::crypt::KeySource;

use super::{Marker, Repository};
use crate::error::CatalogError;

/// What the marker of a repository with manifest MACs records: the algorithm and the public
/// id of the key ([`MacKey::key_id`]), never the key.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MarkerMac {
    pub algorithm: String,
    pub key_id: String,
}

impl MarkerMac {
    pub(super) fn check(&self) -> Result<(), String> {
        if self.algorithm != MAC_ALGORITHM {
            return Err(format!(
                "its manifest MAC algorithm is {:?}, and this recman knows {MAC_ALGORITHM:?} only",
                self.algorithm
            ));
        }
        Ok(())
    }
}

/// Whether the repository requires MACs, and the key once it was given and checked.
#[derive(Clone, Debug, Default)]
pub(super) struct MacState {
    required: Option<MarkerMac>,
    key: Arc<OnceLock<Arc<MacKey>>>,
}

impl MacState {
    pub(super) fn of(marker: &Marker) -> MacState {
        MacState {
            required: marker.mac.clone(),
            key: Arc::default(),
        }
    }
}

/// The MAC key given for `location`, when one is given; it must be 32 bytes as 64 hex digits.
fn given_key(location: &str) -> Result<Option<MacKey>, CatalogError> {
    let Some(secret) = KeySource::mac_key(location)? else {
        return Ok(None);
    };
    match secret.raw_key() {
        Some(k) => Ok(Some(MacKey::new(k))),
        None => Err(CatalogError::BadMacKey {
            location: location.to_string(),
        }),
    }
}

/// What the marker of a repository being created records: MACs are required when a MAC key is
/// given at `create catalog`.
pub(super) fn for_new_repository(location: &str) -> Result<Option<MarkerMac>, CatalogError> {
    Ok(given_key(location)?.map(|k| MarkerMac {
        algorithm: MAC_ALGORITHM.to_string(),
        key_id: k.key_id(),
    }))
}

impl Repository {
    /// The key every manifest and archived WAL file of this repository is written and checked
    /// with, or None for a repository without MACs. Refuses a missing or wrong key, and a key given for
    /// a repository whose marker does not require MACs: that marker may have been replaced
    /// to strip them, and the user who holds a key expects them checked.
    pub fn mac_key(&self) -> Result<Option<Arc<MacKey>>, CatalogError> {
        if let Some(k) = self.mac.key.get() {
            return Ok(Some(Arc::clone(k)));
        }
        let given = given_key(&self.location)?;
        match (&self.mac.required, given) {
            (None, None) => Ok(None),
            (None, Some(k)) => Err(CatalogError::MacNotRequired {
                location: self.location.clone(),
                given: k.key_id(),
            }),
            (Some(_), None) => Err(CatalogError::MacKeyMissing {
                location: self.location.clone(),
            }),
            (Some(r), Some(k)) if k.key_id() != r.key_id => Err(CatalogError::WrongMacKey {
                location: self.location.clone(),
                recorded: r.key_id.clone(),
                given: k.key_id(),
            }),
            (Some(_), Some(k)) => Ok(Some(Arc::clone(self.mac.key.get_or_init(|| Arc::new(k))))),
        }
    }

    /// Whether the repository's marker requires manifest MACs, and under which key id.
    pub fn mac_required(&self) -> Option<&MarkerMac> {
        self.mac.required.as_ref()
    }
}
