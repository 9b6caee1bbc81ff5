//! An in-memory media driver: objects in a shared map, for engine-level tests that need a
//! device but no disk, server or binary. It keeps the `Media` contract (the conformance suite
//! runs against it) and lets a test reach under it: damage a byte of a stored object, or make
//! the next reads fail with a chosen error class.

use recman_media::{
    Capabilities, ErrorClass, Media, MediaError, MediaReader, MediaWriter, ObjectInfo,
};
use std::collections::BTreeMap;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

#[derive(Default, Debug)]
struct Store {
    objects: BTreeMap<String, Arc<Vec<u8>>>,
    /// When set, every open fails with this class (a device that went away).
    fail_opens: Option<ErrorClass>,
}

/// The in-memory device. Clones share the same objects.
#[derive(Clone, Debug, Default)]
pub struct MemMedia {
    name: String,
    store: Arc<Mutex<Store>>,
}

impl MemMedia {
    pub fn new(name: &str) -> MemMedia {
        MemMedia {
            name: name.to_string(),
            store: Arc::default(),
        }
    }

    /// The committed bytes of `name`.
    pub fn bytes(&self, name: &str) -> Option<Vec<u8>> {
        let s = self.store.lock().expect("store lock");
        s.objects.get(name).map(|b| b.as_ref().clone())
    }

    /// Flips the bits of byte `offset` of object `name` (damage at rest).
    pub fn corrupt(&self, name: &str, offset: usize) {
        let mut s = self.store.lock().expect("store lock");
        let obj = s
            .objects
            .get_mut(name)
            .unwrap_or_else(|| panic!("no object {name} on {}", self.name));
        let mut data = obj.as_ref().clone();
        assert!(offset < data.len(), "{name} has only {} bytes", data.len());
        data[offset] ^= 0xff;
        *obj = Arc::new(data);
    }

    /// Makes every later open fail with `class` (None: work again).
    pub fn fail_opens(&self, class: Option<ErrorClass>) {
        self.store.lock().expect("store lock").fail_opens = class;
    }

    /// The names of every committed object.
    pub fn names(&self) -> Vec<String> {
        let s = self.store.lock().expect("store lock");
        s.objects.keys().cloned().collect()
    }
}

impl Media for MemMedia {
    fn describe(&self) -> String {
        format!("memory {}", self.name)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::RANDOM_ACCESS
    }

    fn create(&self, name: &str) -> Result<Box<dyn MediaWriter>, MediaError> {
        recman_media::check_name(&self.describe(), name)?;
        Ok(Box::new(MemWriter {
            name: name.to_string(),
            data: Vec::new(),
            store: self.store.clone(),
        }))
    }

    fn open(&self, name: &str) -> Result<Box<dyn MediaReader>, MediaError> {
        recman_media::check_name(&self.describe(), name)?;
        let s = self.store.lock().expect("store lock");
        if let Some(class) = s.fail_opens {
            return Err(MediaError::new(
                class,
                &self.describe(),
                name,
                "open",
                "the device does not answer (made to fail by the test)".into(),
            ));
        }
        match s.objects.get(name) {
            Some(data) => Ok(Box::new(MemReader {
                data: Cursor::new(data.clone()),
            })),
            None => Err(MediaError::not_found(&self.describe(), name)),
        }
    }

    fn stat(&self, name: &str) -> Result<Option<u64>, MediaError> {
        recman_media::check_name(&self.describe(), name)?;
        let s = self.store.lock().expect("store lock");
        Ok(s.objects.get(name).map(|d| d.len() as u64))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, MediaError> {
        let s = self.store.lock().expect("store lock");
        Ok(s.objects
            .range(prefix.to_string()..)
            .take_while(|(n, _)| n.starts_with(prefix))
            .map(|(n, d)| ObjectInfo {
                name: n.clone(),
                size: d.len() as u64,
            })
            .collect())
    }

    fn remove(&self, name: &str) -> Result<bool, MediaError> {
        recman_media::check_name(&self.describe(), name)?;
        let mut s = self.store.lock().expect("store lock");
        Ok(s.objects.remove(name).is_some())
    }
}

/// A write held aside until commit, so nobody sees a partial object.
struct MemWriter {
    name: String,
    data: Vec<u8>,
    store: Arc<Mutex<Store>>,
}

impl Write for MemWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.data.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl MediaWriter for MemWriter {
    fn commit(self: Box<Self>) -> Result<u64, MediaError> {
        let n = self.data.len() as u64;
        let mut s = self.store.lock().expect("store lock");
        s.objects.insert(self.name, Arc::new(self.data));
        Ok(n)
    }

    fn abort(self: Box<Self>) {}
}

struct MemReader {
    data: Cursor<Arc<Vec<u8>>>,
}

impl Read for MemReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let pos = self.data.position() as usize;
        let all = self.data.get_ref().as_slice();
        let n = buf.len().min(all.len().saturating_sub(pos));
        buf[..n].copy_from_slice(&all[pos..pos + n]);
        self.data.set_position((pos + n) as u64);
        Ok(n)
    }
}

impl Seek for MemReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let len = self.data.get_ref().len() as i64;
        let pos = match to {
            SeekFrom::Start(p) => p as i64,
            SeekFrom::End(d) => len + d,
            SeekFrom::Current(d) => self.data.position() as i64 + d,
        };
        if pos < 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the object",
            ));
        }
        self.data.set_position(pos as u64);
        Ok(pos as u64)
    }
}

impl MediaReader for MemReader {
    fn len(&self) -> u64 {
        self.data.get_ref().len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_driver_keeps_the_media_contract() {
        let m = MemMedia::new("conformance");
        recman_media::conformance::run(&m, "run1", 3 << 20);
    }

    #[test]
    fn a_test_can_damage_what_is_stored() {
        let m = MemMedia::new("t");
        m.put("a/b", b"hello").unwrap();
        m.corrupt("a/b", 1);
        assert_eq!(m.get("a/b").unwrap(), b"h\x9allo");
        m.fail_opens(Some(ErrorClass::Transient));
        assert_eq!(m.open("a/b").err().unwrap().class, ErrorClass::Transient);
    }
}
