//! The read probe that calibrate and the shared-device probe both run: the cluster's files read
//! with the I/O engine at one request size and queue depth, for a budget of bytes and time.

use super::probes::{CalibrateOptions, ReadProbe};
use crate::aligned::AlignedBuf;
use crate::error::EngineError;
use crate::io::{IoMode, IoSettings, ReadReq, open_engine};
use crate::read_mode::ReadMode;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes per second of `bytes` in `d`.
pub(super) fn rate(bytes: u64, d: Duration) -> u64 {
    (bytes as f64 / d.as_secs_f64().max(1e-6)) as u64
}

/// A part of a file: its path and the byte range [start, end).
pub(super) type Span = (PathBuf, u64, u64);

/// What a read probe does with each buffer it completes; false ends the probe (the reads in
/// flight complete, none is submitted).
pub(super) type OnRead<'a> = dyn FnMut(&[u8]) -> bool + 'a;

/// Reads the spans `files` in order, each from its start (every probe meets the files as a
/// backup does; after the last span it wraps around once while the budget lasts), with the I/O
/// engine, `qd` requests of `size` in flight; `on_read` sees each buffer's bytes as it
/// completes, on this thread, before the next read of that buffer is submitted, and may end
/// the probe there.
pub(super) fn read_probe(
    files: &[Span],
    size: u64,
    qd: u32,
    direct: bool,
    opt: &CalibrateOptions,
    io_uring: bool,
    mut on_read: Option<&mut OnRead>,
) -> Result<ReadProbe, EngineError> {
    let settings = IoSettings {
        mode: if io_uring {
            IoMode::Uring
        } else {
            IoMode::Threads
        },
        slaves: qd as usize,
        ..IoSettings::default()
    };
    let (mut engine, _) = open_engine(&settings, qd as usize).map_err(|e| {
        EngineError::from(crate::refusal::Input::CalibrateIoEngine { why: e.to_string() })
    })?;
    let mut free: Vec<AlignedBuf> = (0..qd).map(|_| AlignedBuf::new(size as usize)).collect();
    let mut open: Option<(usize, Arc<File>)> = None;
    let (mut bytes, mut tag, mut wrapped, mut ended) = (0u64, 0u64, false, false);
    // The file being read and the offset in it.
    let mut cursor = (0usize, files.first().map_or(0, |f| f.1));
    let t0 = Instant::now();
    let budget = |bytes: u64, ended: bool| {
        ended || bytes >= opt.probe_bytes || t0.elapsed() >= opt.probe_time
    };
    loop {
        while !budget(bytes, ended) && !free.is_empty() {
            if cursor.0 >= files.len() {
                if wrapped || files.is_empty() {
                    break;
                }
                cursor = (0, files[0].1);
                wrapped = true;
            }
            let (path, _, end) = &files[cursor.0];
            if cursor.1 >= *end {
                cursor = (cursor.0 + 1, files.get(cursor.0 + 1).map_or(0, |f| f.1));
                continue;
            }
            let file = match &open {
                Some((i, f)) if *i == cursor.0 => Arc::clone(f),
                _ => {
                    let reads = if direct {
                        ReadMode::Direct
                    } else {
                        ReadMode::Buffered
                    };
                    let f = Arc::new(
                        crate::source::open_local(path, reads, crate::source::WHOLE)
                            .map_err(|e| EngineError::io("open for calibration", path, e))?
                            .0,
                    );
                    open = Some((cursor.0, Arc::clone(&f)));
                    f
                }
            };
            let len = size
                .min(end - cursor.1)
                .next_multiple_of(crate::aligned::ALIGN as u64);
            engine
                .submit(ReadReq {
                    tag,
                    file: crate::source::SourceFile::Local(file),
                    offset: cursor.1,
                    len: len as usize,
                    buf: free.pop().expect("a free buffer"),
                })
                .map_err(|e| EngineError::io("read for calibration", path, e))?;
            tag += 1;
            cursor.1 += size;
        }
        if engine.outstanding() == 0 {
            break;
        }
        let done = engine
            .wait_complete()
            .map_err(|e| EngineError::io("read for calibration", &files[0].0, e))?;
        let got = *done.result.as_ref().unwrap_or(&0);
        bytes += got as u64;
        if let Some(f) = on_read.as_mut() {
            ended |= !f(&done.buf.as_slice()[..got.min(done.buf.as_slice().len())]);
        }
        free.push(done.buf);
    }
    Ok(ReadProbe {
        request_size: size,
        queue_depth: qd,
        direct,
        bytes,
        bytes_per_second: rate(bytes, t0.elapsed()),
    })
}
