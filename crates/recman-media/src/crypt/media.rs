//! [`EncryptedMedia`]: a `Media` that seals what it stores and opens what it reads.

use std::sync::Arc;

use super::envelope::{OpenReader, SealWriter, plain_len};
use super::keyring::{Keyring, is_clear_object};
use crate::error::MediaError;
use crate::media::{Capabilities, Media, MediaReader, MediaWriter, ObjectInfo};

/// Wraps a driver: every object but the marker and the key record is sealed. Sizes are the
/// plaintext's, so recorded piece sizes and crosschecks mean the same as in a plain
/// repository.
#[derive(Debug, Clone)]
pub struct EncryptedMedia {
    inner: Arc<dyn Media>,
    keys: Arc<Keyring>,
}

impl EncryptedMedia {
    pub fn new(inner: Arc<dyn Media>, keys: Arc<Keyring>) -> EncryptedMedia {
        EncryptedMedia { inner, keys }
    }

    pub fn keys(&self) -> &Arc<Keyring> {
        &self.keys
    }

    pub fn inner(&self) -> &Arc<dyn Media> {
        &self.inner
    }
}

impl Media for EncryptedMedia {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn create(&self, name: &str) -> Result<Box<dyn MediaWriter>, MediaError> {
        let w = self.inner.create(name)?;
        if is_clear_object(name) {
            return Ok(w);
        }
        let w = SealWriter::new(w, &self.keys, name)
            .map_err(|e| MediaError::io(&self.inner.describe(), name, "write", e))?;
        Ok(Box::new(w))
    }

    fn open(&self, name: &str) -> Result<Box<dyn MediaReader>, MediaError> {
        let r = self.inner.open(name)?;
        if is_clear_object(name) {
            return Ok(r);
        }
        Ok(Box::new(OpenReader::new(
            r,
            &self.keys,
            &self.inner.describe(),
            name,
        )?))
    }

    fn stat(&self, name: &str) -> Result<Option<u64>, MediaError> {
        let s = self.inner.stat(name)?;
        if is_clear_object(name) {
            return Ok(s);
        }
        // A size no sealed object can have is passed on as it is: the recorded size will not
        // match, and the open says why.
        Ok(s.map(|n| plain_len(n).unwrap_or(n)))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, MediaError> {
        let mut v = self.inner.list(prefix)?;
        for o in &mut v {
            if !is_clear_object(&o.name) {
                o.size = plain_len(o.size).unwrap_or(o.size);
            }
        }
        Ok(v)
    }

    fn remove(&self, name: &str) -> Result<bool, MediaError> {
        self.inner.remove(name)
    }

    fn object_lock(&self) -> Option<&dyn crate::media::ObjectLock> {
        self.inner.object_lock()
    }
}
