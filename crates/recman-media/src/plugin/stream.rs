//! Write and read streams, each on a plugin process of its own.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use serde_json::json;

use super::pool::{Shared, missing, retry};
use super::wire::Plugin;
use crate::error::{ErrorClass, MediaError};
use crate::media::{MediaReader, MediaWriter};

/// The first read after a seek fetches this much; sequential reads double it up to
/// max_frame, so scattered small reads stay cheap and streaming uses full frames.
const READ_AHEAD: usize = 256 * 1024;

pub struct PluginWriter {
    shared: Arc<Shared>,
    /// None once committed, which is how Drop knows there is nothing to abort.
    plugin: Option<Plugin>,
    handle: u64,
    name: String,
    buf: Vec<u8>,
    chunk: usize,
    size: u64,
    crc: u32,
    /// A failed write fails the whole stream: the plugin may hold a partial chunk.
    failed: Option<MediaError>,
}

impl PluginWriter {
    pub(super) fn new(shared: Arc<Shared>, plugin: Plugin, handle: u64, name: &str) -> Self {
        let chunk = shared.hello.max_frame;
        PluginWriter {
            shared,
            plugin: Some(plugin),
            handle,
            name: name.to_string(),
            buf: Vec::with_capacity(chunk),
            chunk,
            size: 0,
            crc: 0,
            failed: None,
        }
    }

    fn send(&mut self) -> Result<(), MediaError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.buf.is_empty() {
            return Ok(());
        }
        let Some(p) = self.plugin.as_mut() else {
            unreachable!("the plugin is only taken by commit, which consumes the writer")
        };
        let crc = crc32c::crc32c(&self.buf);
        let req = json!({"handle": self.handle, "crc32c": crc});
        match p.call("write", &self.name, req, &self.buf) {
            Ok(_) => {
                self.crc = crc32c::crc32c_append(self.crc, &self.buf);
                self.size += self.buf.len() as u64;
                self.buf.clear();
                Ok(())
            }
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }
}

impl Write for PluginWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() == self.chunk {
            self.send().map_err(MediaError::into_io)?;
        }
        if let Some(e) = &self.failed {
            return Err(e.clone().into_io());
        }
        let n = data.len().min(self.chunk - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        Ok(n)
    }

    /// Hands buffered bytes to the plugin; durability comes only with commit.
    fn flush(&mut self) -> io::Result<()> {
        self.send().map_err(MediaError::into_io)
    }
}

impl MediaWriter for PluginWriter {
    fn commit(mut self: Box<Self>) -> Result<u64, MediaError> {
        self.send()?;
        let req = json!({"handle": self.handle, "size": self.size, "crc32c": self.crc});
        let Some(p) = self.plugin.as_mut() else {
            unreachable!("the plugin is only taken here")
        };
        match p.call("commit", &self.name, req, &[]) {
            Ok(_) => {
                if let Some(p) = self.plugin.take() {
                    self.shared.give_back(p);
                }
                Ok(self.size)
            }
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    fn abort(self: Box<Self>) {}
}

impl Drop for PluginWriter {
    fn drop(&mut self) {
        if let Some(mut p) = self.plugin.take() {
            // Errors are moot: the process goes back to the pool only if it still answers.
            let _ = p.call("abort", &self.name, json!({"handle": self.handle}), &[]);
            self.shared.give_back(p);
        }
    }
}

pub struct PluginReader {
    shared: Arc<Shared>,
    plugin: Option<Plugin>,
    handle: u64,
    name: String,
    len: u64,
    pos: u64,
    /// Bytes already fetched, starting at `buf_start`.
    buf: Vec<u8>,
    buf_start: u64,
    ahead: usize,
}

impl PluginReader {
    pub(super) fn new(
        shared: Arc<Shared>,
        plugin: Plugin,
        handle: u64,
        len: u64,
        name: &str,
    ) -> Self {
        PluginReader {
            shared,
            plugin: Some(plugin),
            handle,
            name: name.to_string(),
            len,
            pos: 0,
            buf: Vec::new(),
            buf_start: 0,
            ahead: READ_AHEAD,
        }
    }

    /// Fetches bytes at `pos`, at least `want` of them when the object has that many.
    fn fill(&mut self, want: usize) -> Result<(), MediaError> {
        let max = self.shared.hello.max_frame;
        let sequential = self.pos == self.buf_start + self.buf.len() as u64 && !self.buf.is_empty();
        self.ahead = if sequential {
            (self.ahead * 2).min(max)
        } else {
            READ_AHEAD.min(max)
        };
        let left = usize::try_from(self.len - self.pos).unwrap_or(usize::MAX);
        let length = want.max(self.ahead).min(max).min(left);
        let (device, name, handle, offset) =
            (self.shared.device(), &self.name, self.handle, self.pos);
        let Some(p) = self.plugin.as_mut() else {
            unreachable!("the plugin is only taken by drop")
        };
        let req = json!({"handle": handle, "offset": offset, "length": length});
        let data = retry(|| {
            let r = p.call("read", name, req.clone(), &[])?;
            let sent = r
                .u32("crc32c")
                .ok_or_else(|| missing(device, "read", name, "crc32c"))?;
            let got = crc32c::crc32c(&r.payload);
            if sent != got {
                return Err(MediaError::new(
                    ErrorClass::Permanent,
                    device,
                    name,
                    "read",
                    format!(
                        "checksum mismatch in {} bytes at offset {offset}: the plugin sent crc32c {sent:08x}, the data has {got:08x}",
                        r.payload.len()
                    ),
                )
                .with_hint("the plugin or its medium returned damaged data; read another copy of the object"));
            }
            Ok(r.payload)
        })?;
        if data.len() > length || (data.is_empty() && length > 0) {
            return Err(MediaError::new(
                ErrorClass::Permanent,
                device,
                name,
                "read",
                format!(
                    "asked for {length} bytes at offset {offset} of {}, the plugin sent {}",
                    self.len,
                    data.len()
                ),
            )
            .with_hint(
                "the object may have changed since it was opened; otherwise the plugin is faulty",
            ));
        }
        self.buf = data;
        self.buf_start = offset;
        Ok(())
    }
}

impl Read for PluginReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len || out.is_empty() {
            return Ok(0);
        }
        let end = self.buf_start + self.buf.len() as u64;
        if self.pos < self.buf_start || self.pos >= end {
            self.fill(out.len()).map_err(MediaError::into_io)?;
        }
        let at = (self.pos - self.buf_start) as usize;
        let n = out.len().min(self.buf.len() - at);
        out[..n].copy_from_slice(&self.buf[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for PluginReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the object",
            )
        })?;
        self.pos = target;
        Ok(target)
    }
}

impl MediaReader for PluginReader {
    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for PluginReader {
    fn drop(&mut self) {
        if let Some(mut p) = self.plugin.take() {
            let _ = p.call("close", &self.name, json!({"handle": self.handle}), &[]);
            self.shared.give_back(p);
        }
    }
}
