//! The sealed object: a header, then the plaintext in segments of [`SEGMENT`] bytes, each
//! sealed with AES-256-GCM under the object's own random data key.
//!
//! ```text
//! 0   8  magic "RMCRYPT1"
//! 8   4  segment size (plaintext bytes per segment)
//! 12  4  reserved, 0
//! 16  16 id of the key-encryption key that wrapped the data key
//! 32  12 nonce of the wrap
//! 44  48 the data key, wrapped (32 bytes + 16-byte tag)
//! 92     segments: ciphertext ‖ tag (16)
//! ```
//!
//! Segment i's nonce is i (8 bytes LE) ‖ final flag ‖ 0 0 0, unique because each data key
//! seals one object. Its associated data is the header, the object's name, i and the final
//! flag: a segment moved to another position or object, a dropped segment or a cut at a
//! segment boundary (the new last segment was not sealed as final) fails authentication.
//! The last segment holds less than SEGMENT bytes (possibly none), so the plaintext length
//! follows from the object's size.

use std::io::{self, Read, Seek, SeekFrom, Write};

use aes_gcm::Nonce;
use aes_gcm::aead::{Aead, Payload};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, UnboundKey};

use super::keyring::{Keyring, hex, random};
use crate::error::MediaError;
use crate::media::{MediaReader, MediaWriter};

pub const SEGMENT: usize = 64 * 1024;
pub const HEADER_LEN: usize = 92;
const TAG: usize = 16;
const MAGIC: &[u8; 8] = b"RMCRYPT1";

/// The plaintext length of a sealed object of `sealed` bytes, or None when no sealed object
/// has that size.
pub fn plain_len(sealed: u64) -> Option<u64> {
    let body = sealed.checked_sub((HEADER_LEN + TAG) as u64)?;
    let full = body / (SEGMENT + TAG) as u64;
    let rest = body % (SEGMENT + TAG) as u64;
    (rest < SEGMENT as u64).then_some(full * SEGMENT as u64 + rest)
}

fn nonce(i: u64, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&i.to_le_bytes());
    n[8] = u8::from(last);
    n
}

fn ad(header: &[u8], name: &str, i: u64, last: bool) -> Vec<u8> {
    let mut a = Vec::with_capacity(header.len() + name.len() + 16);
    a.extend_from_slice(header);
    a.extend_from_slice(&(name.len() as u64).to_le_bytes());
    a.extend_from_slice(name.as_bytes());
    a.extend_from_slice(&i.to_le_bytes());
    a.push(u8::from(last));
    a
}

fn wrap_ad(fixed: &[u8], name: &str) -> Vec<u8> {
    let mut a = b"recman-dek\0".to_vec();
    a.extend_from_slice(fixed);
    a.extend_from_slice(name.as_bytes());
    a
}

fn seal_key(k: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, k).expect("a 32-byte key"))
}

/// A write of a sealed object.
pub struct SealWriter {
    inner: Box<dyn MediaWriter>,
    cipher: LessSafeKey,
    header: [u8; HEADER_LEN],
    name: String,
    buf: Vec<u8>,
    index: u64,
}

impl SealWriter {
    pub fn new(inner: Box<dyn MediaWriter>, keys: &Keyring, name: &str) -> io::Result<SealWriter> {
        let (kek_id, kek) = keys.current();
        let data_key: [u8; 32] = random();
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&(SEGMENT as u32).to_le_bytes());
        header[16..32].copy_from_slice(kek_id);
        let wn: [u8; 12] = random();
        header[32..44].copy_from_slice(&wn);
        let wrapped = kek
            .encrypt(
                Nonce::from_slice(&wn),
                Payload {
                    msg: &data_key,
                    aad: &wrap_ad(&header[..32], name),
                },
            )
            .expect("wrapping 32 bytes cannot fail");
        header[44..92].copy_from_slice(&wrapped);
        let mut w = SealWriter {
            inner,
            cipher: seal_key(&data_key),
            header,
            name: name.to_string(),
            buf: Vec::with_capacity(SEGMENT + TAG),
            index: 0,
        };
        w.inner.write_all(&header)?;
        Ok(w)
    }

    fn seal(&mut self, last: bool) -> io::Result<()> {
        let a = ad(&self.header, &self.name, self.index, last);
        let tag = self
            .cipher
            .seal_in_place_separate_tag(
                ring::aead::Nonce::assume_unique_for_key(nonce(self.index, last)),
                Aad::from(&a),
                &mut self.buf,
            )
            .map_err(|_| io::Error::other("segment too long to seal"))?;
        self.buf.extend_from_slice(tag.as_ref());
        self.inner.write_all(&self.buf)?;
        self.buf.clear();
        self.index += 1;
        Ok(())
    }
}

impl Write for SealWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(SEGMENT - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == SEGMENT {
            self.seal(false)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl MediaWriter for SealWriter {
    fn commit(mut self: Box<Self>) -> Result<u64, MediaError> {
        let name = self.name.clone();
        self.seal(true)
            .map_err(|e| MediaError::io("encrypted repository", &name, "write", e))?;
        let sealed = self.inner.commit()?;
        Ok(plain_len(sealed).unwrap_or(sealed))
    }

    fn abort(self: Box<Self>) {
        self.inner.abort()
    }
}

/// A read of a sealed object: its plaintext, verified segment by segment, seekable.
pub struct OpenReader {
    inner: Box<dyn MediaReader>,
    cipher: LessSafeKey,
    header: [u8; HEADER_LEN],
    name: String,
    device: String,
    len: u64,
    pos: u64,
    seg: Option<u64>,
    buf: Vec<u8>,
    /// Where the inner reader is: a sequential read must not seek it (a seek drops a
    /// driver's read-ahead).
    at: u64,
}

impl OpenReader {
    pub fn new(
        mut inner: Box<dyn MediaReader>,
        keys: &Keyring,
        device: &str,
        name: &str,
    ) -> Result<OpenReader, MediaError> {
        let fail = |m: String| {
            MediaError::permanent(device, name, &m)
                .with_op("decrypt")
                .with_hint("the object was changed, truncated or replaced, or belongs to another repository; restore it from another copy")
        };
        let len = plain_len(inner.len()).ok_or_else(|| {
            fail(format!(
                "size {} is not that of an encrypted object (truncated?)",
                inner.len()
            ))
        })?;
        let mut header = [0u8; HEADER_LEN];
        inner
            .read_exact(&mut header)
            .map_err(|e| MediaError::io(device, name, "read", e))?;
        if &header[..8] != MAGIC {
            return Err(fail("it is not encrypted (no RMCRYPT1 header)".into()));
        }
        if u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) as usize != SEGMENT {
            return Err(fail(
                "its segment size is not the one this recman reads".into(),
            ));
        }
        let kek = keys.kek(&header[16..32]).ok_or_else(|| {
            fail(format!(
                "it was sealed with key {} which the key record does not hold",
                hex(&header[16..32])
            ))
        })?;
        let dk = kek
            .decrypt(Nonce::from_slice(&header[32..44]), Payload { msg: &header[44..92], aad: &wrap_ad(&header[..32], name) })
            .map_err(|_| fail("its wrapped data key does not authenticate: the object was tampered with or damaged".into()))?;
        let dk: [u8; 32] = dk
            .try_into()
            .map_err(|_| fail("bad data key length".into()))?;
        Ok(OpenReader {
            inner,
            cipher: seal_key(&dk),
            header,
            name: name.to_string(),
            device: device.to_string(),
            len,
            pos: 0,
            seg: None,
            buf: Vec::with_capacity(SEGMENT + TAG),
            at: HEADER_LEN as u64,
        })
    }

    fn load(&mut self, i: u64) -> io::Result<()> {
        let last_index = self.len / SEGMENT as u64;
        let last = i == last_index;
        let plain = if last {
            (self.len % SEGMENT as u64) as usize
        } else {
            SEGMENT
        };
        self.seg = None;
        self.buf.resize(plain + TAG, 0);
        let from = HEADER_LEN as u64 + i * (SEGMENT + TAG) as u64;
        if self.at != from {
            self.inner.seek(SeekFrom::Start(from))?;
        }
        self.at = u64::MAX;
        self.inner.read_exact(&mut self.buf)?;
        self.at = from + self.buf.len() as u64;
        let a = ad(&self.header, &self.name, i, last);
        let opened = self
            .cipher
            .open_in_place(
                ring::aead::Nonce::assume_unique_for_key(nonce(i, last)),
                Aad::from(&a),
                &mut self.buf,
            )
            .map(|p| p.len())
            .map_err(|_| {
                MediaError::permanent(
                    &self.device,
                    &self.name,
                    &format!("segment {i} at plaintext offset {} does not authenticate: the object was tampered with or damaged (changed, reordered, truncated or moved from another object)", i * SEGMENT as u64),
                )
                .with_op("decrypt")
                .with_hint("restore the object from another copy")
                .into_io()
            })?;
        self.buf.truncate(opened);
        self.seg = Some(i);
        Ok(())
    }
}

impl Read for OpenReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len {
            // An empty last segment still proves that the object was not cut at a boundary.
            let last = self.len / SEGMENT as u64;
            if self.pos == self.len
                && self.len.is_multiple_of(SEGMENT as u64)
                && self.seg != Some(last)
            {
                self.load(last)?;
            }
            return Ok(0);
        }
        let i = self.pos / SEGMENT as u64;
        if self.seg != Some(i) {
            self.load(i)?;
        }
        let off = (self.pos % SEGMENT as u64) as usize;
        let n = out.len().min(self.buf.len().saturating_sub(off));
        out[..n].copy_from_slice(&self.buf[off..off + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for OpenReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let p = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        self.pos = p;
        Ok(p)
    }
}

impl MediaReader for OpenReader {
    fn len(&self) -> u64 {
        self.len
    }
}
