//! The key record `recman.key`: the KDF parameters and the key-encryption keys wrapped by the
//! master key. It holds no passphrase and no unwrapped key. It is replaced whole by one atomic
//! put, so an interrupted rotation leaves either the old record or the new one.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use recman_wire::keyrecord::{
    FORMAT, Record, UnwrapError, WrappedKek, fingerprint, kek_ad, unhex, unwrap,
};

pub(crate) use recman_wire::keyrecord::hex;

use super::source::Secret;
use crate::error::MediaError;
use crate::media::Media;

pub const KEY_RECORD: &str = "recman.key";
// Argon2id cost: OWASP's minimum (19 MiB, 2 passes). Every process that opens the
// repository (each archive-get) pays it once.
const ARGON_M_KIB: u32 = 19 * 1024;
const ARGON_T: u32 = 2;
const ARGON_P: u32 = 1;

/// What `key show` prints.
#[derive(Clone, Debug)]
pub struct KeyInfo {
    pub fingerprint: String,
    pub set_at: String,
    pub generation: u64,
    pub kdf: String,
    pub keks: usize,
}

/// The unwrapped key-encryption keys of an open encrypted repository.
pub struct Keyring {
    keks: Vec<([u8; 16], Aes256Gcm)>,
    current: [u8; 16],
    info: KeyInfo,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keyring({})", self.info.fingerprint)
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub(crate) fn random<const N: usize>() -> [u8; N] {
    try_random().expect("the system's random source works")
}

/// N bytes from the system's random source (keys, nonces, salts; anything another party must
/// not guess), or the source's error.
pub fn try_random<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut b = [0u8; N];
    getrandom::getrandom(&mut b)?;
    Ok(b)
}

fn bad(device: &str, detail: &str) -> MediaError {
    MediaError::permanent(
        device,
        KEY_RECORD,
        &format!("the key record is damaged: {detail}"),
    )
    .with_op("read")
    .with_hint(
        "restore recman.key from a copy of the repository; without it nothing can be decrypted",
    )
}

/// The master key `secret` gives for `rec`.
fn master_of(rec: &Record, secret: &Secret, device: &str) -> Result<[u8; 32], MediaError> {
    {
        match rec.kdf.as_str() {
            "raw" => secret.raw_key().ok_or_else(|| {
                MediaError::permanent(
                    device,
                    KEY_RECORD,
                    "the repository takes a key of 64 hex digits and the key given is not one",
                )
                .with_op("open")
                .with_hint("give the key file or key command the repository was created with")
            }),
            "argon2id" => {
                let salt = unhex(&rec.salt).ok_or_else(|| bad(device, "salt is not hex"))?;
                derive(secret, &salt, rec.m_kib, rec.t, rec.p).map_err(|m| bad(device, &m))
            }
            other => Err(bad(device, &format!("unknown kdf {other:?}"))),
        }
    }
}

fn derive(secret: &Secret, salt: &[u8], m: u32, t: u32, p: u32) -> Result<[u8; 32], String> {
    let params =
        argon2::Params::new(m, t, p, Some(32)).map_err(|e| format!("argon2 parameters: {e}"))?;
    let a = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let mut out = [0u8; 32];
    a.hash_password_into(secret.bytes(), salt, &mut out)
        .map_err(|e| format!("argon2: {e}"))?;
    Ok(out)
}

fn wrap(master: &[u8; 32], id: &[u8; 16], kek: &[u8; 32]) -> String {
    let c = Aes256Gcm::new(master.into());
    let nonce: [u8; 12] = random();
    let ct = c
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: kek,
                aad: &kek_ad(id),
            },
        )
        .expect("wrapping 32 bytes cannot fail");
    let mut out = nonce.to_vec();
    out.extend_from_slice(&ct);
    hex(&out)
}

/// A KDF's name and salt.
type Kdf = (&'static str, Vec<u8>);

/// Builds a record for `master` holding `keks` (the last is current).
fn record(
    master: &[u8; 32],
    kdf: (&str, Vec<u8>),
    keks: &[([u8; 16], [u8; 32], String)],
    generation: u64,
) -> Record {
    let (kind, salt) = kdf;
    let argon = kind == "argon2id";
    Record {
        format: FORMAT.to_string(),
        version: 1,
        kdf: kind.to_string(),
        salt: hex(&salt),
        m_kib: if argon { ARGON_M_KIB } else { 0 },
        t: if argon { ARGON_T } else { 0 },
        p: if argon { ARGON_P } else { 0 },
        fingerprint: fingerprint(master),
        set_at: now(),
        generation,
        keks: keks
            .iter()
            .map(|(id, k, created)| WrappedKek {
                id: hex(id),
                wrapped: wrap(master, id, k),
                created: created.clone(),
            })
            .collect(),
        current: hex(&keks.last().expect("at least one kek").0),
    }
}

/// The master key for a new record: raw when the secret is 64 hex digits, else Argon2id with
/// a new salt.
fn new_master(secret: &Secret) -> Result<([u8; 32], Kdf), String> {
    if let Some(k) = secret.raw_key() {
        return Ok((k, ("raw", Vec::new())));
    }
    let salt: [u8; 16] = random();
    let m = derive(secret, &salt, ARGON_M_KIB, ARGON_T, ARGON_P)?;
    Ok((m, ("argon2id", salt.to_vec())))
}

fn to_json(r: &Record) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(r).expect("the key record serializes");
    v.push(b'\n');
    v
}

impl Keyring {
    /// Writes a new key record for `secret` to `media` and returns its keyring.
    pub fn create(media: &dyn Media, secret: &Secret) -> Result<Keyring, MediaError> {
        let device = media.describe();
        let (master, kdf) = new_master(secret)
            .map_err(|m| MediaError::permanent(&device, KEY_RECORD, &m).with_op("create"))?;
        let kek = (random::<16>(), random::<32>(), now());
        let rec = record(&master, kdf, &[kek], 1);
        media.put(KEY_RECORD, &to_json(&rec))?;
        Keyring::open_record(&rec, &master, &device)
    }

    /// The key record of `media`, or None when the repository is not encrypted.
    pub fn load(
        media: &dyn Media,
        secret: impl FnOnce() -> Result<Secret, MediaError>,
    ) -> Result<Option<Keyring>, MediaError> {
        let device = media.describe();
        let Some(rec) = read_record(media, &device)? else {
            return Ok(None);
        };
        let secret = secret()?;
        let master = master_of(&rec, &secret, &device)?;
        Keyring::open_record(&rec, &master, &device).map(Some)
    }

    fn open_record(rec: &Record, master: &[u8; 32], device: &str) -> Result<Keyring, MediaError> {
        let unwrapped = unwrap(rec, master).map_err(|e| match e {
            UnwrapError::Damaged(d) => bad(device, &d),
            UnwrapError::WrongKey => MediaError::permanent(
                device,
                KEY_RECORD,
                "the key given does not open the repository (wrong passphrase or key file)",
            )
            .with_op("open")
            .with_hint("give the current key; `recman key show` prints its fingerprint"),
        })?;
        let keks = unwrapped
            .keks
            .iter()
            .map(|(id, k)| (*id, Aes256Gcm::new(k.into())))
            .collect();
        let current = unwrapped.current;
        Ok(Keyring {
            keks,
            current,
            info: KeyInfo {
                fingerprint: rec.fingerprint.clone(),
                set_at: rec.set_at.clone(),
                generation: rec.generation,
                kdf: rec.kdf.clone(),
                keks: rec.keks.len(),
            },
        })
    }

    pub fn info(&self) -> &KeyInfo {
        &self.info
    }

    pub(crate) fn current(&self) -> (&[u8; 16], &Aes256Gcm) {
        let (id, c) = self
            .keks
            .iter()
            .find(|(id, _)| *id == self.current)
            .expect("the current kek is held");
        (id, c)
    }

    pub(crate) fn kek(&self, id: &[u8]) -> Option<&Aes256Gcm> {
        self.keks.iter().find(|(k, _)| k[..] == *id).map(|(_, c)| c)
    }

    /// Re-wraps every key-encryption key under the master key of `new`, adding a new current
    /// one for the objects written from now on, and replaces the key record atomically. No
    /// data object is rewritten. `old` must open the current record.
    pub fn rotate(media: &dyn Media, old: &Secret, new: &Secret) -> Result<KeyInfo, MediaError> {
        let device = media.describe();
        let text = media.get(KEY_RECORD)?;
        let rec = parse(&text, &device)?;
        let master = master_of(&rec, old, &device)?;
        let unwrapped = unwrap(&rec, &master).map_err(|e| match e {
            UnwrapError::Damaged(d) => bad(&device, &d),
            UnwrapError::WrongKey => MediaError::permanent(&device, KEY_RECORD, "the current key given does not open the repository (wrong passphrase or key file)")
                .with_op("rotate")
                .with_hint("give the current key in RECMAN_PASSPHRASE, --key-file or --key-command, and the new one in RECMAN_NEW_PASSPHRASE, --new-key-file or --new-key-command"),
        })?;
        let created = |id: &[u8; 16]| {
            rec.keks
                .iter()
                .find(|k| unhex(&k.id).is_some_and(|v| v[..] == id[..]))
                .map(|k| k.created.clone())
                .unwrap_or_default()
        };
        let mut keks: Vec<([u8; 16], [u8; 32], String)> = unwrapped
            .keks
            .iter()
            .map(|(id, k)| (*id, *k, created(id)))
            .collect();
        keks.push((random(), random(), now()));
        let (new_master, kdf) = new_master(new)
            .map_err(|m| MediaError::permanent(&device, KEY_RECORD, &m).with_op("rotate"))?;
        let next = record(&new_master, kdf, &keks, rec.generation + 1);
        // One atomic put: a rotation killed at any point leaves the old record or the new one.
        media.put(KEY_RECORD, &to_json(&next))?;
        Ok(Keyring::open_record(&next, &new_master, &device)?.info)
    }

    /// What `key show` prints, from the record alone (no key needed).
    pub fn show(media: &dyn Media) -> Result<Option<KeyInfo>, MediaError> {
        let Some(rec) = read_record(media, &media.describe())? else {
            return Ok(None);
        };
        Ok(Some(KeyInfo {
            fingerprint: rec.fingerprint,
            set_at: rec.set_at,
            generation: rec.generation,
            kdf: rec.kdf,
            keks: rec.keks.len(),
        }))
    }
}

/// The repository's key record, or None when it has none (not encrypted).
fn read_record(media: &dyn Media, device: &str) -> Result<Option<Record>, MediaError> {
    match media.get(KEY_RECORD) {
        Ok(text) => parse(&text, device).map(Some),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

fn parse(text: &[u8], device: &str) -> Result<Record, MediaError> {
    recman_wire::keyrecord::parse(text).map_err(|d| bad(device, &d))
}

/// Objects that stay readable without the key: the repository marker and the key record.
pub fn is_clear_object(name: &str) -> bool {
    name == "recman.repo" || name == KEY_RECORD || name.starts_with("recman.key.")
}
