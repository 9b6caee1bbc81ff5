//! A manifest's own checksum. The manifest is what restore trusts for every path, size and
//! checksum of a backup, so it carries a CRC-32C of itself: the JSON object's last member,
//! `"checksum":"crc32c:XXXXXXXX"`, covers every byte before it. The file stays one JSON object
//! (older readers ignore the member), and a writer streaming a million entries computes the
//! checksum as it goes.
//!
//! This catches accidents and careless hands (a damaged byte, an edited `backup_label`, an
//! entry removed by hand). Against a deliberate forger, who can recompute a CRC, an
//! authenticated repository (a MAC or AEAD under a key) is the answer; it would take this
//! member's place in the same position.

use std::io::{self, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Manifests of this version and later must carry the checksum.
pub const SEALED_SINCE_VERSION: u32 = 2;
const MEMBER: &[u8] = b",\"checksum\":\"crc32c:";

/// Why a manifest is not to be trusted.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error(
        "manifest checksum mismatch (recorded {recorded:08x}, computed {computed:08x}): the manifest was changed after it was written"
    )]
    Mismatch { recorded: u32, computed: u32 },
    #[error("manifest version {version} has no checksum member: it was cut or edited")]
    Missing { version: u32 },
    #[error("manifest is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes `value` as JSON followed by its checksum member, as the object's last member.
pub fn write_sealed<W: Write, T: Serialize + ?Sized>(w: W, value: &T) -> io::Result<()> {
    let mut sw = SealWriter {
        inner: w,
        crc: 0,
        held: None,
    };
    serde_json::to_writer(&mut sw, value).map_err(io::Error::other)?;
    // Everything before the object's closing brace is covered; the brace closes the member.
    if sw.held != Some(b'}') {
        return Err(io::Error::other("a sealed manifest must be a JSON object"));
    }
    let tail = format!(",\"checksum\":\"crc32c:{:08x}\"}}", sw.crc);
    sw.inner.write_all(tail.as_bytes())
}

/// Checks `bytes`' checksum member (required from [`SEALED_SINCE_VERSION`] on, read from the
/// document's `version` member) and parses it.
pub fn read_sealed<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, SealError> {
    let text = trim_end(bytes);
    match split_seal(text) {
        Some((covered, recorded)) => {
            let computed = crc32c::crc32c(covered);
            if computed != recorded {
                return Err(SealError::Mismatch { recorded, computed });
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
        }
    }
    Ok(serde_json::from_slice(text)?)
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
        }
        self.inner.write_all(body)?;
        self.crc = crc32c::crc32c_append(self.crc, body);
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
}
