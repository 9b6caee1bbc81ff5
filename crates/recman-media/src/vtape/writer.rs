//! A write stream: one drive for its whole life, blocks of BLKSIZE appended to cartridges,
//! spanning to the next cartridge when one is full, visible only after the index commit.

use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::Inner;
use super::drive::DriveLease;
use super::library::{self, Extent, Index, ObjectEntry, Reserved};
use super::model;
use crate::error::MediaError;
use crate::media::MediaWriter;

pub(super) struct VtapeWriter {
    inner: Arc<Inner>,
    name: String,
    lease: DriveLease,
    /// Every cartridge written so far, locked until the end; the last is in the drive.
    carts: Vec<Reserved>,
    extents: Vec<Extent>,
    /// The block being filled.
    block: Vec<u8>,
    size: u64,
    crc: u32,
    /// After a failed block the stream is broken: the object could only be incomplete.
    failed: Option<MediaError>,
}

impl VtapeWriter {
    /// Waits for a drive, then mounts a cartridge with room on it.
    pub fn start(inner: Arc<Inner>, name: &str) -> Result<VtapeWriter, MediaError> {
        let lease = DriveLease::acquire(&inner, None, true)
            .map_err(|e| inner.err(name, "acquire drive", e))?;
        let mut w = VtapeWriter {
            block: Vec::with_capacity(inner.config.block_size),
            inner,
            name: name.to_string(),
            lease,
            carts: Vec::new(),
            extents: Vec::new(),
            size: 0,
            crc: 0,
            failed: None,
        };
        w.load_next("create")?;
        Ok(w)
    }

    /// Reserves the next cartridge and puts it in the drive at its end of data.
    fn load_next(&mut self, op: &str) -> Result<(), MediaError> {
        let inner = &self.inner;
        // Only a fresh stream may keep what is in the drive: when spanning, that cartridge
        // has just filled up.
        let prefer = if self.carts.is_empty() {
            self.lease.state().mounted
        } else {
            None
        };
        let reserved = {
            let _lock = library::lock_index(inner)?;
            let index = Index::load(inner)?;
            library::reserve(inner, &index, &self.name, prefer)?
        };
        let r = reserved.ok_or_else(|| library::library_full(inner, &self.name, op))?;
        self.lease.position(r.number, r.rec.end);
        self.carts.push(r);
        Ok(())
    }

    /// Writes the block buffer to tape, padding a short last block to BLKSIZE.
    fn put_block(&mut self) -> Result<(), MediaError> {
        let inner = self.inner.clone();
        let config = &inner.config;
        let len = self.block.len() as u64;
        self.block.resize(config.block_size, 0);
        let tape = model::tape_bytes(config, &self.block);
        let full = self
            .carts
            .last()
            .is_some_and(|c| c.rec.tape_used + tape > config.cartridge_capacity);
        if full {
            if let Some(c) = self.carts.last_mut() {
                c.rec.full = true;
            }
            self.load_next("write")?;
        }
        let Some(cart) = self.carts.last_mut() else {
            unreachable!("start reserves a cartridge and spanning adds one or fails")
        };
        let offset = cart.rec.end;
        cart.file
            .write_all_at(&self.block, offset)
            .map_err(|e| MediaError::io(&self.inner.device, &self.name, "write cartridge", e))?;
        cart.rec.end += self.block.len() as u64;
        cart.rec.tape_used += tape;
        match self.extents.last_mut() {
            Some(e) if e.cartridge == cart.number => {
                e.len += len;
                e.tape_len += tape;
            }
            _ => self.extents.push(Extent {
                cartridge: cart.number,
                offset,
                len,
                tape_len: tape,
            }),
        }
        self.crc = crc32c::crc32c_append(self.crc, &self.block[..len as usize]);
        self.size += len;
        let wait = {
            let mut st = self.lease.state();
            let now = inner.now();
            let done = st.transfer(config, now, self.block.len() as u64, tape);
            st.stats.bytes_in += len;
            st.stats.tape_bytes += tape;
            st.buffer(
                done,
                self.block.len() as u64,
                now,
                config.drive_buffer as u64,
            )
        };
        self.block.clear();
        if let Some(t) = wait {
            inner.sleep_until(t);
        }
        Ok(())
    }
}

impl Write for VtapeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(e) = &self.failed {
            return Err(e.clone().into_io());
        }
        let room = self.inner.config.block_size - self.block.len();
        let n = room.min(buf.len());
        self.block.extend_from_slice(&buf[..n]);
        if self.block.len() == self.inner.config.block_size
            && let Err(e) = self.put_block()
        {
            self.failed = Some(e.clone());
            return Err(e.into_io());
        }
        Ok(n)
    }

    /// Blocks go to the drive when full; a partial one waits for more data or the commit.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl MediaWriter for VtapeWriter {
    fn commit(mut self: Box<Self>) -> Result<u64, MediaError> {
        if let Some(e) = self.failed.take() {
            return Err(e.with_op("commit"));
        }
        if !self.block.is_empty() {
            self.put_block()?;
        }
        for c in &self.carts {
            c.file
                .sync_data()
                .map_err(|e| self.inner.err(&self.name, "fsync cartridge", e))?;
        }
        // Closing a tape file writes a filemark, which waits for the drive buffer to drain.
        let drained = self.lease.state().stats.free_at;
        self.inner.sleep_until(drained);
        let entry = ObjectEntry {
            size: self.size,
            crc32c: self.crc,
            extents: std::mem::take(&mut self.extents),
        };
        library::commit(&self.inner, &self.name, entry, &self.carts)
            .map_err(|e| e.with_op("commit"))?;
        Ok(self.size)
    }

    /// Nothing to undo: the blocks already on tape become dead space, and the drive and the
    /// cartridges are released when the writer is dropped.
    fn abort(self: Box<Self>) {}
}
