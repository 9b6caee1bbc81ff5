//! The key record `recman.key`: its JSON form, the checks a record read from the repository
//! must pass, and the unwrapping of its key-encryption keys by the master key. The record is
//! what an attacker with write access to the repository can edit, so nothing in it is trusted
//! before it is checked: lengths, hex, and the KDF's cost (a huge Argon2 memory cost would
//! make every open allocate it).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const FORMAT: &str = "recman-key";
/// Upper bounds of the Argon2id parameters a record may ask for: 2 GiB, 64 passes, 64 lanes,
/// far above recman's own (19 MiB, 2, 1) and below what would take a host down.
pub const MAX_M_KIB: u32 = 2 << 20;
pub const MAX_T: u32 = 64;
pub const MAX_P: u32 = 64;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Record {
    pub format: String,
    pub version: u32,
    /// "argon2id" (the secret is a passphrase) or "raw" (64 hex digits).
    pub kdf: String,
    #[serde(default)]
    pub salt: String,
    #[serde(default)]
    pub m_kib: u32,
    #[serde(default)]
    pub t: u32,
    #[serde(default)]
    pub p: u32,
    /// A hash of the master key, to say which key is current without revealing it.
    pub fingerprint: String,
    pub set_at: String,
    pub generation: u64,
    pub keks: Vec<WrappedKek>,
    pub current: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WrappedKek {
    pub id: String,
    /// Hex of nonce (12) ‖ ciphertext (32) ‖ tag (16).
    pub wrapped: String,
    pub created: String,
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

pub fn fingerprint(master: &[u8; 32]) -> String {
    let mut h = Sha256::new();
    h.update(b"recman master key fingerprint\0");
    h.update(master);
    hex(&h.finalize()[..8])
}

/// The associated data of a wrapped key: binds it to its id.
pub fn kek_ad(id: &[u8; 16]) -> Vec<u8> {
    let mut ad = b"recman-kek\0".to_vec();
    ad.extend_from_slice(id);
    ad
}

/// Parses a record; the error says what is damaged.
pub fn parse(text: &[u8]) -> Result<Record, String> {
    let rec: Record = serde_json::from_slice(text).map_err(|e| format!("not valid json ({e})"))?;
    if rec.format != FORMAT || rec.version != 1 {
        return Err(format!(
            "format {:?} version {} is not {FORMAT:?} 1",
            rec.format, rec.version
        ));
    }
    if rec.kdf == "argon2id" && (rec.m_kib > MAX_M_KIB || rec.t > MAX_T || rec.p > MAX_P) {
        return Err(format!(
            "argon2id cost m={} KiB, t={}, p={} is beyond the limits ({MAX_M_KIB} KiB, {MAX_T}, {MAX_P})",
            rec.m_kib, rec.t, rec.p
        ));
    }
    Ok(rec)
}

/// Why the key-encryption keys could not be unwrapped.
#[derive(Debug, PartialEq)]
pub enum UnwrapError {
    /// The record is damaged (or was changed): the detail says where.
    Damaged(String),
    /// The master key is not the record's (a wrong passphrase or key file).
    WrongKey,
}

/// The unwrapped key-encryption keys of a record, and the id of the current one.
pub struct Keks {
    pub keks: Vec<([u8; 16], [u8; 32])>,
    pub current: [u8; 16],
}

/// Unwraps every key of `rec` with `master`. A key that does not authenticate means a wrong
/// master key unless the master key's fingerprint is the record's; then the record was changed.
pub fn unwrap(rec: &Record, master: &[u8; 32]) -> Result<Keks, UnwrapError> {
    let damaged = |s: String| UnwrapError::Damaged(s);
    let c = Aes256Gcm::new(master.into());
    let mut keks = Vec::new();
    for k in &rec.keks {
        let id: [u8; 16] = unhex(&k.id)
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| damaged("a key id is not 16 bytes of hex".into()))?;
        let w = unhex(&k.wrapped)
            .filter(|w| w.len() == 12 + 32 + 16)
            .ok_or_else(|| damaged(format!("wrapped key {} has the wrong length", k.id)))?;
        let kek = c
            .decrypt(
                Nonce::from_slice(&w[..12]),
                Payload {
                    msg: &w[12..],
                    aad: &kek_ad(&id),
                },
            )
            .map_err(|_| {
                if fingerprint(master) == rec.fingerprint {
                    damaged(format!(
                        "wrapped key {} does not authenticate (it was changed)",
                        k.id
                    ))
                } else {
                    UnwrapError::WrongKey
                }
            })?;
        let kek: [u8; 32] = kek
            .try_into()
            .map_err(|_| damaged("a key is not 32 bytes".into()))?;
        keks.push((id, kek));
    }
    let current: [u8; 16] = unhex(&rec.current)
        .and_then(|v| v.try_into().ok())
        .filter(|c| keks.iter().any(|(id, _)| id == c))
        .ok_or_else(|| damaged("the current key id is not in the record".into()))?;
    Ok(Keks { keks, current })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_argon2_cost_is_refused_before_any_derivation() {
        let rec = format!(
            r#"{{"format":"recman-key","version":1,"kdf":"argon2id","salt":"00","m_kib":{},"t":2,"p":1,"fingerprint":"","set_at":"","generation":1,"keks":[],"current":""}}"#,
            u32::MAX
        );
        let e = parse(rec.as_bytes()).unwrap_err();
        assert!(e.contains("beyond the limits"), "{e}");
        assert!(unhex("0g").is_none() && unhex("abc").is_none());
        assert_eq!(unhex(&hex(&[0, 255, 16])), Some(vec![0, 255, 16]));
    }

    #[test]
    fn only_the_master_key_unwraps_and_a_changed_key_is_named() {
        // The fuzz seed: two keys wrapped by [7; 32], the second current.
        let text = include_bytes!("../../../fuzz/seeds/key_record/raw.json");
        let rec = parse(text).unwrap();
        let k = unwrap(&rec, &[7; 32]).unwrap();
        assert_eq!(k.keks.len(), 2);
        assert_eq!(k.current, [2; 16]);
        assert!(matches!(unwrap(&rec, &[8; 32]), Err(UnwrapError::WrongKey)));
        let mut bad = rec.clone();
        let last = bad.keks[0].wrapped.pop().unwrap();
        bad.keks[0]
            .wrapped
            .push(if last == '0' { '1' } else { '0' });
        match unwrap(&bad, &[7; 32]) {
            Err(UnwrapError::Damaged(d)) => assert!(d.contains("does not authenticate"), "{d}"),
            _ => panic!("a changed wrapped key was not reported as damaged"),
        }
    }
}
