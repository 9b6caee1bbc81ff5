use super::{IoEngine, IoMode, ReadDone, ReadReq, retry_eintr};
use crate::aligned::AlignedBuf;
use crate::pagecheck::read_full_at;
use io_uring::{IoUring, opcode, types};
use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

/// Native asynchronous reads through one io_uring per channel.
pub struct UringEngine {
    ring: IoUring,
    /// Everything the kernel may still touch for a submitted read: the buffer it writes into
    /// and the file whose descriptor it reads. Entries leave only when their completion is
    /// reaped, which is what keeps both alive and unmoved for exactly as long as needed.
    inflight: HashMap<u64, InFlight>,
    submissions: u64,
}

struct InFlight {
    file: Arc<File>,
    offset: u64,
    len: usize,
    buf: AlignedBuf,
    started: Instant,
}

impl UringEngine {
    pub fn new(depth: usize) -> std::io::Result<UringEngine> {
        if let Some(e) = crate::fault::uring_refused() {
            return Err(e);
        }
        let ring = IoUring::new(depth.clamp(4, 4096).next_power_of_two() as u32)?;
        Ok(UringEngine {
            ring,
            inflight: HashMap::new(),
            submissions: 0,
        })
    }

    fn reap(&mut self) -> Option<ReadDone> {
        let cqe = self.ring.completion().next()?;
        let tag = cqe.user_data();
        let mut f = self
            .inflight
            .remove(&tag)
            .expect("every completion belongs to a submitted read");
        let res = cqe.result();
        let result = if res == -libc::EINTR || res == -libc::EAGAIN || res == -libc::ECANCELED {
            // Interrupted or cancelled (the io-wq worker of a stopped and continued process),
            // or refused for now: read it here.
            read_full_at(
                f.file.as_ref(),
                &mut f.buf.as_mut_slice()[..f.len],
                f.offset,
            )
        } else if res < 0 {
            Err(std::io::Error::from_raw_os_error(-res))
        } else {
            let n = res as usize;
            if n > 0 && n < f.len {
                // A short read before end of file is legal for io_uring; finish it in place so
                // callers may treat short as end of file, like the other engines.
                read_full_at(
                    f.file.as_ref(),
                    &mut f.buf.as_mut_slice()[n..f.len],
                    f.offset + n as u64,
                )
                .map(|m| n + m)
            } else {
                Ok(n)
            }
        };
        Some(ReadDone {
            tag,
            buf: f.buf,
            result,
            io_time: f.started.elapsed(),
        })
    }
}

impl IoEngine for UringEngine {
    fn mode(&self) -> IoMode {
        IoMode::Uring
    }

    fn submit(&mut self, req: ReadReq) -> std::io::Result<()> {
        let ReadReq {
            tag,
            file,
            offset,
            len,
            mut buf,
        } = req;
        assert!(len <= buf.capacity(), "read larger than its buffer");
        let Some(file) = file.local().cloned() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "io_uring reads local files only",
            ));
        };
        let ptr = buf.as_mut_ptr();
        let entry = opcode::Read::new(types::Fd(file.as_raw_fd()), ptr, len as u32)
            .offset(offset)
            .build()
            .user_data(tag);
        self.inflight.insert(
            tag,
            InFlight {
                file,
                offset,
                len,
                buf,
                started: Instant::now(),
            },
        );
        loop {
            // SAFETY: the entry points at `len` bytes of the buffer now stored in
            // `self.inflight[tag]` (its heap region does not move when the value moves) and at
            // the descriptor of the file stored beside it. Neither is dropped or touched by us
            // until this tag's completion is reaped in `reap`, and `Drop` waits for every
            // outstanding completion, so the kernel never writes into freed memory.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_ok() {
                break;
            }
            // Submission queue full: hand what is queued to the kernel and retry.
            retry_eintr(|| self.ring.submit())?;
            self.submissions += 1;
        }
        retry_eintr(|| self.ring.submit())?;
        self.submissions += 1;
        Ok(())
    }

    fn try_complete(&mut self) -> Option<ReadDone> {
        self.reap()
    }

    fn wait_complete(&mut self) -> std::io::Result<ReadDone> {
        loop {
            if let Some(d) = self.reap() {
                return Ok(d);
            }
            if self.inflight.is_empty() {
                return Err(std::io::Error::other("no read outstanding"));
            }
            retry_eintr(|| self.ring.submit_and_wait(1))?;
            self.submissions += 1;
        }
    }

    fn outstanding(&self) -> usize {
        self.inflight.len()
    }

    fn ring_submissions(&self) -> u64 {
        self.submissions
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Buffers of outstanding reads must outlive the kernel's use of them.
        while !self.inflight.is_empty() {
            if self.reap().is_none() && retry_eintr(|| self.ring.submit_and_wait(1)).is_err() {
                // The ring is unusable; leaking the buffers is the only safe choice left.
                std::mem::forget(std::mem::take(&mut self.inflight));
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_through_the_ring() {
        if let Err(e) = super::super::probe_uring() {
            recman_media::testkit::missing_prerequisite(
                "io_uring",
                &format!("this kernel refuses io_uring ({e})"),
            );
            return;
        }
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        let file = Arc::new(f);
        let mut e = UringEngine::new(8).unwrap();
        for (tag, off) in [(1u64, 0u64), (2, 8192), (3, 16384), (4, 24576)] {
            e.submit(ReadReq {
                tag,
                file: crate::source::SourceFile::Local(Arc::clone(&file)),
                offset: off,
                len: 8192,
                buf: AlignedBuf::new(8192),
            })
            .unwrap();
        }
        let mut got = HashMap::new();
        while e.outstanding() > 0 {
            let d = e.wait_complete().unwrap();
            let n = d.result.unwrap();
            got.insert(d.tag, d.buf.as_slice()[..n].to_vec());
        }
        assert_eq!(got[&1], data[..8192]);
        assert_eq!(got[&4], data[24576..]);
        assert!(e.ring_submissions() >= 4);
    }
}
