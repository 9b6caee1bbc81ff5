//! O_DIRECT writes with write-behind. A direct write returns only when the device has the
//! data, so one stream issuing one write at a time runs at the device's queue-depth-1 rate,
//! which on virtual and network disks is well below what a deep queue reaches. The writer
//! keeps up to [`DEPTH`] whole blocks in flight through an io_uring, each at its own offset,
//! while the caller fills the next block. Where io_uring is refused (kernel setting, seccomp)
//! blocks are written one at a time, as before. No helper threads: a thread per piece would
//! cost an allocator arena each and grow the process's memory with the number of pieces.

use io_uring::{IoUring, opcode, types};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

/// The alignment O_DIRECT asks of offsets and lengths on the file systems we meet (memory
/// is page-aligned).
pub(crate) const ALIGN: usize = 4096;
/// Bytes per write.
pub(crate) const BLOCK: usize = 1 << 20;
/// Writes in flight at most per file.
pub(crate) const DEPTH: usize = 4;

/// Blocks kept for the next writer when one finishes, at most this many.
const KEPT_BLOCKS: usize = 2 * (DEPTH + 1);

/// Blocks of finished writers. A new mapping is pages the kernel zeroes and maps one fault at
/// a time on first write, a cost every piece paid again (about 2 % of the CPU of pushing a
/// backlog of WAL segments, two pieces each); a kept block is written at once.
static KEPT: std::sync::Mutex<Vec<Block>> = std::sync::Mutex::new(Vec::new());

/// BLOCK bytes mapped straight from the kernel: page-aligned, as O_DIRECT asks, and given back
/// to the system when dropped (a heap allocation this large would stay in the allocator's arena
/// of the short-lived writer thread and grow the process with the number of pieces).
struct Block {
    ptr: std::ptr::NonNull<u8>,
}

impl Block {
    /// A kept block, or a new mapping.
    fn take() -> io::Result<Block> {
        match KEPT.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            Some(b) => Ok(b),
            None => Block::new(),
        }
    }

    /// Keeps blocks no write uses any more for the next writer, up to [`KEPT_BLOCKS`]; the
    /// rest are unmapped.
    fn keep(blocks: impl IntoIterator<Item = Block>) {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        for b in blocks {
            if kept.len() < KEPT_BLOCKS {
                kept.push(b);
            }
        }
    }

    fn new() -> io::Result<Block> {
        // SAFETY: an anonymous private mapping with no address hint has no preconditions; the
        // result is checked before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BLOCK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Block {
            ptr: std::ptr::NonNull::new(p.cast()).expect("mmap never returns null on success"),
        })
    }

    fn window(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live mapping of BLOCK readable and writable bytes owned by this
        // value alone; the borrow of self keeps it from being unmapped meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), BLOCK) }
    }
}

// SAFETY: a Block owns its mapping exclusively (no aliasing pointer escapes `window`'s
// borrow), so moving it to another thread moves that ownership, like a Vec<u8>.
unsafe impl Send for Block {}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `new` with this length and is unmapped only here.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), BLOCK) };
    }
}

/// A write the kernel may still be reading from.
struct InFlight {
    block: Block,
    offset: u64,
    len: usize,
}

pub(crate) struct DirectWriter {
    file: File,
    ring: Option<IoUring>,
    cur: Option<Block>,
    filled: usize,
    /// File offset of `cur`.
    offset: u64,
    inflight: HashMap<u64, InFlight>,
    next_tag: u64,
    spare: Vec<Block>,
    blocks: usize,
}

impl std::fmt::Debug for DirectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectWriter")
            .field("offset", &self.offset)
            .field("inflight", &self.inflight.len())
            .field("ring", &self.ring.is_some())
            .finish()
    }
}

impl DirectWriter {
    /// `file` must be open for writing with O_DIRECT, empty.
    pub(crate) fn new(file: File) -> DirectWriter {
        DirectWriter {
            file,
            ring: IoUring::new(DEPTH as u32).ok(),
            cur: None,
            filled: 0,
            offset: 0,
            inflight: HashMap::new(),
            next_tag: 1,
            spare: Vec::new(),
            blocks: 0,
        }
    }

    pub(crate) fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            if self.cur.is_none() {
                self.cur = Some(self.next_block()?);
            }
            let cur = self.cur.as_mut().expect("just set");
            let n = (BLOCK - self.filled).min(data.len());
            cur.window()[self.filled..self.filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
            if self.filled == BLOCK {
                self.submit(BLOCK)?;
            }
        }
        Ok(())
    }

    /// A free block: a spare one, a new one while fewer than DEPTH + 1 exist, else the next
    /// one a finished write gives back.
    fn next_block(&mut self) -> io::Result<Block> {
        if let Some(b) = self.spare.pop() {
            return Ok(b);
        }
        if self.blocks <= DEPTH {
            let b = Block::take()?;
            self.blocks += 1;
            return Ok(b);
        }
        self.reap_one()
    }

    fn submit(&mut self, len: usize) -> io::Result<()> {
        let mut block = self.cur.take().expect("a block is being filled");
        let offset = self.offset;
        self.offset += len as u64;
        self.filled = 0;
        let Some(ring) = self.ring.as_mut() else {
            self.file.write_all_at(&block.window()[..len], offset)?;
            self.spare.push(block);
            return Ok(());
        };
        let tag = self.next_tag;
        self.next_tag += 1;
        let entry = opcode::Write::new(
            types::Fd(self.file.as_raw_fd()),
            block.window().as_ptr(),
            len as u32,
        )
        .offset(offset)
        .build()
        .user_data(tag);
        self.inflight.insert(tag, InFlight { block, offset, len });
        // SAFETY: the entry points at `len` bytes of the block now stored in
        // `self.inflight[tag]`, whose heap allocation does not move or get freed until this
        // tag's completion is reaped (`reap_one`; `Drop` waits for every outstanding one), and
        // at `self.file`, which lives as long as `self`.
        let pushed = unsafe { ring.submission().push(&entry) };
        if pushed.is_err() {
            // Never more than DEPTH + 1 blocks exist, and the ring has room for DEPTH entries
            // beyond those reaped; a full queue means submitted work waits in the kernel.
            retry_eintr(|| ring.submit_and_wait(1))?;
            // SAFETY: as above.
            unsafe { ring.submission().push(&entry) }
                .map_err(|_| io::Error::other("io_uring submission queue stays full"))?;
        }
        retry_eintr(|| ring.submit())?;
        Ok(())
    }

    /// Waits for one write to finish and returns its block; a short write is completed in
    /// place, a failed one is the error.
    fn reap_one(&mut self) -> io::Result<Block> {
        let ring = self
            .ring
            .as_mut()
            .expect("writes are in flight only with a ring");
        loop {
            if let Some(cqe) = ring.completion().next() {
                let InFlight {
                    mut block,
                    offset,
                    len,
                } = self
                    .inflight
                    .remove(&cqe.user_data())
                    .expect("every completion belongs to a submitted write");
                let res = cqe.result();
                if res == -libc::EINTR || res == -libc::EAGAIN || res == -libc::ECANCELED {
                    // Interrupted, refused for now, or cancelled by the kernel when the
                    // io-wq worker that held it was stopped by SIGSTOP and woken by SIGCONT:
                    // the same bytes at the same offset, written here instead.
                    self.file.write_all_at(&block.window()[..len], offset)?;
                    return Ok(block);
                }
                if res < 0 {
                    return Err(io::Error::from_raw_os_error(-res));
                }
                let n = res as usize;
                if n < len {
                    self.file
                        .write_all_at(&block.window()[n..len], offset + n as u64)?;
                }
                return Ok(block);
            }
            if self.inflight.is_empty() {
                return Err(io::Error::other("no direct write outstanding"));
            }
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes the tail padded to a whole ALIGN block, waits for every write, cuts the file to
    /// `len` bytes and hands it back. The first failed write is the error.
    pub(crate) fn finish(mut self, len: u64) -> io::Result<File> {
        let mut first_err = None;
        if self.filled > 0 {
            let padded = self.filled.next_multiple_of(ALIGN);
            let filled = self.filled;
            self.cur.as_mut().expect("filled").window()[filled..padded].fill(0);
            if let Err(e) = self.submit(padded) {
                first_err = Some(e);
            }
        }
        while !self.inflight.is_empty() {
            match self.reap_one() {
                Ok(b) => self.spare.push(b),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let file = self.file.try_clone()?;
        drop(self);
        file.set_len(len)?;
        Ok(file)
    }
}

impl Drop for DirectWriter {
    /// Blocks of outstanding writes must outlive the kernel's use of them.
    fn drop(&mut self) {
        while !self.inflight.is_empty() {
            let Some(ring) = self.ring.as_mut() else {
                break;
            };
            if let Some(cqe) = ring.completion().next() {
                if let Some(done) = self.inflight.remove(&cqe.user_data()) {
                    self.spare.push(done.block);
                }
                continue;
            }
            if let Err(e) = ring.submit_and_wait(1)
                && e.kind() != io::ErrorKind::Interrupted
            {
                // The ring is unusable; leaking the blocks is the only safe choice left.
                std::mem::forget(std::mem::take(&mut self.inflight));
                break;
            }
        }
        // Only blocks no write holds: the spare ones and the one being filled.
        Block::keep(
            std::mem::take(&mut self.spare)
                .into_iter()
                .chain(self.cur.take()),
        );
    }
}

/// Runs `f` again while it fails with EINTR (a signal interrupted a blocking
/// io_uring_enter; what the kernel took from the queue is not submitted twice).
fn retry_eintr<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn bytes_land_in_order_and_length() {
        // A plain file (no O_DIRECT) checks the bookkeeping: offsets, tail, length.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = File::create(&path).unwrap();
        let mut w = DirectWriter::new(f);
        let data: Vec<u8> = (0..(7 * BLOCK + 12345)).map(|i| (i % 251) as u8).collect();
        for c in data.chunks(300_001) {
            w.write_all(c).unwrap();
        }
        w.finish(data.len() as u64).unwrap();
        let mut back = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), data.len());
        assert!(back == data);
    }

    #[test]
    fn a_kept_block_brings_nothing_of_its_last_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, data: &[u8]| {
            let path = dir.path().join(name);
            let mut w = DirectWriter::new(File::create(&path).unwrap());
            w.write_all(data).unwrap();
            w.finish(data.len() as u64).unwrap();
            std::fs::read(&path).unwrap()
        };
        let first = vec![0xAAu8; 3 * BLOCK + BLOCK / 2];
        assert!(write("first", &first) == first);
        let second: Vec<u8> = (0..5000).map(|i| (i % 7) as u8).collect();
        assert!(write("second", &second) == second);
        assert!(KEPT.lock().unwrap().len() <= KEPT_BLOCKS);
    }
}
