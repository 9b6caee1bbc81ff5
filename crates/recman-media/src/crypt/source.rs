//! Where the secret that opens an encrypted repository comes from: `RECMAN_PASSPHRASE`, a key
//! file, or a command that prints it (a KMS or a vault). The secret never leaves this process
//! and is never part of a message.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::error::MediaError;

/// The secret as given: a passphrase, or a key as 64 hex digits.
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: Vec<u8>) -> Secret {
        let mut b = bytes;
        while b.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
            b.pop();
        }
        Secret(b)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The 32-byte key when the secret is written as exactly 64 hex digits.
    pub fn raw_key(&self) -> Option<[u8; 32]> {
        let s = std::str::from_utf8(&self.0).ok()?.trim();
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(out)
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.iter_mut().for_each(|b| *b = 0);
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// One way of getting a secret.
#[derive(Clone, Debug, Default)]
pub struct KeySource {
    /// `--key-file` (or `key_file` in the config file).
    pub file: Option<PathBuf>,
    /// `--key-command`: run by `sh -c`, its standard output is the secret.
    pub command: Option<String>,
}

static CURRENT: OnceLock<KeySource> = OnceLock::new();
static NEW: OnceLock<KeySource> = OnceLock::new();
static MAC: OnceLock<KeySource> = OnceLock::new();

/// Sets, once per process, the key sources from the command line and config file: the
/// current key and the new one of `key rotate`.
pub fn set_key_source(current: KeySource, new: KeySource) {
    let _ = CURRENT.set(current);
    let _ = NEW.set(new);
}

/// Sets, once per process, where the manifest MAC key comes from (`--mac-key-file`,
/// `--mac-key-command`); `RECMAN_MAC_KEY` is read when neither is given.
pub fn set_mac_key_source(mac: KeySource) {
    let _ = MAC.set(mac);
}

impl KeySource {
    /// The key that authenticates manifests: `--mac-key-command`, then `--mac-key-file`, then
    /// `RECMAN_MAC_KEY`; None when none of them is given (a repository without MACs).
    pub fn mac_key(location: &str) -> Result<Option<Secret>, MediaError> {
        let src = MAC.get().cloned().unwrap_or_default();
        let env_given = std::env::var_os("RECMAN_MAC_KEY").is_some_and(|v| !v.is_empty());
        if src.command.is_none() && src.file.is_none() && !env_given {
            return Ok(None);
        }
        src.secret(
            location,
            "RECMAN_MAC_KEY",
            "--mac-key-file",
            "--mac-key-command",
        )
        .map(Some)
    }

    /// The current key: `--key-command`, then `--key-file`, then `RECMAN_PASSPHRASE`.
    pub fn current(location: &str) -> Result<Secret, MediaError> {
        CURRENT.get().cloned().unwrap_or_default().secret(
            location,
            "RECMAN_PASSPHRASE",
            "--key-file",
            "--key-command",
        )
    }

    /// The new key of `key rotate`: `--new-key-command`, `--new-key-file`,
    /// `RECMAN_NEW_PASSPHRASE`.
    pub fn new_key(location: &str) -> Result<Secret, MediaError> {
        NEW.get().cloned().unwrap_or_default().secret(
            location,
            "RECMAN_NEW_PASSPHRASE",
            "--new-key-file",
            "--new-key-command",
        )
    }

    fn secret(
        &self,
        location: &str,
        env: &str,
        file_flag: &str,
        command_flag: &str,
    ) -> Result<Secret, MediaError> {
        let fail = |m: String| MediaError::permanent(location, "", &m).with_op("open the key for");
        if let Some(cmd) = &self.command {
            let out = Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .stderr(std::process::Stdio::inherit())
                .output()
                .map_err(|e| {
                    fail(format!(
                        "the key command ({command_flag}) did not start: {e}"
                    ))
                })?;
            if !out.status.success() {
                return Err(fail(format!(
                    "the key command ({command_flag}) failed with {}; hint: run it by hand to see why",
                    out.status
                )));
            }
            return non_empty(Secret::new(out.stdout), || {
                fail(format!("the key command ({command_flag}) printed nothing"))
            });
        }
        if let Some(path) = &self.file {
            let bytes = std::fs::read(path).map_err(|e| {
                fail(format!(
                    "the key file {} ({file_flag}) cannot be read: {e}; hint: check the path and its permissions",
                    path.display()
                ))
            })?;
            return non_empty(Secret::new(bytes), || {
                fail(format!("the key file {} is empty", path.display()))
            });
        }
        match std::env::var_os(env) {
            Some(v) if !v.is_empty() => {
                use std::os::unix::ffi::OsStrExt;
                Ok(Secret::new(v.as_bytes().to_vec()))
            }
            _ => Err(fail(format!(
                "no key was given; hint: set {env}, or pass {file_flag} or {command_flag}"
            ))),
        }
    }
}

fn non_empty(s: Secret, err: impl FnOnce() -> MediaError) -> Result<Secret, MediaError> {
    if s.bytes().is_empty() {
        Err(err())
    } else {
        Ok(s)
    }
}
