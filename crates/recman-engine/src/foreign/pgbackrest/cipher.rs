//! pgBackRest's repository encryption: AES-256-CBC in OpenSSL's "salted" form. A file starts
//! with `Salted__` and an 8-byte salt (pgBackRest's "raw" form, used in some bundles, has the
//! salt only); key and IV come from the passphrase and the salt by OpenSSL's EVP_BytesToKey
//! with SHA-1 and one round; the plaintext is padded as in PKCS#7. Info files are encrypted
//! with the repository's passphrase, and name in their `[cipher]` section the passphrase of
//! what depends on them (a backup's manifest and files, the archived WAL).

use aes::cipher::{BlockDecryptMut, KeyIvInit};
use sha1::Digest;
use std::io::{self, Read};

const MAGIC: &[u8] = b"Salted__";
const SALT: usize = 8;
const BLOCK: usize = 16;

type Decryptor = cbc::Decryptor<aes::Aes256>;

/// Key and IV from a passphrase and salt (EVP_BytesToKey, SHA-1, one round).
fn key_iv(pass: &[u8], salt: &[u8]) -> ([u8; 32], [u8; 16]) {
    let mut out = Vec::with_capacity(60);
    let mut prev: Vec<u8> = Vec::new();
    while out.len() < 48 {
        let mut h = sha1::Sha1::new();
        h.update(&prev);
        h.update(pass);
        h.update(salt);
        prev = h.finalize().to_vec();
        out.extend_from_slice(&prev);
    }
    let mut key = [0u8; 32];
    let mut iv = [0u8; 16];
    key.copy_from_slice(&out[..32]);
    iv.copy_from_slice(&out[32..48]);
    (key, iv)
}

fn bad(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{why} (a wrong passphrase, or a damaged file)"),
    )
}

/// Decrypts a whole small file (an info file, a manifest).
pub fn decrypt_all(data: &[u8], pass: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len());
    Decrypting::new(data, pass, false).read_to_end(&mut out)?;
    Ok(out)
}

/// The plaintext of an encrypted stream, decrypted as it is read. The last block is held
/// back until the end of the input, where its padding is checked and removed.
pub struct Decrypting<R> {
    inner: R,
    pass: Vec<u8>,
    raw: bool,
    dec: Option<Decryptor>,
    /// Ciphertext read but not decrypted yet (always keeps the last whole block).
    pending: Vec<u8>,
    /// Plaintext decrypted but not handed out yet.
    ready: Vec<u8>,
    at: usize,
    eof: bool,
}

impl<R: Read> Decrypting<R> {
    pub fn new(inner: R, pass: &[u8], raw: bool) -> Decrypting<R> {
        Decrypting {
            inner,
            pass: pass.to_vec(),
            raw,
            dec: None,
            pending: Vec::new(),
            ready: Vec::new(),
            at: 0,
            eof: false,
        }
    }

    fn start(&mut self) -> io::Result<()> {
        let head = if self.raw { SALT } else { MAGIC.len() + SALT };
        let mut h = vec![0u8; head];
        self.inner
            .read_exact(&mut h)
            .map_err(|_| bad("the encrypted file is shorter than its header"))?;
        if !self.raw && &h[..MAGIC.len()] != MAGIC {
            return Err(bad("the file does not start as an encrypted file does"));
        }
        let (key, iv) = key_iv(&self.pass, &h[head - SALT..]);
        self.dec = Some(Decryptor::new(&key.into(), &iv.into()));
        Ok(())
    }

    /// Reads more ciphertext and decrypts every whole block but the last one kept back.
    fn fill(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 64 * 1024];
        let n = self.inner.read(&mut buf)?;
        if n == 0 {
            self.eof = true;
        } else {
            self.pending.extend_from_slice(&buf[..n]);
        }
        let dec = self.dec.as_mut().expect("started");
        let keep = if self.eof {
            if !self.pending.len().is_multiple_of(BLOCK) || self.pending.is_empty() {
                return Err(bad("the encrypted file does not end on a whole block"));
            }
            0
        } else {
            // The last whole block (or part of one) waits: it may carry the padding.
            let r = self.pending.len() % BLOCK;
            if r == 0 { BLOCK } else { r }.min(self.pending.len())
        };
        let upto = self.pending.len() - keep;
        let mut blocks: Vec<u8> = self.pending.drain(..upto).collect();
        for b in blocks.chunks_exact_mut(BLOCK) {
            dec.decrypt_block_mut(b.into());
        }
        if self.eof {
            let pad = *blocks.last().ok_or_else(|| bad("no data"))? as usize;
            if pad == 0 || pad > BLOCK || pad > blocks.len() {
                return Err(bad("the decrypted file has no valid padding"));
            }
            if !blocks[blocks.len() - pad..]
                .iter()
                .all(|&b| b as usize == pad)
            {
                return Err(bad("the decrypted file has no valid padding"));
            }
            blocks.truncate(blocks.len() - pad);
        }
        self.ready.drain(..self.at);
        self.at = 0;
        self.ready.extend_from_slice(&blocks);
        Ok(())
    }
}

impl<R: Read> Read for Decrypting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.dec.is_none() {
            self.start()?;
        }
        while self.at == self.ready.len() {
            if self.eof {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = (self.ready.len() - self.at).min(buf.len());
        buf[..n].copy_from_slice(&self.ready[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::BlockEncryptMut;

    /// Encrypts as `openssl enc -aes-256-cbc -md sha1` does, for the round trip.
    fn encrypt(plain: &[u8], pass: &[u8], salt: [u8; 8]) -> Vec<u8> {
        let (key, iv) = key_iv(pass, &salt);
        let mut enc = cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into());
        let pad = BLOCK - plain.len() % BLOCK;
        let mut data = plain.to_vec();
        data.extend(std::iter::repeat_n(pad as u8, pad));
        for b in data.chunks_exact_mut(BLOCK) {
            enc.encrypt_block_mut(b.into());
        }
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&salt);
        out.extend(data);
        out
    }

    #[test]
    fn decrypts_what_openssl_salted_form_holds_whatever_the_read_sizes() {
        let plain: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let data = encrypt(&plain, b"secretpass", *b"12345678");
        assert_eq!(decrypt_all(&data, b"secretpass").unwrap(), plain);
        // One byte at a time.
        let mut r = Decrypting::new(&data[..], b"secretpass", false);
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while r.read(&mut b).unwrap() == 1 {
            out.push(b[0]);
        }
        assert_eq!(out, plain);
        let e = decrypt_all(&data, b"wrong").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(decrypt_all(&data[..data.len() - 3], b"secretpass").is_err());
        assert_eq!(decrypt_all(&encrypt(b"", b"p", [0; 8]), b"p").unwrap(), b"");
    }
}
