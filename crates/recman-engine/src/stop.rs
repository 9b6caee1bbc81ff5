//! A stop asked for from outside the process: SIGINT or SIGTERM. The binary's signal handler
//! stores the signal's number in [`flag`]; the worker pool and the long loops of backup,
//! restore, copy and delete look at it between items of work and end with
//! [`EngineError::Stopped`], so each command cleans up what it had begun (its job recorded
//! FAILED, its partial objects removed) instead of dying half-way.

use crate::error::EngineError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The flag a signal handler sets to the signal's number (0: no stop asked for).
pub fn flag() -> Arc<AtomicUsize> {
    static FLAG: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicUsize::new(0))).clone()
}

/// The signal that asked for a stop, if one did.
pub fn requested() -> Option<&'static str> {
    match flag().load(Ordering::Relaxed) {
        0 => None,
        n if n == libc::SIGINT as usize => Some("SIGINT"),
        n if n == libc::SIGTERM as usize => Some("SIGTERM"),
        _ => Some("a signal"),
    }
}

/// Err(Stopped) once a stop was asked for; call between items of work.
pub fn check() -> Result<(), EngineError> {
    match requested() {
        Some(signal) => Err(EngineError::Stopped {
            signal,
            done: String::new(),
        }),
        None => Ok(()),
    }
}
