use super::{IoEngine, IoMode, ReadDone, ReadReq};
use crate::pagecheck::read_full_at;
use std::collections::VecDeque;
use std::time::Instant;

/// Blocking reads in the channel's own thread: the read happens at submission, so the channel
/// never overlaps reading with its other work (RMAN's synchronous I/O).
#[derive(Default)]
pub struct SyncEngine {
    done: VecDeque<ReadDone>,
}

impl IoEngine for SyncEngine {
    fn mode(&self) -> IoMode {
        IoMode::Sync
    }
    fn submit(&mut self, mut req: ReadReq) -> std::io::Result<()> {
        let t = Instant::now();
        let result = read_full_at(
            &req.file,
            &mut req.buf.as_mut_slice()[..req.len],
            req.offset,
        );
        self.done.push_back(ReadDone {
            tag: req.tag,
            buf: req.buf,
            result,
            io_time: t.elapsed(),
        });
        Ok(())
    }
    fn try_complete(&mut self) -> Option<ReadDone> {
        self.done.pop_front()
    }
    fn wait_complete(&mut self) -> std::io::Result<ReadDone> {
        self.done
            .pop_front()
            .ok_or_else(|| std::io::Error::other("no read outstanding"))
    }
    fn outstanding(&self) -> usize {
        self.done.len()
    }
}
