//! The write phase: pieces leave the channel in BLKSIZE blocks through a writer thread, so
//! compression of the next chunk overlaps the write of the last one. The channel waits only
//! when every output buffer is in the writer's hands, and that wait is what the OUTPUT rows of
//! the statistics measure.

use super::IoCounters;
use crate::cpu::{thread_cpu_time, thread_cpu_wait};
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct OutputStream<W: Write + Send + 'static> {
    cur: Vec<u8>,
    blksize: usize,
    full: Option<SyncSender<Vec<u8>>>,
    free: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<Result<(W, WriterTimes), std::io::Error>>>,
    pub counters: IoCounters,
    pub buffer_count: usize,
    pub opened: Instant,
}

impl<W: Write + Send + 'static> OutputStream<W> {
    pub fn new(sink: W, blksize: usize, buffers: usize) -> OutputStream<W> {
        let buffers = buffers.max(1);
        let (full_tx, full_rx) = sync_channel::<Vec<u8>>(buffers);
        let (free_tx, free) = sync_channel::<Vec<u8>>(buffers);
        for _ in 1..buffers {
            free_tx
                .send(Vec::with_capacity(blksize))
                .expect("capacity for every buffer");
        }
        let writer = std::thread::spawn(move || write_loop(sink, full_rx, free_tx));
        OutputStream {
            cur: Vec::with_capacity(blksize),
            blksize,
            full: Some(full_tx),
            free,
            writer: Some(writer),
            counters: IoCounters::default(),
            buffer_count: buffers,
            opened: Instant::now(),
        }
    }

    fn ship(&mut self) -> std::io::Result<()> {
        let t = Instant::now();
        let next = match self.free.try_recv() {
            Ok(b) => {
                self.counters.record_ready();
                b
            }
            Err(TryRecvError::Empty) => {
                let b = self.free.recv().map_err(|_| self.writer_error())?;
                self.counters.record_long(t);
                b
            }
            Err(TryRecvError::Disconnected) => return Err(self.writer_error()),
        };
        let block = std::mem::replace(&mut self.cur, next);
        self.send(block)
    }

    /// Hands a filled block to the writer thread.
    fn send(&mut self, block: Vec<u8>) -> std::io::Result<()> {
        self.counters.io_count += 1;
        self.counters.bytes += block.len() as u64;
        self.full
            .as_ref()
            .expect("open until finish")
            .send(block)
            .map_err(|_| self.writer_error())
    }

    fn writer_error(&mut self) -> std::io::Error {
        match self.writer.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => e,
            _ => std::io::Error::other("the piece writer thread stopped"),
        }
    }

    /// Writes what is buffered and returns the sink, with the time spent in its writes.
    pub fn finish(mut self) -> std::io::Result<(W, IoCounters)> {
        if !self.cur.is_empty() {
            let block = std::mem::take(&mut self.cur);
            self.send(block)?;
        }
        self.full.take();
        let (w, times) = match self.writer.take().map(|h| h.join()) {
            Some(Ok(r)) => r?,
            _ => return Err(std::io::Error::other("the piece writer thread panicked")),
        };
        self.counters.io_time = times.io;
        self.counters.cpu_time = times.cpu;
        self.counters.cpu_wait = times.cpu_wait;
        Ok((w, self.counters.clone()))
    }
}

/// What the writer thread's time went to.
struct WriterTimes {
    /// Inside the sink's writes and flush.
    io: Duration,
    /// The thread's CPU time, and its time ready to run but waiting for a CPU.
    cpu: Duration,
    cpu_wait: Duration,
}

fn write_loop<W: Write>(
    mut sink: W,
    full: Receiver<Vec<u8>>,
    free: SyncSender<Vec<u8>>,
) -> std::io::Result<(W, WriterTimes)> {
    let (cpu0, wait0) = (thread_cpu_time(), thread_cpu_wait());
    let mut io = Duration::ZERO;
    for mut block in full {
        let t = Instant::now();
        sink.write_all(&block)?;
        io += t.elapsed();
        block.clear();
        // The channel may have finished and stopped taking buffers back.
        let _ = free.try_send(block);
    }
    let t = Instant::now();
    sink.flush()?;
    io += t.elapsed();
    let times = WriterTimes {
        io,
        cpu: thread_cpu_time().saturating_sub(cpu0),
        cpu_wait: thread_cpu_wait().saturating_sub(wait0),
    };
    Ok((sink, times))
}

impl<W: Write + Send + 'static> Write for OutputStream<W> {
    fn write(&mut self, mut data: &[u8]) -> std::io::Result<usize> {
        let n = data.len();
        while !data.is_empty() {
            let room = self.blksize - self.cur.len();
            let take = room.min(data.len());
            self.cur.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.cur.len() == self.blksize {
                self.ship()?;
            }
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that spends each write on the CPU, or asleep as a slow device keeps a writer.
    struct Sink {
        busy: bool,
    }

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let step = Duration::from_millis(20);
            if self.busy {
                let t0 = thread_cpu_time();
                let mut x = 0u64;
                while thread_cpu_time() - t0 < step {
                    x = x.wrapping_mul(31).wrapping_add(7);
                }
                std::hint::black_box(x);
            } else {
                std::thread::sleep(step);
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_writer_thread_reports_its_cpu_time_apart_from_its_waits() {
        let write = |busy| {
            let mut o = OutputStream::new(Sink { busy }, 4096, 2);
            o.write_all(&[7u8; 4096 * 3]).unwrap();
            o.finish().unwrap().1
        };
        let share = |c: &IoCounters| {
            crate::tuning::writer_cpu_share(
                c.cpu_time.as_micros() as u64,
                c.cpu_wait.as_micros() as u64,
                c.io_time.as_micros() as u64,
            )
        };
        let busy = write(true);
        assert!(busy.cpu_time >= Duration::from_millis(60), "{busy:?}");
        assert!(share(&busy) > 0.9, "{busy:?}");
        let idle = write(false);
        assert!(idle.io_time >= Duration::from_millis(60), "{idle:?}");
        assert!(share(&idle) < 0.25, "{idle:?}");
    }

    #[test]
    fn blocks_arrive_in_order_and_whole() {
        let mut o = OutputStream::new(Vec::new(), 4096, 2);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        for c in data.chunks(777) {
            o.write_all(c).unwrap();
        }
        let (out, c) = o.finish().unwrap();
        assert_eq!(out, data);
        assert_eq!(c.io_count, 100_000u64.div_ceil(4096));
        assert_eq!(c.bytes, 100_000);
    }
}
