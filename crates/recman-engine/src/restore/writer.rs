//! The write phase of one restore channel: a few writer threads with aligned output buffers,
//! so the channel decompresses and checks the next chunks while earlier ones are written, and
//! several writes are in flight at once (a direct write returns only when the device has the
//! data, so one writer issuing one write at a time runs at the device's queue-depth-1 rate,
//! which on many disks is a fraction of what it can take).
//!
//! Consecutive chunks of a file are gathered into one write of up to the shape's request size
//! before they are handed over: a backup read with many files at once holds 128 KiB chunks,
//! and writes that small cost a direct write its speed.
//!
//! A file's end does not wait for the disk: the destination makes every restored file durable
//! before the restore reports done ([`super::dest::Destination::flush`]), many at once.

use super::dest::DestFile;
use super::writes::WriteShape;
use crate::aligned::AlignedBuf;
use crate::error::EngineError;
use crate::io::IoCounters;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Files whose gathered bytes wait for more at once; the oldest is handed over when another
/// file starts gathering.
const GATHERING: usize = 4;

struct Job {
    file: Arc<dyn DestFile>,
    offset: u64,
    buf: AlignedBuf,
    len: usize,
}

/// Bytes of one file waiting for the next contiguous chunk.
struct Gather {
    file: Arc<dyn DestFile>,
    offset: u64,
    buf: AlignedBuf,
    len: usize,
}

/// See the module documentation. The first failure of a write stops the writers; the channel
/// sees it at its next call.
pub(super) struct FileWriter {
    jobs: Option<SyncSender<Job>>,
    free: Receiver<AlignedBuf>,
    threads: Vec<JoinHandle<Result<Duration, EngineError>>>,
    shape: WriteShape,
    gathering: Vec<Gather>,
    /// One write per buffer taken; READY when a free buffer was there, SHORT when one was
    /// after a yield, LONG when the channel blocked for it.
    pub counters: IoCounters,
}

impl FileWriter {
    pub(super) fn new(shape: WriteShape) -> FileWriter {
        let writers = shape.writers.max(1);
        let buffers = writers + GATHERING;
        let (jobs, rx) = sync_channel::<Job>(writers);
        let (free_tx, free) = sync_channel::<AlignedBuf>(buffers);
        for _ in 0..buffers {
            free_tx
                .send(AlignedBuf::new(shape.request))
                .expect("room for every buffer");
        }
        let rx = Arc::new(Mutex::new(rx));
        let threads = (0..writers)
            .map(|_| {
                let (rx, free) = (Arc::clone(&rx), free_tx.clone());
                std::thread::spawn(move || write_loop(&rx, &free))
            })
            .collect();
        FileWriter {
            jobs: Some(jobs),
            free,
            threads,
            shape,
            gathering: Vec::new(),
            counters: IoCounters::default(),
        }
    }

    /// Queues `data` to be written to `file` at `offset`.
    pub(super) fn write(
        &mut self,
        file: &Arc<dyn DestFile>,
        offset: u64,
        mut data: &[u8],
    ) -> Result<(), EngineError> {
        let mut offset = offset;
        while !data.is_empty() {
            let g = match self.gathering.iter().position(|g| same(&g.file, file)) {
                Some(i) if self.gathering[i].offset + self.gathering[i].len as u64 == offset => i,
                Some(i) => {
                    let g = self.gathering.remove(i);
                    self.hand_over(g)?;
                    self.start(file, offset)?
                }
                None => self.start(file, offset)?,
            };
            let g = &mut self.gathering[g];
            let room = g.buf.capacity() - g.len;
            let n = room.min(data.len());
            g.buf.as_mut_slice()[g.len..g.len + n].copy_from_slice(&data[..n]);
            g.len += n;
            self.counters.bytes += n as u64;
            data = &data[n..];
            offset += n as u64;
            if g.len == g.buf.capacity() {
                let g = self
                    .gathering
                    .iter()
                    .position(|x| same(&x.file, file))
                    .expect("just filled");
                let g = self.gathering.remove(g);
                self.hand_over(g)?;
            }
        }
        Ok(())
    }

    /// The file's last chunk came: what it gathered goes out.
    pub(super) fn end_file(&mut self, file: &Arc<dyn DestFile>) -> Result<(), EngineError> {
        if let Some(i) = self.gathering.iter().position(|g| same(&g.file, file)) {
            let g = self.gathering.remove(i);
            self.hand_over(g)?;
        }
        Ok(())
    }

    /// Starts gathering for `file` at `offset` in a free buffer; returns its index.
    fn start(&mut self, file: &Arc<dyn DestFile>, offset: u64) -> Result<usize, EngineError> {
        if self.gathering.len() >= GATHERING {
            let oldest = self.gathering.remove(0);
            self.hand_over(oldest)?;
        }
        let buf = self.take_buffer()?;
        self.gathering.push(Gather {
            file: Arc::clone(file),
            offset,
            buf,
            len: 0,
        });
        Ok(self.gathering.len() - 1)
    }

    fn take_buffer(&mut self) -> Result<AlignedBuf, EngineError> {
        let t = Instant::now();
        self.counters.io_count += 1;
        match self.free.try_recv() {
            Ok(b) => {
                self.counters.record_ready();
                Ok(b)
            }
            Err(TryRecvError::Empty) => {
                std::thread::yield_now();
                match self.free.try_recv() {
                    Ok(b) => {
                        self.counters.record_short(t);
                        Ok(b)
                    }
                    Err(TryRecvError::Empty) => {
                        let b = self.free.recv().map_err(|_| self.stopped())?;
                        self.counters.record_long(t);
                        Ok(b)
                    }
                    Err(TryRecvError::Disconnected) => Err(self.stopped()),
                }
            }
            Err(TryRecvError::Disconnected) => Err(self.stopped()),
        }
    }

    fn hand_over(&mut self, g: Gather) -> Result<(), EngineError> {
        if g.len == 0 {
            return Ok(());
        }
        let tx = self.jobs.as_ref().expect("open until finish");
        let job = Job {
            file: g.file,
            offset: g.offset,
            buf: g.buf,
            len: g.len,
        };
        tx.send(job).map_err(|_| self.stopped())
    }

    /// The writers' first error, once they have stopped.
    fn stopped(&mut self) -> EngineError {
        self.jobs.take();
        let mut first = None;
        for h in self.threads.drain(..) {
            if let Ok(Err(e)) = h.join() {
                first.get_or_insert(e);
            }
        }
        first.unwrap_or_else(|| {
            EngineError::Internal(
                "a restore writer thread stopped; hint: this is a bug, report it".into(),
            )
        })
    }

    /// Hands over what is gathered, waits for every write; returns the writes' statistics.
    pub(super) fn finish(mut self) -> Result<IoCounters, EngineError> {
        for g in std::mem::take(&mut self.gathering) {
            self.hand_over(g)?;
        }
        self.jobs.take();
        let mut io_time = Duration::ZERO;
        let mut first = None;
        for h in self.threads.drain(..) {
            match h.join() {
                Ok(Ok(t)) => io_time += t,
                Ok(Err(e)) => {
                    first.get_or_insert(e);
                }
                Err(_) => {
                    first.get_or_insert(EngineError::Internal(
                        "a restore writer thread panicked; hint: this is a bug, report it".into(),
                    ));
                }
            }
        }
        if let Some(e) = first {
            return Err(e);
        }
        // The writers' time over the channel's wall time is what the device gave: their sum
        // over the number of writers is the time a write was outstanding on average.
        self.counters.io_time = io_time / self.shape.writers.max(1) as u32;
        Ok(std::mem::take(&mut self.counters))
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        // A channel that fails still waits for its writers, so no write lands after the
        // command has reported.
        self.gathering.clear();
        self.jobs.take();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

fn same(a: &Arc<dyn DestFile>, b: &Arc<dyn DestFile>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

fn write_loop(
    jobs: &Mutex<Receiver<Job>>,
    free: &SyncSender<AlignedBuf>,
) -> Result<Duration, EngineError> {
    let mut io_time = Duration::ZERO;
    let mut bounce = None;
    loop {
        // The lock is held only to take the next job, not while writing it.
        let job = match jobs.lock().expect("job queue lock").recv() {
            Ok(j) => j,
            Err(_) => return Ok(io_time),
        };
        let t = Instant::now();
        job.file
            .write_at(&job.buf.as_slice()[..job.len], job.offset, &mut bounce)?;
        io_time += t.elapsed();
        // The channel may have stopped taking buffers back.
        let _ = free.try_send(job.buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::restore::dest::{Destination, LocalDest, WriteMode};

    #[test]
    fn gathered_writes_land_in_place_from_several_writers() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = (0..6).map(|i| dir.path().join(format!("f{i}"))).collect();
        let dest = LocalDest::for_restore(WriteMode::Buffered);
        let files: Vec<Arc<dyn DestFile>> = paths.iter().map(|p| dest.open(p).unwrap()).collect();
        let shape = WriteShape {
            writers: 3,
            request: 256 << 10,
        };
        let mut w = FileWriter::new(shape);
        let chunk = 96 << 10;
        let want: Vec<Vec<u8>> = (0..6)
            .map(|f| {
                (0..chunk * 7 + 100)
                    .map(|i| ((i * 7 + f * 13) % 251) as u8)
                    .collect()
            })
            .collect();
        // Interleaved as a multiplexed piece holds them: chunk k of every file in turn, so
        // more files gather at once than there are gathering slots.
        for k in 0..8 {
            for (f, data) in want.iter().enumerate() {
                let at = k * chunk;
                if at < data.len() {
                    let end = (at + chunk).min(data.len());
                    w.write(&files[f], at as u64, &data[at..end]).unwrap();
                }
            }
        }
        for f in &files {
            w.end_file(f).unwrap();
        }
        let c = w.finish().unwrap();
        dest.flush().unwrap();
        assert_eq!(c.bytes, want.iter().map(|d| d.len() as u64).sum::<u64>());
        for (p, d) in paths.iter().zip(&want) {
            assert!(std::fs::read(p).unwrap() == *d, "{} differs", p.display());
        }
    }
}
