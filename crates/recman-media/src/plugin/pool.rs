//! The plugin's processes: one for session-level calls, an idle pool for streams, and the
//! retry of idempotent requests that fail transiently.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::wire::{HINT_STDERR, Hello, Launch, Plugin};
use crate::error::{ErrorClass, MediaError};

/// Idle processes kept for reuse; more than a typical channel count would only hold memory.
const MAX_IDLE: usize = 8;

/// Tries of an idempotent request that keeps failing transiently (first try included).
const TRIES: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(20);

/// What a plugin media and its streams share: how to start the plugin, its handshake, and
/// its processes.
pub(super) struct Shared {
    pub(super) launch: Launch,
    pub(super) hello: Hello,
    pub(super) session: Mutex<Option<Plugin>>,
    pub(super) idle: Mutex<Vec<Plugin>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves a plugin that is at worst broken, and broken
    // plugins are detected and replaced, so the poison carries no information.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(super) fn device(&self) -> &str {
        &self.launch.device
    }

    /// A process for a new stream: an idle one, or a fresh one.
    pub(super) fn take(&self) -> Result<Plugin, MediaError> {
        if let Some(p) = lock(&self.idle).pop() {
            return Ok(p);
        }
        Plugin::start(&self.launch).map(|(p, _)| p)
    }

    /// Takes back a stream's process; broken ones and those over the pool size are reaped
    /// (outside the lock, since reaping waits for the process).
    pub(super) fn give_back(&self, p: Plugin) {
        if p.is_broken() {
            return;
        }
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(p);
        }
    }

    /// Runs one request on the session process, replacing it if it died.
    pub(super) fn session<T>(
        &self,
        f: impl FnOnce(&mut Plugin) -> Result<T, MediaError>,
    ) -> Result<T, MediaError> {
        let mut slot = lock(&self.session);
        let plugin = match slot.as_mut() {
            Some(p) => p,
            None => slot.insert(Plugin::start(&self.launch)?.0),
        };
        let out = f(plugin);
        if plugin.is_broken() {
            *slot = None;
        }
        out
    }
}

/// Runs an idempotent request, retrying transient failures with exponential backoff.
pub(super) fn retry<T>(
    mut attempt: impl FnMut() -> Result<T, MediaError>,
) -> Result<T, MediaError> {
    let mut pause = FIRST_BACKOFF;
    for n in 1.. {
        match attempt() {
            Err(e) if e.class == ErrorClass::Transient && n < TRIES => {
                std::thread::sleep(pause);
                pause *= 2;
            }
            Err(e) if e.class == ErrorClass::Transient => {
                return Err(e.with_note(&format!("after {TRIES} tries")));
            }
            other => return other,
        }
    }
    unreachable!("the loop returns by its last try")
}

/// The error for a successful reply that lacks a field the protocol requires.
pub(super) fn missing(device: &str, op: &str, object: &str, field: &str) -> MediaError {
    MediaError::new(
        ErrorClass::Permanent,
        device,
        object,
        op,
        format!("the plugin's reply to `{op}` lacks a valid `{field}`"),
    )
    .with_hint(HINT_STDERR)
}
