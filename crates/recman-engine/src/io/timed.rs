use super::IoCounters;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Counts and times the reads of a stream read sequentially (a piece during restore or
/// validation), for the statistics of jobs whose reads are synchronous.
pub struct TimedReader<R> {
    inner: R,
    counters: Arc<Mutex<IoCounters>>,
}

impl<R: Read> TimedReader<R> {
    pub fn new(inner: R) -> (TimedReader<R>, Arc<Mutex<IoCounters>>) {
        let counters = Arc::new(Mutex::new(IoCounters::default()));
        (
            TimedReader {
                inner,
                counters: Arc::clone(&counters),
            },
            counters,
        )
    }
}

impl<R: Read> Read for TimedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let t = Instant::now();
        let n = self.inner.read(buf)?;
        let mut c = self.counters.lock().expect("counters lock");
        c.io_count += 1;
        c.ready += 1;
        c.bytes += n as u64;
        c.io_time += t.elapsed();
        Ok(n)
    }
}

impl<R: std::io::Seek> std::io::Seek for TimedReader<R> {
    /// A seek is no read: a ranged read of a piece (its index, a few of its chunks) counts only
    /// the bytes it reads.
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}
