//! An encrypted repository: its key record, and the sealing driver every object goes
//! through (recman_media::crypt).

use std::sync::Arc;

use recman_media::Media;
use recman_media::crypt::{EncryptedMedia, KeyInfo, KeySource, Keyring};

use super::Repository;
use crate::error::CatalogError;

type Sealed = (Arc<dyn Media>, Option<Arc<Keyring>>);

/// The repository's driver, sealing when the repository has a key record. The key is asked
/// for only then.
pub(super) fn open_sealed(media: Arc<dyn Media>, location: &str) -> Result<Sealed, CatalogError> {
    match Keyring::load(media.as_ref(), || KeySource::current(location))? {
        None => Ok((media, None)),
        Some(k) => {
            let k = Arc::new(k);
            Ok((
                Arc::new(EncryptedMedia::new(media, Arc::clone(&k))),
                Some(k),
            ))
        }
    }
}

/// Image copies are plain data files that PostgreSQL uses in place: an encrypted repository
/// cannot hold them.
pub(super) fn refuse_plain_files(repo: &Repository, rel: &str) -> Result<(), CatalogError> {
    if repo.keys.is_none() {
        return Ok(());
    }
    Err(CatalogError::from(
        recman_media::MediaError::permanent(
            &repo.location,
            rel,
            "the repository is encrypted and an image copy is a plain copy of the data files",
        )
        .with_op("write")
        .with_hint(
            "back up as a backup set (the default), or keep image copies in a plain repository",
        ),
    ))
}

impl Repository {
    /// Makes a new, empty repository encrypted (`create catalog --encrypt`): writes its key
    /// record for the current key, and seals everything written from now on.
    pub fn encrypt(&mut self) -> Result<KeyInfo, CatalogError> {
        if let Some(k) = &self.keys {
            return Ok(k.info().clone());
        }
        let secret = KeySource::current(&self.location)?;
        let keys = Arc::new(Keyring::create(self.media.as_ref(), &secret)?);
        self.media = Arc::new(EncryptedMedia::new(
            Arc::clone(&self.media),
            Arc::clone(&keys),
        ));
        let info = keys.info().clone();
        self.keys = Some(keys);
        Ok(info)
    }

    pub fn is_encrypted(&self) -> bool {
        self.keys.is_some()
    }

    /// Which master key is current, or None for a plain repository.
    pub fn key_info(&self) -> Option<KeyInfo> {
        self.keys.as_ref().map(|k| k.info().clone())
    }

    /// Another device (a tape library, a second tier) as this repository writes to it: sealed
    /// with the repository's keys when the repository is encrypted.
    pub fn seal_device(&self, device: Arc<dyn Media>) -> Arc<dyn Media> {
        match &self.keys {
            Some(k) => Arc::new(EncryptedMedia::new(device, Arc::clone(k))),
            None => device,
        }
    }

    /// `key rotate`: re-wraps the key-encryption keys under the new key (RECMAN_NEW_PASSPHRASE,
    /// --new-key-file, --new-key-command) and replaces the key record atomically.
    pub fn rotate_key(&self) -> Result<KeyInfo, CatalogError> {
        if self.keys.is_none() {
            return Err(CatalogError::from(
                recman_media::MediaError::permanent(
                    &self.location,
                    "",
                    "the repository is not encrypted, so it has no key to rotate",
                )
                .with_op("rotate the key of")
                .with_hint("create an encrypted repository with `recman create catalog --encrypt`"),
            ));
        }
        let old = KeySource::current(&self.location)?;
        let new = KeySource::new_key(&self.location)?;
        // The key record is a clear object: the sealing driver writes it as it is.
        Ok(Keyring::rotate(self.media.as_ref(), &old, &new)?)
    }
}
