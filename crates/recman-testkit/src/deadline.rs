//! The one way tests look at the clock: a generous limit on waiting for something that
//! should happen, so that a hang fails with a message instead of blocking CI. It never
//! measures speed: a slow machine only waits longer, and the limit is minutes where the
//! event takes seconds. `.ci/run` refuses `.elapsed()` inside an assertion in any test, so
//! a wall-clock bound cannot creep back in as a claim.

use std::fmt::Display;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    start: Instant,
    limit: Duration,
}

impl Deadline {
    /// A deadline `limit` from now.
    pub fn after(limit: Duration) -> Deadline {
        Deadline {
            start: Instant::now(),
            limit,
        }
    }

    /// Whether the limit has passed, for loops that give up in their own way.
    pub fn passed(&self) -> bool {
        self.start.elapsed() >= self.limit
    }

    /// Panics once the limit has passed, saying what never happened.
    pub fn check(&self, what: impl Display) {
        if self.passed() {
            panic!(
                "gave up after {} s waiting: {what}",
                self.limit.as_secs_f64()
            );
        }
    }
}

/// Polls `cond` every 200 ms until it holds; after `limit`, fails loudly with `what` and
/// `detail()` (a log tail, say).
pub fn wait_until(
    what: &str,
    limit: Duration,
    mut cond: impl FnMut() -> bool,
    detail: impl Fn() -> String,
) {
    let deadline = Deadline::after(limit);
    while !cond() {
        if deadline.passed() {
            panic!(
                "{what} did not happen within {} s\n{}",
                limit.as_secs(),
                detail()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
