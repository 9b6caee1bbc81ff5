//! A front end's hold on the engine's stop: the flag its signal handlers set, the test
//! build's switch, and which signal stopped a failed command (for its exit status).

use crate::error::ExecError;
use recman_engine::EngineError;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// The flag a signal handler sets to the signal's number (0: no stop asked for); the engine
/// checks it between units of work, cleans up what it began and fails with `Stopped`.
pub fn stop_flag() -> Arc<AtomicUsize> {
    recman_engine::stop::flag()
}

/// Whether this build has the test-only switches (the engine's `fault-injection` feature).
pub fn test_build() -> bool {
    recman_engine::fault::test_build()
}

/// The name of the signal (`SIGINT`, `SIGTERM`) whose stop `e` is: the engine's `Stopped`
/// itself, or the executor's transparent wrapper of it. One link of an error chain is
/// looked at; the caller walks the chain.
pub fn stop_signal(e: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    let engine = e
        .downcast_ref::<EngineError>()
        .or_else(|| match e.downcast_ref::<ExecError>() {
            Some(ExecError::Engine(e)) => Some(e.as_ref()),
            _ => None,
        });
    match engine {
        Some(EngineError::Stopped { signal, .. }) => Some(signal),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_found_through_the_executor_wrapper() {
        let stopped = || EngineError::Stopped {
            signal: "SIGTERM",
            done: String::new(),
        };
        assert_eq!(stop_signal(&stopped()), Some("SIGTERM"));
        assert_eq!(stop_signal(&ExecError::from(stopped())), Some("SIGTERM"));
        assert_eq!(stop_signal(&ExecError::NeedsPgdata), None);
    }
}
