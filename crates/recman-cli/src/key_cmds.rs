//! `key show` and `key rotate`: the master key of an encrypted repository.

use anyhow::Result;
use recman_catalog::crypt::{KeyInfo, KeySource, set_key_source};
use recman_command::KeyWhat;

use crate::cli::Global;

/// Hands the key options (flags, environment, config file) to the repository opener, once.
pub fn set_sources(g: &Global) {
    set_key_source(
        KeySource {
            file: g.key_file.clone(),
            command: g.key_command.clone(),
        },
        KeySource {
            file: g.new_key_file.clone(),
            command: g.new_key_command.clone(),
        },
    );
}

fn print(g: &Global, what: &str, k: &KeyInfo) {
    if !g.quiet {
        println!(
            "{what}: master key {} (generation {}, {}), set at {}; {} key-encryption key(s)",
            k.fingerprint,
            k.generation,
            if k.kdf == "raw" {
                "key file"
            } else {
                "Argon2id passphrase"
            },
            k.set_at,
            k.keks
        );
    }
}

pub fn key(g: &Global, what: KeyWhat) -> Result<()> {
    let repo = crate::device_cmds::open_repo(g)?;
    match what {
        KeyWhat::Show => match repo.key_info() {
            Some(k) => print(g, repo.location(), &k),
            None => anyhow::bail!(
                "repository {} is not encrypted; hint: `recman create catalog --encrypt` makes an encrypted one",
                repo.location()
            ),
        },
        KeyWhat::Rotate => {
            // Two rotations at once could each drop the other's new key: one at a time.
            let _lock = repo.lock("key rotate")?;
            let k = repo.rotate_key()?;
            print(g, "rotated", &k);
        }
    }
    Ok(())
}
