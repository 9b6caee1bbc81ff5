//! The write phase: pieces leave the channel in BLKSIZE blocks through a writer thread, so
//! compression of the next chunk overlaps the write of the last one. The channel waits only
//! when every output buffer is in the writer's hands, and that wait is what the OUTPUT rows of
//! the statistics measure.

use super::IoCounters;
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;

pub struct OutputStream<W: Write + Send + 'static> {
    cur: Vec<u8>,
    blksize: usize,
    full: Option<SyncSender<Vec<u8>>>,
    free: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<Result<(W, std::time::Duration), std::io::Error>>>,
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
        let (w, io_time) = match self.writer.take().map(|h| h.join()) {
            Some(Ok(r)) => r?,
            _ => return Err(std::io::Error::other("the piece writer thread panicked")),
        };
        self.counters.io_time = io_time;
        Ok((w, self.counters.clone()))
    }
}

fn write_loop<W: Write>(
    mut sink: W,
    full: Receiver<Vec<u8>>,
    free: SyncSender<Vec<u8>>,
) -> std::io::Result<(W, std::time::Duration)> {
    let mut io_time = std::time::Duration::ZERO;
    for mut block in full {
        let t = Instant::now();
        sink.write_all(&block)?;
        io_time += t.elapsed();
        block.clear();
        // The channel may have finished and stopped taking buffers back.
        let _ = free.try_send(block);
    }
    let t = Instant::now();
    sink.flush()?;
    io_time += t.elapsed();
    Ok((sink, io_time))
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
