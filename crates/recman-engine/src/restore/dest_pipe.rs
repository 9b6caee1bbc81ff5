//! The writes of a restore through an agent, pipelined: a restored file's writes go out as
//! calls from a few sender threads, so many are in flight at once on the HTTP/2 connection
//! and the restore does not wait out one round trip per write (it did: about a fifth of a
//! local restore's speed on loopback); contiguous writes of a file are gathered into calls of
//! up to 4 MiB. A file's sync is not a call of its own either: the
//! files to sync are collected, and [`Pipe::flush`] (the restore calls it after its last
//! write) waits for every write, then has the agent fsync them, many per call.
//!
//! Never silently short: every write is a call the agent answers only after the bytes are in
//! the file, and reports how many it wrote; the first failure of any write is kept, returned
//! by the file's next write or sync and by the flush, which the restore cannot pass without.
//! A file dropped before the flush (a failing restore) still waits for its writes, so none
//! lands after the restore has cleaned up and reported.

use super::caller::Caller;
use crate::error::EngineError;
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

/// The most bytes one write call carries.
const GATHER: usize = 4 << 20;

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
    /// Bytes not handed over yet: contiguous writes are gathered into one call of up to
    /// [`GATHER`] bytes, so a large file costs few calls.
    gathered: Mutex<Option<(u64, Vec<u8>)>>,
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

    /// The first failure of a write handed over so far, without waiting.
    pub(crate) fn check(&self) -> Result<(), EngineError> {
        Self::failure(&self.tally.lock().expect("not poisoned"))
    }

    fn add(&self) {
        self.tally.lock().expect("not poisoned").pending += 1;
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
    /// Every write of the destination, for the flush.
    all: Arc<FileWrites>,
}

impl Job {
    fn finished(&self, r: Result<(), EngineError>) {
        let again = match &r {
            Ok(()) => Ok(()),
            Err(e) => Err(EngineError::Failed {
                kind: e.kind(),
                message: e.to_string(),
            }),
        };
        self.file.finished(r);
        self.all.finished(again);
    }
}

/// Files to fsync per call at the flush: small enough for the call's meta.
const SYNC_BATCH: usize = 512;

/// The way to the sender threads, and the threads.
type Senders = (SyncSender<Job>, Vec<JoinHandle<()>>);

/// The sender threads of one remote destination, started at its first write.
pub(crate) struct Pipe {
    caller: Arc<dyn Caller>,
    inner: Mutex<Option<Senders>>,
    all: Arc<FileWrites>,
    /// Files whose writes ended, to fsync at the flush (a file may end once per backup of a
    /// chain: it is synced once).
    to_sync: Mutex<std::collections::BTreeSet<String>>,
}

impl Pipe {
    pub(crate) fn new(caller: Arc<dyn Caller>) -> Pipe {
        Pipe {
            caller,
            inner: Mutex::new(None),
            all: Arc::default(),
            to_sync: Mutex::default(),
        }
    }

    /// Notes that `path`'s writes are all handed over: it is fsynced at the flush.
    pub(crate) fn sync_later(
        &self,
        file: &Arc<FileWrites>,
        path: &Path,
    ) -> Result<(), EngineError> {
        self.hand_over_rest(file, path)?;
        file.check()?;
        self.to_sync
            .lock()
            .expect("not poisoned")
            .insert(path.display().to_string());
        Ok(())
    }

    /// Waits for every write handed over, then has the agent fsync every file noted by
    /// [`Pipe::sync_later`]; the first failure of any of them.
    pub(crate) fn flush(&self) -> Result<(), EngineError> {
        self.all.settle()?;
        let files: Vec<String> = std::mem::take(&mut *self.to_sync.lock().expect("not poisoned"))
            .into_iter()
            .collect();
        for part in files.chunks(SYNC_BATCH) {
            let ops: Vec<_> = part.iter().map(|p| json!({ "path": p })).collect();
            self.caller
                .call("restore-sync-all", json!({ "ops": ops }), &[])?;
        }
        Ok(())
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
        file.check()?;
        let full = {
            let mut g = file.gathered.lock().expect("not poisoned");
            match g.as_mut() {
                Some((at, buf))
                    if *at + buf.len() as u64 == offset && buf.len() + data.len() <= GATHER =>
                {
                    buf.extend_from_slice(data);
                    return Ok(());
                }
                _ => {
                    let mut buf = Vec::with_capacity(data.len().clamp(1 << 20, GATHER));
                    buf.extend_from_slice(data);
                    g.replace((offset, buf))
                }
            }
        };
        match full {
            Some((at, buf)) => self.hand_over(file, path, at, Bytes::from(buf)),
            None => Ok(()),
        }
    }

    /// Hands over what `file` has gathered (at its end, or when it is dropped unfinished).
    pub(crate) fn hand_over_rest(
        &self,
        file: &Arc<FileWrites>,
        path: &Path,
    ) -> Result<(), EngineError> {
        let rest = file.gathered.lock().expect("not poisoned").take();
        match rest {
            Some((at, buf)) => self.hand_over(file, path, at, Bytes::from(buf)),
            None => Ok(()),
        }
    }

    fn hand_over(
        &self,
        file: &Arc<FileWrites>,
        path: &Path,
        offset: u64,
        data: Bytes,
    ) -> Result<(), EngineError> {
        {
            let mut t = file.tally.lock().expect("not poisoned");
            FileWrites::failure(&t)?;
            t.pending += 1;
        }
        self.all.add();
        let job = Job {
            path: path.display().to_string(),
            offset,
            data,
            file: Arc::clone(file),
            all: Arc::clone(&self.all),
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
            job.finished(Err(EngineError::Internal(e.to_string())));
            return Err(e);
        }
        Ok(())
    }

    fn start(&self) -> Senders {
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
        let meta = json!({"path": job.path, "offset": job.offset, "len": len});
        let r = caller
            .call_bytes("restore-write-at", meta, job.data.clone())
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
        job.finished(r);
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
        synced: Mutex<Vec<String>>,
        fail_at: Option<u64>,
    }

    impl Caller for Slow {
        fn name(&self) -> String {
            "slow".into()
        }
        fn call(&self, m: &str, meta: Value, body: &[u8]) -> Result<(Value, Vec<u8>), EngineError> {
            if m == "restore-sync-all" {
                let ops = meta["ops"].as_array().unwrap();
                let mut s = self.synced.lock().unwrap();
                s.extend(ops.iter().map(|o| o["path"].as_str().unwrap().to_string()));
                return Ok((json!({}), Vec::new()));
            }
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
    fn writes_are_in_flight_together_and_the_flush_waits_for_every_one() {
        let agent = Arc::new(Slow::default());
        let d = RemoteDest::new(agent.clone());
        let f = d.open(Path::new("/r/base/1/1259")).unwrap();
        // Not contiguous: each write is a call of its own.
        for i in 0..32u64 {
            f.write_at(&[1u8; 8192], i * 16384, &mut None).unwrap();
        }
        f.sync().unwrap();
        d.flush().unwrap();
        assert_eq!(agent.written.lock().unwrap().len(), 32, "a write was lost");
        assert_eq!(*agent.synced.lock().unwrap(), vec!["/r/base/1/1259"]);
        assert!(
            agent.most.load(Ordering::SeqCst) > 1,
            "the writes went one by one"
        );
    }

    #[test]
    fn a_failed_write_fails_the_flush() {
        let agent = Arc::new(Slow {
            fail_at: Some(5 * 16384),
            ..Default::default()
        });
        let d = RemoteDest::new(agent.clone());
        let f = d.open(Path::new("/r/base/1/1259")).unwrap();
        for i in 0..8u64 {
            // A write after the failure was seen may already be refused.
            if f.write_at(&[1u8; 8192], i * 16384, &mut None).is_err() {
                break;
            }
        }
        let _ = f.sync();
        let e = d.flush().unwrap_err();
        assert!(e.to_string().contains("no room for 81920"), "{e}");
        assert!(
            agent.synced.lock().unwrap().is_empty(),
            "a failed file was synced"
        );
    }

    #[test]
    fn contiguous_writes_are_gathered_and_all_arrive() {
        let agent = Arc::new(Slow::default());
        let d = RemoteDest::new(agent.clone());
        let f = d.open(Path::new("/r/base/1/1259")).unwrap();
        // 6 MiB in 1 MiB writes, then a block elsewhere; dropped unsynced, as a file spread
        // over pieces is at a piece's end: what it gathered is still written.
        for i in 0..6u64 {
            f.write_at(&[1u8; 1 << 20], i << 20, &mut None).unwrap();
        }
        f.write_at(&[2u8; 8192], 100 << 20, &mut None).unwrap();
        drop(f);
        d.flush().unwrap();
        let mut w = agent.written.lock().unwrap().clone();
        w.sort();
        assert_eq!(
            w,
            vec![0, 4 << 20, 100 << 20],
            "4 MiB per call at most, nothing lost"
        );
    }
}
