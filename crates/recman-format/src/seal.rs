//! A manifest's own checksum. The manifest is what restore trusts for every path, size and
//! checksum of a backup, so it carries a CRC-32C of itself: the JSON object's last member,
//! `"checksum":"crc32c:XXXXXXXX"`, covers every byte before it. The file stays one JSON object
//! (older readers ignore the member), and a writer streaming a million entries computes the
//! checksum as it goes.
//!
//! This catches accidents and careless hands (a damaged byte, an edited `backup_label`, an
//! entry removed by hand). Against a deliberate forger, who can recompute a CRC, a repository
//! with a MAC key adds a `"mac":"hmac-sha256:…"` member just before the checksum: an
//! HMAC-SHA-256, under a key kept outside the repository, of every byte before it and of the
//! object's name. The checksum still comes last and covers the MAC member too, so a reader
//! without the key checks what it always checked.

use std::io::{self, Write};

use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

/// Manifests of this version and later must carry the checksum.
pub const SEALED_SINCE_VERSION: u32 = 2;
const MEMBER: &[u8] = b",\"checksum\":\"crc32c:";
const MAC_MEMBER: &[u8] = b",\"mac\":\"hmac-sha256:";
/// The algorithm a repository's marker names for its manifest MACs.
pub const MAC_ALGORITHM: &str = "hmac-sha256";
/// Binds a MAC to its purpose, so that a MAC made for something else under the same key is
/// never a valid manifest MAC.
const MAC_DOMAIN: &[u8] = b"recman-manifest-mac\0";
const KEY_ID_DOMAIN: &[u8] = b"recman-mac-key-id\0";
const OBJECT_DOMAIN: &[u8] = b"recman-object-mac\0";

/// The secret that authenticates manifests. It never leaves the process: the repository
/// records only [`MacKey::key_id`].
pub struct MacKey([u8; 32]);

impl MacKey {
    pub fn new(key: [u8; 32]) -> MacKey {
        MacKey(key)
    }

    /// A public name of the key (16 hex digits of an HMAC under it): a repository records it
    /// so that a wrong key is told apart from a forged manifest. It reveals nothing of the key.
    pub fn key_id(&self) -> String {
        let mut h = self.hmac();
        h.update(KEY_ID_DOMAIN);
        hex(&h.finalize().into_bytes()[..8])
    }

    fn hmac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }

    /// The HMAC state for the manifest stored as object `name`: the name is covered, so a
    /// manifest moved to another backup's place does not verify there.
    fn start(&self, name: &str) -> Hmac<Sha256> {
        self.start_in(MAC_DOMAIN, name)
    }

    fn start_in(&self, domain: &[u8], name: &str) -> Hmac<Sha256> {
        let mut h = self.hmac();
        h.update(domain);
        h.update(&(name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h
    }

    /// A MAC over the content of the object stored as `name` (an archived WAL file, whose
    /// piece header carries it): fed the content in order, it gives or checks
    /// `hmac-sha256:<hex>`.
    pub fn content(&self, name: &str) -> ContentMac {
        ContentMac(self.start_in(OBJECT_DOMAIN, name))
    }
}

/// See [`MacKey::content`].
#[derive(Clone)]
pub struct ContentMac(Hmac<Sha256>);

impl ContentMac {
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The value to record: `hmac-sha256:` and 64 hex digits.
    pub fn finish(self) -> String {
        format!("{MAC_ALGORITHM}:{}", hex(&self.0.finalize().into_bytes()))
    }

    /// Whether `recorded` (as [`ContentMac::finish`] writes it) is the MAC of what was fed;
    /// compared in constant time.
    pub fn verify(self, recorded: &str) -> bool {
        let Some(tag) = recorded
            .strip_prefix(MAC_ALGORITHM)
            .and_then(|r| r.strip_prefix(':'))
            .filter(|t| t.len() == 64)
            .and_then(|t| unhex(t.as_bytes()))
        else {
            return false;
        };
        self.0.verify_slice(&tag).is_ok()
    }
}

impl Drop for MacKey {
    fn drop(&mut self) {
        self.0.iter_mut().for_each(|b| *b = 0);
    }
}

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MacKey({})", self.key_id())
    }
}

/// The key and the object name a manifest is written as or read from.
#[derive(Clone, Copy, Debug)]
pub struct MacFor<'a> {
    pub key: &'a MacKey,
    pub name: &'a str,
}

/// Why a manifest is not to be trusted.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error(
        "manifest checksum mismatch (recorded {recorded:08x}, computed {computed:08x}): the manifest was changed after it was written"
    )]
    Mismatch { recorded: u32, computed: u32 },
    #[error("manifest version {version} has no checksum member: it was cut or edited")]
    Missing { version: u32 },
    #[error(
        "manifest carries no MAC, but the repository requires one: it was written without the MAC key, or its MAC was cut off"
    )]
    MacMissing,
    #[error(
        "manifest MAC does not verify: the manifest was changed after it was written, or it was written under another MAC key"
    )]
    MacMismatch,
    #[error("manifest is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes `value` as JSON followed by its checksum member, as the object's last member.
pub fn write_sealed<W: Write, T: Serialize + ?Sized>(w: W, value: &T) -> io::Result<()> {
    write_sealed_with(w, value, None)
}

/// [`write_sealed`], with a MAC member before the checksum when `mac` is given.
pub fn write_sealed_with<W: Write, T: Serialize + ?Sized>(
    w: W,
    value: &T,
    mac: Option<MacFor<'_>>,
) -> io::Result<()> {
    let mut sw = SealWriter {
        inner: w,
        crc: 0,
        mac: mac.map(|m| m.key.start(m.name)),
        held: None,
    };
    serde_json::to_writer(&mut sw, value).map_err(io::Error::other)?;
    // Everything before the object's closing brace is covered; the brace closes the member.
    if sw.held != Some(b'}') {
        return Err(io::Error::other("a sealed manifest must be a JSON object"));
    }
    if let Some(h) = sw.mac.take() {
        let mut member = MAC_MEMBER.to_vec();
        member.extend_from_slice(hex(&h.finalize().into_bytes()).as_bytes());
        member.push(b'"');
        sw.inner.write_all(&member)?;
        sw.crc = crc32c::crc32c_append(sw.crc, &member);
    }
    let tail = format!(",\"checksum\":\"crc32c:{:08x}\"}}", sw.crc);
    sw.inner.write_all(tail.as_bytes())
}

/// Checks `bytes`' checksum member (required from [`SEALED_SINCE_VERSION`] on, read from the
/// document's `version` member) and parses it.
pub fn read_sealed<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, SealError> {
    read_sealed_with(bytes, None)
}

/// [`read_sealed`]; with `mac`, the manifest must also carry a MAC that verifies under its
/// key for its name. A manifest without one is refused, never read as one of before MACs: the
/// repository says MACs are required, so a missing one was cut off.
pub fn read_sealed_with<T: DeserializeOwned>(
    bytes: &[u8],
    mac: Option<MacFor<'_>>,
) -> Result<T, SealError> {
    let text = trim_end(bytes);
    match split_seal(text) {
        Some((covered, recorded)) => {
            let computed = crc32c::crc32c(covered);
            if computed != recorded {
                return Err(SealError::Mismatch { recorded, computed });
            }
            if let Some(m) = mac {
                check_mac(covered, m)?;
            }
        }
        None => {
            #[derive(serde::Deserialize)]
            struct Version {
                #[serde(default)]
                version: u32,
            }
            let v: Version = serde_json::from_slice(text)?;
            if v.version >= SEALED_SINCE_VERSION {
                return Err(SealError::Missing { version: v.version });
            }
            if mac.is_some() {
                return Err(SealError::MacMissing);
            }
        }
    }
    Ok(serde_json::from_slice(text)?)
}

/// Checks the MAC member that ends `covered` (the bytes before the checksum member).
fn check_mac(covered: &[u8], m: MacFor<'_>) -> Result<(), SealError> {
    // `"mac":"hmac-sha256:` + 64 hex digits + `"`
    let tail_len = MAC_MEMBER.len() + 64 + 1;
    let at = covered
        .len()
        .checked_sub(tail_len)
        .ok_or(SealError::MacMissing)?;
    let tail = &covered[at..];
    if !tail.starts_with(MAC_MEMBER) || !tail.ends_with(b"\"") {
        return Err(SealError::MacMissing);
    }
    let recorded =
        unhex(&tail[MAC_MEMBER.len()..MAC_MEMBER.len() + 64]).ok_or(SealError::MacMismatch)?;
    let mut h = m.key.start(m.name);
    h.update(&covered[..at]);
    // verify_slice compares in constant time.
    h.verify_slice(&recorded)
        .map_err(|_| SealError::MacMismatch)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &[u8]) -> Option<Vec<u8>> {
    s.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

/// The covered bytes and the recorded CRC when `text` ends with the checksum member.
fn split_seal(text: &[u8]) -> Option<(&[u8], u32)> {
    // `"checksum":"crc32c:` + 8 hex digits + `"}`
    let tail_len = MEMBER.len() + 8 + 2;
    let at = text.len().checked_sub(tail_len)?;
    let tail = &text[at..];
    if !tail.starts_with(MEMBER) || !tail.ends_with(b"\"}") {
        return None;
    }
    let hex = std::str::from_utf8(&tail[MEMBER.len()..MEMBER.len() + 8]).ok()?;
    Some((&text[..at], u32::from_str_radix(hex, 16).ok()?))
}

fn trim_end(b: &[u8]) -> &[u8] {
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &b[..end]
}

/// Passes bytes through, holding back the last one (the object's closing brace) and
/// computing the CRC of all before it.
struct SealWriter<W> {
    inner: W,
    crc: u32,
    mac: Option<Hmac<Sha256>>,
    held: Option<u8>,
}

impl<W: Write> Write for SealWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some((&last, body)) = buf.split_last() else {
            return Ok(0);
        };
        if let Some(h) = self.held.take() {
            self.inner.write_all(&[h])?;
            self.crc = crc32c::crc32c_append(self.crc, &[h]);
            if let Some(m) = &mut self.mac {
                m.update(&[h]);
            }
        }
        self.inner.write_all(body)?;
        self.crc = crc32c::crc32c_append(self.crc, body);
        if let Some(m) = &mut self.mac {
            m.update(body);
        }
        self.held = Some(last);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
    struct M {
        version: u32,
        label: String,
        entries: Vec<u32>,
    }

    fn sealed(m: &M) -> Vec<u8> {
        let mut out = Vec::new();
        write_sealed(&mut out, m).unwrap();
        out
    }

    #[test]
    fn round_trip_and_still_json() {
        let m = M {
            version: 2,
            label: "START WAL LOCATION: 0/2000028".into(),
            entries: (0..1000).collect(),
        };
        let b = sealed(&m);
        assert_eq!(read_sealed::<M>(&b).unwrap(), m);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert!(v["checksum"].as_str().unwrap().starts_with("crc32c:"));
        // A trailing newline (an editor's) is not a change.
        let mut nl = b.clone();
        nl.push(b'\n');
        assert_eq!(read_sealed::<M>(&nl).unwrap(), m);
    }

    #[test]
    fn edits_are_caught() {
        let m = M {
            version: 2,
            label: "START WAL LOCATION: 0/2000028".into(),
            entries: vec![1, 2, 3],
        };
        let b = sealed(&m);
        let edited = String::from_utf8(b.clone())
            .unwrap()
            .replace("0/2000028", "0/3000028");
        assert!(matches!(
            read_sealed::<M>(edited.as_bytes()),
            Err(SealError::Mismatch { .. })
        ));
        let dropped = String::from_utf8(b.clone())
            .unwrap()
            .replace("[1,2,3]", "[1,3]");
        assert!(matches!(
            read_sealed::<M>(dropped.as_bytes()),
            Err(SealError::Mismatch { .. })
        ));
        // Cutting the member off does not make a version-2 manifest legacy.
        let plain = serde_json::to_vec(&m).unwrap();
        assert!(matches!(
            read_sealed::<M>(&plain),
            Err(SealError::Missing { version: 2 })
        ));
        // A version-1 manifest, written before the seal, is read as it is.
        let old = M { version: 1, ..m };
        assert_eq!(
            read_sealed::<M>(&serde_json::to_vec(&old).unwrap()).unwrap(),
            old
        );
    }

    #[test]
    fn macs_catch_a_forger_who_recomputes_the_checksum() {
        let key = MacKey::new([7; 32]);
        let name = "main/backup/B1/manifest.json";
        let mac = Some(MacFor { key: &key, name });
        let m = M {
            version: 2,
            label: "START WAL LOCATION: 0/2000028".into(),
            entries: vec![1, 2, 3],
        };
        let mut b = Vec::new();
        write_sealed_with(&mut b, &m, mac).unwrap();
        assert_eq!(read_sealed_with::<M>(&b, mac).unwrap(), m);
        // A reader without the key sees a manifest as before.
        assert_eq!(read_sealed::<M>(&b).unwrap(), m);

        // Edited, then the checksum recomputed as the format says: the CRC passes, the MAC not.
        let text = String::from_utf8(b.clone()).unwrap();
        let (covered, _) = text.rsplit_once(",\"checksum\"").unwrap();
        let covered = covered.replace("0/2000028", "0/3000028");
        let forged = format!(
            "{covered},\"checksum\":\"crc32c:{:08x}\"}}",
            crc32c::crc32c(covered.as_bytes())
        );
        assert_eq!(
            read_sealed::<M>(forged.as_bytes()).unwrap().label,
            "START WAL LOCATION: 0/3000028"
        );
        assert!(matches!(
            read_sealed_with::<M>(forged.as_bytes(), mac),
            Err(SealError::MacMismatch)
        ));
        // The MAC cut off and the checksum recomputed: still refused.
        let bare = sealed(&m);
        assert!(matches!(
            read_sealed_with::<M>(&bare, mac),
            Err(SealError::MacMissing)
        ));
        // Another key, or the same manifest under another backup's name.
        let other = MacKey::new([8; 32]);
        assert!(matches!(
            read_sealed_with::<M>(&b, Some(MacFor { key: &other, name })),
            Err(SealError::MacMismatch)
        ));
        assert!(matches!(
            read_sealed_with::<M>(
                &b,
                Some(MacFor {
                    key: &key,
                    name: "main/backup/B2/manifest.json"
                })
            ),
            Err(SealError::MacMismatch)
        ));
        assert_ne!(key.key_id(), other.key_id());
        assert_eq!(key.key_id().len(), 16);
    }

    #[test]
    fn content_macs_are_bound_to_key_name_and_content() {
        let key = MacKey::new([7; 32]);
        let name = "main/wal/0000000100000000/000000010000000000000003.rmw";
        let mac = |k: &MacKey, n: &str, data: &[u8]| {
            let mut m = k.content(n);
            m.update(data);
            m
        };
        let recorded = mac(&key, name, b"segment").finish();
        assert!(recorded.starts_with("hmac-sha256:") && recorded.len() == 12 + 64);
        assert!(mac(&key, name, b"segment").verify(&recorded));
        assert!(!mac(&key, name, b"segmenT").verify(&recorded));
        assert!(!mac(&key, "main/wal/x/other.rmw", b"segment").verify(&recorded));
        assert!(!mac(&MacKey::new([8; 32]), name, b"segment").verify(&recorded));
        assert!(!mac(&key, name, b"segment").verify("hmac-sha256:00"));
        // A manifest MAC of the same bytes under the same name is not a content MAC.
        assert_ne!(
            key.start(name).finalize().into_bytes(),
            key.content(name).0.finalize().into_bytes()
        );
    }
}
