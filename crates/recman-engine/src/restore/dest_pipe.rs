//! The writes of a restore through an agent, pipelined: a restored file's writes go out as
//! calls from a few sender threads, so many are in flight at once on the HTTP/2 connection
//! and the restore does not wait out one round trip per write (it did: about a fifth of a
//! local restore's speed on loopback).
//!
//! Never silently short: every write is a call the agent answers only after the bytes are in
//! the file, and reports how many it wrote; a file's `sync` first waits for every write of
//! that file to be answered, and fails with the first failure among them, before it asks the
//! agent to fsync. A file is durable only once its sync succeeded, as for a local restore.
//! A file dropped without a sync (a failing restore) still waits for its writes, so none
//! lands after the command has reported.

use super::dest_remote::Caller;
use crate::EngineError;
use bytes::Bytes;
use recman_error::ErrorKind;
use serde_json::json;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Writes in flight at once per restore through an agent: enough to hide each call's round
/// trip behind the others (the backup side keeps as many reads in flight per channel).
pub(crate) const WRITES_IN_FLIGHT: usize = 16;

/// What one file's writes came to so far.
#[derive(Default)]
struct Tally {
    pending: usize,
    /// The first failure, kept as kind and message: every later call on the file returns it.
    failed: Option<(ErrorKind, String)>,
}

/// One restored file's writes in flight.
#[derive(Default)]
pub(crate) struct FileWrites {
    tally: Mutex<Tally>,
    done: Condvar,
}

impl FileWrites {
    fn failure(t: &Tally) -> Result<(), EngineError> {
        match &t.failed {
            Some((kind, message)) => Err(EngineError::Failed {
                kind: *kind,
                message: message.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Waits until every write handed over has been answered; the first failure, if any.
    pub(crate) fn settle(&self) -> Result<(), EngineError> {
        let mut t = self.tally.lock().expect("not poisoned");
        while t.pending > 0 {
            t = self.done.wait(t).expect("not poisoned");
        }
        Self::failure(&t)
    }

    fn finished(&self, r: Result<(), EngineError>) {
        let mut t = self.tally.lock().expect("not poisoned");
        if let Err(e) = r
            && t.failed.is_none()
        {
            t.failed = Some((e.kind(), e.to_string()));
        }
        t.pending -= 1;
        self.done.notify_all();
    }
}

struct Job {
    path: String,
    offset: u64,
    data: Bytes,
    file: Arc<FileWrites>,
}

/// The sender threads of one remote destination, started at its first write.
pub(crate) struct Pipe {
    caller: Arc<dyn Caller>,
    inner: Mutex<Option<(SyncSender<Job>, Vec<JoinHandle<()>>)>>,
}

impl Pipe {
    pub(crate) fn new(caller: Arc<dyn Caller>) -> Pipe {
        Pipe {
            caller,
            inner: Mutex::new(None),
        }
    }

    /// Hands `data` over to be written to `path` at `offset`; blocks while every sender is
    /// busy (the back-pressure). A failure of an earlier write of the file is returned here.
    pub(crate) fn write(
        &self,
        file: &Arc<FileWrites>,
        path: &Path,
        offset: u64,
        data: &[u8],
    ) -> Result<(), EngineError> {
        {
            let mut t = file.tally.lock().expect("not poisoned");
            FileWrites::failure(&t)?;
            t.pending += 1;
        }
        let job = Job {
            path: path.display().to_string(),
            offset,
            data: Bytes::copy_from_slice(data),
            file: Arc::clone(file),
        };
        let tx = {
            let mut g = self.inner.lock().expect("not poisoned");
            let (tx, _) = g.get_or_insert_with(|| self.start());
            tx.clone()
        };
        if let Err(std::sync::mpsc::SendError(job)) = tx.send(job) {
            let e = EngineError::Internal(
                "the restore's sender threads stopped; hint: this is a bug, report it".into(),
            );
            job.file.finished(Err(EngineError::Internal(e.to_string())));
            return Err(e);
        }
        Ok(())
    }

    fn start(&self) -> (SyncSender<Job>, Vec<JoinHandle<()>>) {
        // A rendezvous channel: a write is handed over only to an idle sender, so at most
        // WRITES_IN_FLIGHT buffers are held beyond the channel's own.
        let (tx, rx) = sync_channel::<Job>(0);
        let rx = Arc::new(Mutex::new(rx));
        let threads = (0..WRITES_IN_FLIGHT)
            .map(|_| {
                let rx = Arc::clone(&rx);
                let caller = Arc::clone(&self.caller);
                std::thread::spawn(move || send_loop(&*caller, &rx))
            })
            .collect();
        (tx, threads)
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        if let Some((tx, threads)) = self.inner.get_mut().expect("not poisoned").take() {
            drop(tx);
            for t in threads {
                let _ = t.join();
            }
        }
    }
}

fn send_loop(caller: &dyn Caller, rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = match rx.lock().expect("not poisoned").recv() {
            Ok(j) => j,
            Err(_) => return,
        };
        let len = job.data.len();
        let meta = json!({"path": job.path, "offset": job.offset});
        let r = caller
            .call_bytes("restore-write-at", meta, job.data)
            .and_then(|(v, _)| match v["written"].as_u64() {
                Some(n) if n == len as u64 => Ok(()),
                got => Err(EngineError::Failed {
                    kind: ErrorKind::Io,
                    message: format!(
                        "the agent {} wrote {} of the {len} bytes sent for {} at offset {}; the restore is incomplete; hint: use the same recman version on both hosts, and run the restore again with --force",
                        caller.name(),
                        got.map_or("an unknown number".to_string(), |n| n.to_string()),
                        job.path,
                        job.offset
                    ),
                }),
            });
        job.file.finished(r);
    }
}

#[cfg(test)]
mod tests {
    use super::super::dest::Destination;
    use super::super::dest_remote::RemoteDest;
    use super::*;
    use serde_json::Value;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// An agent that answers each write after a while, counting how many it holds at once,
    /// and fails the write at `fail_at` (after answering the others).
    #[derive(Default)]
    struct Slow {
        now: AtomicUsize,
        most: AtomicUsize,
        written: Mutex<Vec<u64>>,
        fail_at: Option<u64>,
    }

    impl Caller for Slow {
        fn name(&self) -> String {
            "slow".into()
        }
        fn call(&self, m: &str, meta: Value, body: &[u8]) -> Result<(Value, Vec<u8>), EngineError> {
            if m != "restore-write-at" {
                return Ok((json!({}), Vec::new()));
            }
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            self.now.fetch_sub(1, Ordering::SeqCst);
            let off = meta["offset"].as_u64().unwrap();
            if Some(off) == self.fail_at {
                return Err(EngineError::Invalid(format!("no room for {off}")));
            }
            self.written.lock().unwrap().push(off);
            Ok((json!({"written": body.len()}), Vec::new()))
        }
    }

    #[test]
    fn writes_are_in_flight_together_and_a_sync_waits_for_every_one() {
        let agent = Arc::new(Slow::default());
        let d = RemoteDest::new(agent.clone());
        let f = d.open(Path::new("/r/base/1/1259")).unwrap();
        for i in 0..32u64 {
            f.write_at(&[1u8; 8192], i * 8192, &mut None).unwrap();
        }
        f.sync().unwrap();
        assert_eq!(agent.written.lock().unwrap().len(), 32, "a write was lost");
        assert!(
            agent.most.load(Ordering::SeqCst) > 1,
            "the writes went one by one"
        );
    }

    #[test]
    fn a_failed_write_fails_the_files_sync() {
        let agent = Arc::new(Slow {
            fail_at: Some(5 * 8192),
            ..Default::default()
        });
        let d = RemoteDest::new(agent.clone());
        let f = d.open(Path::new("/r/base/1/1259")).unwrap();
        for i in 0..8u64 {
            // A write after the failure was seen may already be refused.
            if f.write_at(&[1u8; 8192], i * 8192, &mut None).is_err() {
                break;
            }
        }
        let e = f.sync().unwrap_err();
        assert!(e.to_string().contains("no room for 40960"), "{e}");
    }
}
