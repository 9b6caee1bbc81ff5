use super::{IoEngine, IoMode, ReadDone, ReadReq};
use crate::pagecheck::read_full_at;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// RMAN's I/O slaves: helper threads that each take a read, block in it, and hand the filled
/// buffer back, so a channel keeps several reads in flight with ordinary blocking calls.
pub struct ThreadsEngine {
    tx: Option<Sender<ReadReq>>,
    done: Receiver<ReadDone>,
    workers: Vec<JoinHandle<()>>,
    outstanding: usize,
}

impl ThreadsEngine {
    pub fn new(n: usize) -> ThreadsEngine {
        let (tx, rx) = channel::<ReadReq>();
        let (done_tx, done) = channel::<ReadDone>();
        let rx = Arc::new(Mutex::new(rx));
        let workers = (0..n.max(1))
            .map(|_| {
                let (rx, done_tx) = (Arc::clone(&rx), done_tx.clone());
                std::thread::spawn(move || {
                    loop {
                        // The lock is held only to take the next request, not during the read.
                        let next = rx.lock().map(|r| r.recv());
                        let Ok(Ok(mut req)) = next else { break };
                        let t = Instant::now();
                        let result = read_full_at(
                            &req.file,
                            &mut req.buf.as_mut_slice()[..req.len],
                            req.offset,
                        );
                        let d = ReadDone {
                            tag: req.tag,
                            buf: req.buf,
                            result,
                            io_time: t.elapsed(),
                        };
                        if done_tx.send(d).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        ThreadsEngine {
            tx: Some(tx),
            done,
            workers,
            outstanding: 0,
        }
    }
}

impl IoEngine for ThreadsEngine {
    fn mode(&self) -> IoMode {
        IoMode::Threads
    }
    fn submit(&mut self, req: ReadReq) -> std::io::Result<()> {
        self.tx
            .as_ref()
            .expect("open until drop")
            .send(req)
            .map_err(|_| std::io::Error::other("i/o helper threads have stopped"))?;
        self.outstanding += 1;
        Ok(())
    }
    fn try_complete(&mut self) -> Option<ReadDone> {
        match self.done.try_recv() {
            Ok(d) => {
                self.outstanding -= 1;
                Some(d)
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => None,
        }
    }
    fn wait_complete(&mut self) -> std::io::Result<ReadDone> {
        if self.outstanding == 0 {
            return Err(std::io::Error::other("no read outstanding"));
        }
        let d = self
            .done
            .recv()
            .map_err(|_| std::io::Error::other("i/o helper threads have stopped"))?;
        self.outstanding -= 1;
        Ok(d)
    }
    fn outstanding(&self) -> usize {
        self.outstanding
    }
}

impl Drop for ThreadsEngine {
    fn drop(&mut self) {
        // Closing the queue ends the workers once they finish what they hold.
        self.tx.take();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
