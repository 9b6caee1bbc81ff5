//! Reads by ranged GETs of `read_ahead` bytes, fetching the next range while the caller
//! consumes the current one.

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};
use tokio::task::JoinHandle;

use super::classify::{Failure, media_error};
use super::{Ctx, RetryPolicy, wait};
use crate::error::{ErrorClass, MediaError};
use crate::media::MediaReader;

/// What every GET of one reader is pinned to, so it never mixes two versions of an object.
#[derive(Clone, Debug)]
pub(super) enum Pin {
    /// The ETag seen at open: an overwrite during the read fails the read.
    ETag(Option<String>),
    /// One version of a versioned bucket (a repository read as of a time).
    Version(String),
}

pub(super) struct S3Reader {
    ctx: Arc<Ctx>,
    path: Path,
    name: String,
    len: u64,
    pin: Pin,
    pos: u64,
    buf: Bytes,
    buf_start: u64,
    next: Option<(u64, JoinHandle<Result<Bytes, MediaError>>)>,
}

impl S3Reader {
    pub(super) fn new(ctx: Arc<Ctx>, path: Path, name: &str, len: u64, pin: Pin) -> S3Reader {
        S3Reader {
            ctx,
            path,
            name: name.to_string(),
            len,
            pin,
            pos: 0,
            buf: Bytes::new(),
            buf_start: 0,
            next: None,
        }
    }

    fn range_at(&self, start: u64) -> Range<u64> {
        start..(start + self.ctx.cfg.read_ahead as u64).min(self.len)
    }

    fn fetch(&self, range: Range<u64>) -> JoinHandle<Result<Bytes, MediaError>> {
        let job = Fetch {
            store: Arc::clone(&self.ctx.store),
            path: self.path.clone(),
            pin: self.pin.clone(),
            device: self.ctx.device.clone(),
            name: self.name.clone(),
            retry: self.ctx.retry,
        };
        self.ctx.spawn(job.run(range))
    }

    /// Makes the buffer hold `self.pos`, which is below `len`.
    fn fill(&mut self) -> Result<(), MediaError> {
        let pos = self.pos;
        let pending = match self.next.take() {
            Some((start, h)) if start == pos => h,
            other => {
                if let Some((_, h)) = other {
                    h.abort();
                }
                self.fetch(self.range_at(pos))
            }
        };
        self.buf = wait(pending)?;
        self.buf_start = pos;
        let end = pos + self.buf.len() as u64;
        if end < self.len {
            self.next = Some((end, self.fetch(self.range_at(end))));
        }
        Ok(())
    }
}

/// One ranged GET, re-requesting what is left when the body breaks off.
struct Fetch {
    store: Arc<dyn super::Backend>,
    path: Path,
    pin: Pin,
    device: String,
    name: String,
    retry: RetryPolicy,
}

impl Fetch {
    async fn run(self, range: Range<u64>) -> Result<Bytes, MediaError> {
        let op = format!("read at {}", range.start);
        let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
        let start = Instant::now();
        let mut attempt = 0;
        loop {
            let at = range.start + out.len() as u64;
            let (if_match, version) = match &self.pin {
                Pin::ETag(e) => (e.clone(), None),
                Pin::Version(v) => (None, Some(v.clone())),
            };
            let opts = GetOptions {
                range: Some(GetRange::Bounded(at..range.end)),
                if_match,
                version,
                ..Default::default()
            };
            let failure = match self.store.get_opts(&self.path, opts).await {
                Ok(r) => {
                    let mut body = r.into_stream();
                    let mut broke = None;
                    while let Some(chunk) = body.next().await {
                        match chunk {
                            Ok(b) => out.extend_from_slice(&b),
                            Err(e) => {
                                broke = Some(e);
                                break;
                            }
                        }
                    }
                    match broke {
                        None if out.len() as u64 >= range.end - range.start => {
                            out.truncate((range.end - range.start) as usize);
                            return Ok(out.freeze());
                        }
                        None => None,
                        Some(e) => Some(e),
                    }
                }
                Err(e) => Some(e),
            };
            let retry = self.retry.allows(attempt, start);
            match failure {
                Some(object_store::Error::Precondition { .. }) => {
                    return Err(MediaError::permanent(
                        &self.device,
                        &self.name,
                        "the object was replaced while being read",
                    )
                    .with_op(&op));
                }
                Some(e) if !retry || !Failure::of(&e).retry_outside() => {
                    return Err(media_error(&self.device, &self.name, &op, &e));
                }
                None if !retry => {
                    return Err(MediaError::new(
                        ErrorClass::Transient,
                        &self.device,
                        &self.name,
                        &op,
                        "the store kept sending short bodies".to_string(),
                    ));
                }
                _ => {}
            }
            attempt += 1;
            tokio::time::sleep(std::time::Duration::from_millis(50 << attempt.min(6))).await;
        }
    }
}

impl Read for S3Reader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len || out.is_empty() {
            return Ok(0);
        }
        let in_buf =
            self.pos >= self.buf_start && self.pos < self.buf_start + self.buf.len() as u64;
        if !in_buf {
            self.fill().map_err(MediaError::into_io)?;
        }
        let off = (self.pos - self.buf_start) as usize;
        let n = out.len().min(self.buf.len() - off);
        out[..n].copy_from_slice(&self.buf[off..off + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for S3Reader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let Some(p) = target else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the object",
            ));
        };
        self.pos = p;
        Ok(p)
    }
}

impl MediaReader for S3Reader {
    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for S3Reader {
    fn drop(&mut self) {
        // A detached prefetch would go on downloading for nobody.
        if let Some((_, h)) = self.next.take() {
            h.abort();
        }
    }
}
