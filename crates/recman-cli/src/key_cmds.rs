//! The key options of an encrypted repository, and how `create catalog`, `key show` and `key
//! rotate` are reported (the command model runs them).

use recman_command::model::{KeyInfo, KeySource};
use recman_command::repo_cmds::RepoOutcome;

use crate::cli::Global;

/// Hands the key options (flags, environment, config file) to the repository opener, once.
pub fn set_sources(g: &Global) {
    recman_command::repo_cmds::set_key_sources(
        KeySource {
            file: g.key_file.clone(),
            command: g.key_command.clone(),
        },
        KeySource {
            file: g.new_key_file.clone(),
            command: g.new_key_command.clone(),
        },
        KeySource {
            file: g.mac_key_file.clone(),
            command: g.mac_key_command.clone(),
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

/// How CREATE CATALOG and KEY are reported.
pub fn say(g: &Global, o: RepoOutcome) {
    match o {
        RepoOutcome::Created {
            location,
            key,
            mac_key_id,
            immutable,
        } => {
            if g.quiet {
                return;
            }
            match key {
                Some(k) => println!(
                    "created encrypted repository and catalog at {location} (master key {})",
                    k.fingerprint
                ),
                None => println!("created repository and catalog at {location}"),
            }
            if let Some(spec) = immutable {
                println!(
                    "immutable: every object is written under an Object Lock in {} mode, for at least {} (longer under a longer recovery window or KEEP)",
                    spec.mode,
                    crate::catalog_cmds::immutable::span(spec.min_retention_secs)
                );
            }
            if let Some(id) = mac_key_id {
                println!(
                    "manifests are authenticated under MAC key {id}: every command that reads or writes a manifest needs that key"
                );
            }
        }
        RepoOutcome::Key { location, key } => print(g, &location, &key),
        RepoOutcome::Rotated(k) => print(g, "rotated", &k),
    }
}
