//! A read stream. It leases a drive for each block, so an idle reader never keeps a drive
//! from a writer; a seek is free until the next read, which then pays for the locate.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::Inner;
use super::drive::DriveLease;
use super::library::{ObjectEntry, cartridge_path};
use crate::error::MediaError;
use crate::media::MediaReader;

pub(super) struct VtapeReader {
    inner: Arc<Inner>,
    name: String,
    entry: ObjectEntry,
    /// Object offset where each extent starts.
    starts: Vec<u64>,
    pos: u64,
    /// The block last read and its object offset.
    block: Vec<u8>,
    block_at: Option<u64>,
    file: Option<(u32, File)>,
    /// Bytes read in order from the start and their crc32c, checked at the end: a read that
    /// went through the whole object in order proves it intact.
    checked: u64,
    crc: u32,
}

impl VtapeReader {
    pub fn new(inner: Arc<Inner>, name: &str, entry: ObjectEntry) -> VtapeReader {
        let starts = entry
            .extents
            .iter()
            .scan(0u64, |at, e| {
                let start = *at;
                *at += e.len;
                Some(start)
            })
            .collect();
        VtapeReader {
            inner,
            name: name.to_string(),
            entry,
            starts,
            pos: 0,
            block: Vec::new(),
            block_at: None,
            file: None,
            checked: 0,
            crc: 0,
        }
    }

    fn err(&self, op: &str, e: io::Error) -> io::Error {
        self.inner.err(&self.name, op, e).into_io()
    }

    /// Reads the block at object offset `at` through a drive.
    fn fill(&mut self, at: u64) -> io::Result<()> {
        let block_size = self.inner.config.block_size as u64;
        let i = self.starts.partition_point(|&s| s <= at) - 1;
        let ext = &self.entry.extents[i];
        let (cartridge, file_at) = (ext.cartridge, ext.offset + (at - self.starts[i]));
        let len = (self.entry.size - at).min(block_size);
        // Per-block tape bytes were not kept; the extent's average is close enough for time.
        let tape = (ext.tape_len as u128 * len as u128).div_ceil(ext.len.max(1) as u128) as u64;
        if self.file.as_ref().is_none_or(|(c, _)| *c != cartridge) {
            let f = File::open(cartridge_path(&self.inner.dir, cartridge))
                .map_err(|e| self.err("open cartridge", e))?;
            self.file = Some((cartridge, f));
        }
        let lease = DriveLease::acquire(&self.inner, Some(cartridge), false)
            .map_err(|e| self.err("acquire drive", e))?;
        lease.position(cartridge, file_at);
        let done = {
            let mut st = lease.state();
            let done = st.transfer(&self.inner.config, self.inner.now(), block_size, tape);
            st.stats.bytes_out += len;
            done
        };
        self.block.resize(len as usize, 0);
        if let Some((_, f)) = &self.file {
            f.read_exact_at(&mut self.block, file_at).map_err(|e| {
                let e = match e.kind() {
                    io::ErrorKind::UnexpectedEof => io::Error::new(
                        e.kind(),
                        format!("cartridge C{cartridge:04} ends before the object's data"),
                    ),
                    _ => e,
                };
                MediaError::io(&self.inner.device, &self.name, "read cartridge", e)
                    .with_hint("the object was removed while being read, or the cartridge file was changed outside recman")
                    .into_io()
            })?;
        }
        self.inner.sleep_until(done);
        self.block_at = Some(at);
        Ok(())
    }
}

impl Read for VtapeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.entry.size || buf.is_empty() {
            return Ok(0);
        }
        let block_size = self.inner.config.block_size as u64;
        let at = self.pos / block_size * block_size;
        if self.block_at != Some(at) {
            self.fill(at)?;
        }
        let off = (self.pos - at) as usize;
        let n = buf.len().min(self.block.len() - off);
        buf[..n].copy_from_slice(&self.block[off..off + n]);
        if self.checked == self.pos {
            self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
            self.checked += n as u64;
            if self.checked == self.entry.size && self.crc != self.entry.crc32c {
                let message = format!(
                    "checksum mismatch: crc32c {:08x}, the index has {:08x}",
                    self.crc, self.entry.crc32c
                );
                return Err(MediaError::permanent(&self.inner.device, &self.name, &message)
                    .with_op("read")
                    .with_hint("a cartridge file was changed outside recman; restore from another copy")
                    .into_io());
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for VtapeReader {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let to = match pos {
            SeekFrom::Start(o) => o as i128,
            SeekFrom::End(d) => self.entry.size as i128 + d as i128,
            SeekFrom::Current(d) => self.pos as i128 + d as i128,
        };
        if to < 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("seek before the start of {}", self.name),
            ));
        }
        self.pos = to as u64;
        Ok(self.pos)
    }
}

impl MediaReader for VtapeReader {
    fn len(&self) -> u64 {
        self.entry.size
    }
}
