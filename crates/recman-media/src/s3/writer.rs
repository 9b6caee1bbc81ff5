//! Streaming writes: one PUT for an object smaller than a part, otherwise a multipart upload
//! with a bounded number of parts in flight.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use object_store::multipart::PartId;
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, GetOptions, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutPayload,
};
use tokio::task::JoinHandle;

use super::{Ctx, MAX_PARTS, wait};
use crate::error::MediaError;
use crate::media::MediaWriter;

/// User metadata naming the upload that wrote an object. A completion whose response was
/// lost is retried by object_store and then refused (the upload is gone); the object's tag
/// tells whether the first attempt made it.
const UPLOAD_TAG: &str = "recman-upload";
/// The same metadata as a header, for the locked uploads the signed client starts.
const UPLOAD_HEADER: &str = "x-amz-meta-recman-upload";

static SEQ: AtomicU64 = AtomicU64::new(0);

pub(super) struct S3Writer {
    ctx: Arc<Ctx>,
    path: Path,
    name: String,
    /// The part being filled; empty (unallocated) until the next write.
    buf: Vec<u8>,
    upload: Option<Upload>,
    written: u64,
    /// The first failure; the writer refuses everything after it.
    failed: Option<MediaError>,
    finished: bool,
}

struct Upload {
    id: String,
    tag: String,
    parts: Vec<Option<PartId>>,
    in_flight: VecDeque<(usize, JoinHandle<Result<PartId, MediaError>>)>,
}

impl S3Writer {
    pub(super) fn new(ctx: Arc<Ctx>, path: Path, name: &str) -> S3Writer {
        S3Writer {
            ctx,
            path,
            name: name.to_string(),
            buf: Vec::new(),
            upload: None,
            written: 0,
            failed: None,
            finished: false,
        }
    }

    fn err(&self, op: &str, e: &object_store::Error) -> MediaError {
        self.ctx.err(&self.name, op, e)
    }

    /// Sends the full buffer as the next part, first waiting for a free slot, so that at
    /// most `parts_in_flight` parts plus the one being filled are in memory.
    fn ship_part(&mut self) -> Result<(), MediaError> {
        if self.upload.is_none() {
            self.upload = Some(self.start_upload()?);
        }
        let max = self.ctx.cfg.parts_in_flight;
        let Some(up) = self.upload.as_mut() else {
            unreachable!("the upload was just started")
        };
        while up.in_flight.len() >= max {
            finish_oldest(up)?;
        }
        let idx = up.parts.len();
        if idx >= MAX_PARTS {
            return Err(MediaError::permanent(
                &self.ctx.device,
                &self.name,
                "the object exceeds s3's 10000 parts",
            )
            .with_op("write")
            .with_hint("raise part-size in the [s3] section of the config file"));
        }
        up.parts.push(None);
        let data = Bytes::from(std::mem::take(&mut self.buf));
        let (store, path, id) = (
            Arc::clone(&self.ctx.store),
            self.path.clone(),
            up.id.clone(),
        );
        let (device, name, retry) = (self.ctx.device.clone(), self.name.clone(), self.ctx.retry);
        let task = self.ctx.spawn(async move {
            retry
                .run(|| store.put_part(&path, &id, idx, PutPayload::from(data.clone())))
                .await
                .map_err(|e| {
                    super::classify::media_error(
                        &device,
                        &name,
                        &format!("upload part {}", idx + 1),
                        &e,
                    )
                })
        });
        up.in_flight.push_back((idx, task));
        Ok(())
    }

    fn start_upload(&self) -> Result<Upload, MediaError> {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let tag = format!("{}-{nanos}-{n}", std::process::id());
        let mut attributes = Attributes::new();
        attributes.insert(Attribute::Metadata(UPLOAD_TAG.into()), tag.clone().into());
        // Azure refuses metadata on a block upload; its completion (a block list) can simply
        // be sent again, so it needs no tag.
        let opts = match self.ctx.cloud {
            super::Cloud::S3 => PutMultipartOptions {
                attributes,
                ..Default::default()
            },
            super::Cloud::Azure | super::Cloud::Gcs => PutMultipartOptions::default(),
        };
        let (store, path, retry) = (
            Arc::clone(&self.ctx.store),
            self.path.clone(),
            self.ctx.retry,
        );
        if let Some(locked) = self.locked() {
            let (signed, r) = locked;
            let (key, t) = (self.path.to_string(), tag.clone());
            let id = self
                .ctx
                .block(async move {
                    signed
                        .create_multipart_locked(&key, r, (UPLOAD_HEADER, &t))
                        .await
                })
                .map_err(|e| {
                    super::immutable::signed_error(&self.ctx.device, &self.name, "start upload", &e)
                })?;
            return Ok(Upload {
                id,
                tag,
                parts: Vec::new(),
                in_flight: VecDeque::new(),
            });
        }
        // A retried creation can leave an unused upload behind; S3 lifecycle rules for
        // incomplete uploads clean those, and they are never visible as objects.
        let id = self
            .ctx
            .block(async move {
                retry
                    .run(|| store.create_multipart_opts(&path, opts.clone()))
                    .await
            })
            .map_err(|e| self.err("start upload", &e))?;
        Ok(Upload {
            id,
            tag,
            parts: Vec::new(),
            in_flight: VecDeque::new(),
        })
    }

    /// The signed client and the retention, when this object must be written locked.
    fn locked(&self) -> Option<(Arc<super::signed::Signed>, super::Retention)> {
        let r = self.ctx.write_lock()?;
        Some((Arc::clone(self.ctx.signed.as_ref()?), r))
    }

    fn put_whole(&mut self) -> Result<(), MediaError> {
        let data = Bytes::from(std::mem::take(&mut self.buf));
        if let Some((signed, r)) = self.locked() {
            let key = self.path.to_string();
            return self
                .ctx
                .block(async move { signed.put_locked(&key, data, r).await })
                .map_err(|e| {
                    super::immutable::signed_error(&self.ctx.device, &self.name, "commit", &e)
                });
        }
        let (store, path, retry) = (
            Arc::clone(&self.ctx.store),
            self.path.clone(),
            self.ctx.retry,
        );
        self.ctx
            .block(async move {
                retry
                    .run(|| store.put(&path, PutPayload::from(data.clone())))
                    .await
            })
            .map(|_| ())
            .map_err(|e| self.err("commit", &e))
    }

    fn complete(&mut self) -> Result<(), MediaError> {
        if !self.buf.is_empty() {
            self.ship_part()?;
        }
        let Some(up) = self.upload.as_mut() else {
            unreachable!("complete is only called with an upload")
        };
        while !up.in_flight.is_empty() {
            finish_oldest(up)?;
        }
        let parts: Vec<PartId> = up.parts.iter().flatten().cloned().collect();
        let (store, path, id, tag) = (
            Arc::clone(&self.ctx.store),
            self.path.clone(),
            up.id.clone(),
            up.tag.clone(),
        );
        self.ctx
            .block(async move {
                let done = store.complete_multipart(&path, &id, parts).await;
                let Err(e) = done else { return Ok(()) };
                let head = GetOptions {
                    head: true,
                    ..Default::default()
                };
                let ours = match store.get_opts(&path, head).await {
                    Ok(r) => r
                        .attributes
                        .get(&Attribute::Metadata(UPLOAD_TAG.into()))
                        .is_some_and(|v| v.as_ref() == tag),
                    Err(_) => false,
                };
                if ours { Ok(()) } else { Err(e) }
            })
            .map_err(|e| self.err("commit", &e))?;
        self.upload = None;
        self.confirm_lock()
    }

    /// Some stores (moto) drop the lock that CreateMultipartUpload carried: the completed
    /// object is checked, and locked by PutObjectRetention when it came out without it.
    fn confirm_lock(&self) -> Result<(), MediaError> {
        let Some((signed, r)) = self.locked() else {
            return Ok(());
        };
        let key = self.path.to_string();
        self.ctx
            .block(async move {
                match signed.get_retention(&key, None).await? {
                    Some(cur) if cur.until >= r.until => Ok(()),
                    _ => signed.put_retention(&key, None, r).await,
                }
            })
            .map_err(|e| super::immutable::signed_error(&self.ctx.device, &self.name, "lock", &e))
    }

    /// Cancels the parts in flight and aborts the upload; best effort, since S3 cleans
    /// abandoned uploads by lifecycle rule and never shows them as objects.
    fn abort_upload(&mut self) {
        let Some(mut up) = self.upload.take() else {
            return;
        };
        for (_, h) in &up.in_flight {
            h.abort();
        }
        // Waiting makes sure no part lands after the abort and revives the upload.
        for (_, h) in up.in_flight.drain(..) {
            let _ = futures::executor::block_on(h);
        }
        let (store, path, id) = (Arc::clone(&self.ctx.store), self.path.clone(), up.id);
        let _ = self
            .ctx
            .block(async move { store.abort_multipart(&path, &id).await });
    }

    fn fail(&mut self, e: MediaError) -> io::Error {
        self.failed = Some(e.clone());
        e.into_io()
    }
}

fn finish_oldest(up: &mut Upload) -> Result<(), MediaError> {
    if let Some((idx, h)) = up.in_flight.pop_front() {
        up.parts[idx] = Some(wait(h)?);
    }
    Ok(())
}

impl Write for S3Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Some(e) = &self.failed {
            return Err(e.clone().into_io());
        }
        if data.is_empty() {
            return Ok(0);
        }
        let part_size = self.ctx.cfg.part_size;
        // A full part ships only once more data comes, so an object of exactly one part
        // is a single PUT and the last part of an upload is never empty.
        if self.buf.len() == part_size
            && let Err(e) = self.ship_part()
        {
            return Err(self.fail(e));
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(part_size);
        }
        let n = data.len().min(part_size - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        self.written += n as u64;
        Ok(n)
    }

    /// Nothing to do: data below a part's size cannot be sent on its own.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl MediaWriter for S3Writer {
    fn commit(mut self: Box<Self>) -> Result<u64, MediaError> {
        if let Some(e) = self.failed.take() {
            return Err(e); // Drop aborts the upload.
        }
        let r = if self.upload.is_none() {
            self.put_whole()
        } else {
            self.complete()
        };
        r?;
        self.finished = true;
        Ok(self.written)
    }

    fn abort(self: Box<Self>) {}
}

impl Drop for S3Writer {
    fn drop(&mut self) {
        if !self.finished {
            self.abort_upload();
        }
    }
}
