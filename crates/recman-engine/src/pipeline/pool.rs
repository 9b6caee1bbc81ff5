//! One worker pool for the commands that spread pieces or sets over threads (backup channels,
//! restore and validate). Workers share one cancellation flag: the first worker to fail sets
//! it, the others see it between items and stop with [`EngineError::Cancelled`], and the pool
//! reports the error that caused the stop, never a cancellation. A stop asked for by a signal
//! ([`crate::stop`]) ends every worker the same way, and is what the pool reports.

use crate::error::EngineError;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a worker knows of the pool: its number (1-based: channel numbers) and the shared
/// cancellation flag.
pub(crate) struct Worker<'a> {
    pub no: u32,
    cancel: &'a AtomicBool,
    what: &'static str,
}

impl Worker<'_> {
    /// Err(Cancelled) once another worker has failed, Err(Stopped) once SIGINT or SIGTERM
    /// asked the process to stop; call between items of work.
    pub fn check(&self) -> Result<(), EngineError> {
        crate::stop::check()?;
        if self.cancel.load(Ordering::Relaxed) {
            Err(EngineError::Cancelled { what: self.what })
        } else {
            Ok(())
        }
    }
}

/// Runs `work` on `workers` threads (at least one) and returns each worker's result, in
/// worker order. The first error cancels the others; the error returned is the first one
/// that is not a cancellation (a panic counts as an error). `what` names the work in the
/// cancellation message ("backup", "restore").
pub(crate) fn each<R: Send>(
    workers: usize,
    what: &'static str,
    work: impl Fn(&Worker) -> Result<R, EngineError> + Sync,
) -> Result<Vec<R>, EngineError> {
    let cancel = AtomicBool::new(false);
    let results: Vec<Result<R, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..=workers.max(1) as u32)
            .map(|no| {
                let (cancel, work) = (&cancel, &work);
                s.spawn(move || {
                    let w = Worker { no, cancel, what };
                    crate::progress::set_current_channel(no);
                    let r = work(&w);
                    if r.is_err() {
                        cancel.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EngineError::Internal(format!(
                        "a {what} worker thread panicked; hint: this is a bug, report it with the command that ran"
                    )))
                })
            })
            .collect()
    });
    let mut out = Vec::with_capacity(results.len());
    let mut first: Option<EngineError> = None;
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(e) if first.as_ref().is_none_or(|f| f.is_cancelled()) => first = Some(e),
            Err(_) => {}
        }
    }
    match first {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Runs `work` over `items` on `workers` threads, each worker taking the next item in the
/// order given when it is done with one (give the largest first to end together); returns
/// the results in item order. Cancellation as for [`each`].
pub(crate) fn map<I: Sync, R: Send>(
    workers: usize,
    what: &'static str,
    items: &[I],
    order: impl IntoIterator<Item = usize>,
    work: impl Fn(&Worker, &I) -> Result<R, EngineError> + Sync,
) -> Result<Vec<R>, EngineError> {
    let queue = Mutex::new(order.into_iter().collect::<Vec<_>>().into_iter());
    let n = workers.max(1).min(items.len().max(1));
    let per_worker = each(n, what, |w| {
        let mut done = Vec::new();
        loop {
            w.check()?;
            let Some(i) = queue.lock().expect("queue lock").next() else {
                return Ok(done);
            };
            done.push((i, work(w, &items[i])?));
        }
    })?;
    let mut all: Vec<(usize, R)> = per_worker.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_is_reported_not_the_cancellation() {
        // Worker 1 fails after the others have seen nothing yet; whatever the timing, the
        // error returned is the cause.
        for _ in 0..20 {
            let r: Result<Vec<()>, _> = each(4, "test", |w| {
                if w.no == 1 {
                    return Err(EngineError::Corrupt("worker 1 broke".into()));
                }
                loop {
                    w.check()?;
                    std::thread::yield_now();
                }
            });
            match r {
                Err(EngineError::Corrupt(m)) => assert_eq!(m, "worker 1 broke"),
                other => panic!("expected the cause, got {other:?}"),
            }
        }
    }

    #[test]
    fn map_keeps_item_order_and_runs_each_item_once() {
        let items: Vec<u32> = (0..100).collect();
        let r = map(3, "test", &items, (0..100).rev(), |_, &i| Ok(i * 2)).unwrap();
        assert_eq!(r, items.iter().map(|i| i * 2).collect::<Vec<_>>());
    }
}
