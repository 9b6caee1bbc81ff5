//! CREATE CATALOG and KEY SHOW / ROTATE: the repository itself, and the master key of an
//! encrypted one. Where the repository is (a directory, an object store, a shared catalog) is
//! the front end's to say ([`Env::create_repository`]).

use crate::command::KeyWhat;
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::say::Say;
use recman_catalog::crypt::{KeyInfo, KeySource};
use recman_engine::EngineError;

/// What CREATE CATALOG and KEY report.
#[derive(Debug)]
pub enum RepoOutcome {
    /// The repository and its catalog were made at `location`; `key`: encrypted under it;
    /// `mac_key_id`: its manifests authenticated under the MAC key of that id.
    Created {
        location: String,
        key: Option<KeyInfo>,
        mac_key_id: Option<String>,
        /// Its Object Lock, for an immutable repository.
        immutable: Option<recman_catalog::repo::Immutable>,
    },
    /// KEY SHOW: the current master key of the repository at `location`.
    Key { location: String, key: KeyInfo },
    /// KEY ROTATE: the new master key.
    Rotated(KeyInfo),
}

/// Where opening a repository gets its secrets: the current master key, the new one of KEY
/// ROTATE, and the manifests' MAC key. Taken once per process (a second call changes
/// nothing), so a front end sets them before it opens any repository.
pub fn set_key_sources(current: KeySource, new: KeySource, mac: KeySource) {
    recman_catalog::crypt::set_key_source(current, new);
    recman_catalog::crypt::set_mac_key_source(mac);
}

pub fn create_catalog(
    encrypt: bool,
    immutable: Option<recman_catalog::repo::Immutable>,
    e: &dyn Env,
    p: &mut (impl Say<RepoOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let mut r = match immutable {
        Some(spec) => env(e.create_immutable_repository(spec))?,
        None => env(e.create_repository())?,
    };
    let key = if encrypt {
        Some(r.encrypt().map_err(EngineError::from)?)
    } else {
        None
    };
    p.say(RepoOutcome::Created {
        location: r.location().to_string(),
        key,
        mac_key_id: r.mac_required().map(|m| m.key_id.clone()),
        immutable: r.immutable().copied(),
    });
    Ok(())
}

pub fn key(
    what: KeyWhat,
    e: &dyn Env,
    p: &mut (impl Say<RepoOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let repo = env(e.repository())?;
    match what {
        KeyWhat::Show => match repo.key_info() {
            Some(key) => p.say(RepoOutcome::Key {
                location: repo.location().to_string(),
                key,
            }),
            None => {
                return Err(EngineError::Invalid(format!(
                    "repository {} is not encrypted; hint: `recman create catalog --encrypt` makes an encrypted one",
                    repo.location()
                ))
                .into());
            }
        },
        KeyWhat::Rotate => {
            // Two rotations at once could each drop the other's new key: one at a time.
            let _lock = repo.lock("key rotate").map_err(EngineError::from)?;
            let k = repo.rotate_key().map_err(EngineError::from)?;
            p.say(RepoOutcome::Rotated(k));
        }
    }
    Ok(())
}
