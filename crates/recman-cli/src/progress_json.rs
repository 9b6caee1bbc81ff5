//! `--progress json`: one JSON object per line on stderr, for wrappers and operators' UIs.
//! A `start` event when an operation begins, a `progress` event every second while it runs,
//! a `done` event when it ends. Bytes are counted per channel from the engine's channel
//! workers (`recman_command::progress::current_channel`); channel 0 is work outside the channels.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Channels counted apart; higher numbers share the last slot.
const SLOTS: usize = 65;
const INTERVAL: Duration = Duration::from_secs(1);

pub struct JsonEvents {
    run: Mutex<Option<Run>>,
    counts: Arc<Counts>,
}

/// Bytes per channel; the total is their sum, read from the same loads, so an event's
/// channels always add up to its bytes.
struct Counts {
    channels: [AtomicU64; SLOTS],
}

struct Run {
    stop: Sender<()>,
    ticker: JoinHandle<()>,
    meta: Arc<Meta>,
}

struct Meta {
    what: String,
    total: u64,
    started: Instant,
}

impl JsonEvents {
    pub fn new() -> JsonEvents {
        JsonEvents {
            run: Mutex::new(None),
            counts: Arc::new(Counts {
                channels: std::array::from_fn(|_| AtomicU64::new(0)),
            }),
        }
    }

    pub fn start(&self, what: &str, total: u64) {
        self.finish();
        for c in &self.counts.channels {
            c.store(0, Ordering::Relaxed);
        }
        let meta = Arc::new(Meta {
            what: what.to_string(),
            total,
            started: Instant::now(),
        });
        emit(&event("start", &meta, &self.counts));
        let (stop, rx) = mpsc::channel::<()>();
        let (m, counts) = (Arc::clone(&meta), Arc::clone(&self.counts));
        let ticker = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(INTERVAL) {
                emit(&event("progress", &m, &counts));
            }
        });
        *self.run.lock().expect("progress lock") = Some(Run { stop, ticker, meta });
    }

    pub fn advance(&self, bytes: u64) {
        let slot = (recman_command::progress::current_channel() as usize).min(SLOTS - 1);
        self.counts.channels[slot].fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn finish(&self) {
        let Some(run) = self.run.lock().expect("progress lock").take() else {
            return;
        };
        let _ = run.stop.send(());
        let _ = run.ticker.join();
        emit(&event("done", &run.meta, &self.counts));
    }
}

impl JsonEvents {
    /// A line for the user as an event, so that stderr holds nothing but JSON.
    pub fn note(&self, kind: &str, line: &str) {
        emit(&serde_json::json!({"event": kind, "message": line}));
    }
}

impl Drop for JsonEvents {
    fn drop(&mut self) {
        self.finish();
    }
}

fn event(kind: &str, meta: &Meta, counts: &Counts) -> serde_json::Value {
    let secs = meta.started.elapsed().as_secs_f64();
    let per: Vec<u64> = counts
        .channels
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .collect();
    let bytes: u64 = per.iter().sum();
    let rate = |b: u64| if secs > 0.0 { b as f64 / secs } else { 0.0 };
    let overall = rate(bytes);
    // Unknown until bytes flow; 0 once the expected bytes are done.
    let eta = if bytes >= meta.total {
        Some(0.0)
    } else if overall > 0.0 {
        Some((meta.total - bytes) as f64 / overall)
    } else {
        None
    };
    let channels: Vec<serde_json::Value> = per
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b > 0)
        .map(|(no, &b)| {
            serde_json::json!({"channel": no, "bytes": b, "rate_bytes_per_sec": rate(b).round()})
        })
        .collect();
    serde_json::json!({
        "event": kind,
        "operation": meta.what,
        "elapsed_secs": (secs * 1000.0).round() / 1000.0,
        "bytes": bytes,
        "total_bytes": meta.total,
        "rate_bytes_per_sec": overall.round(),
        "eta_secs": eta.map(|e| (e * 10.0).round() / 10.0),
        "channels": channels,
    })
}

fn emit(v: &serde_json::Value) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{v}");
}
