//! A synchronous `Read` over an HTTP/2 body: the engine's threads read a response (and the
//! server's handler threads a request) frame by frame, blocking on the transport's runtime;
//! a frame is consumed only when asked for, so HTTP/2 flow control holds the sender back.

use std::io::{self, Read};

use bytes::{Buf, Bytes};
use http_body::Body;
use hyper::body::Incoming;
use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::error::RemoteError;
use crate::wire::{MAX_META, status_of};

pub(crate) struct FrameReader {
    handle: Handle,
    body: Incoming,
    buf: Bytes,
    deadline: Option<Instant>,
    /// A response must end with trailers carrying its status; a request body ends at its end.
    need_status: bool,
    /// What is read, for messages: "the response of read-range from https://db1:8471".
    what: String,
    state: State,
}

enum State {
    Open,
    Done,
    Failed(String, recman_error::ErrorKind),
}

impl FrameReader {
    pub(crate) fn new(
        handle: Handle,
        body: Incoming,
        deadline: Option<Instant>,
        need_status: bool,
        what: String,
    ) -> FrameReader {
        FrameReader {
            handle,
            body,
            buf: Bytes::new(),
            deadline,
            need_status,
            what,
            state: State::Open,
        }
    }

    fn fail(&mut self, e: RemoteError) -> RemoteError {
        self.state = State::Failed(e.to_string(), e.kind());
        e
    }

    /// The next data bytes; Ok(None) at a clean end (with an ok status when one is needed).
    pub(crate) fn next_data(&mut self) -> Result<Option<Bytes>, RemoteError> {
        loop {
            match &self.state {
                State::Done => return Ok(None),
                State::Failed(m, k) => {
                    return Err(RemoteError::Remote {
                        kind: *k,
                        message: m.clone(),
                    });
                }
                State::Open => {}
            }
            if !self.buf.is_empty() {
                return Ok(Some(std::mem::take(&mut self.buf)));
            }
            let body = &mut self.body;
            let next = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx));
            let frame = match self.deadline {
                None => self.handle.block_on(next),
                Some(d) => match self
                    .handle
                    .block_on(async { tokio::time::timeout_at(d, next).await })
                {
                    Ok(f) => f,
                    Err(_) => {
                        let e = RemoteError::Deadline(format!(
                            "{} did not arrive before the call's deadline; hint: the peer or the network is slow or stalled",
                            self.what
                        ));
                        return Err(self.fail(e));
                    }
                },
            };
            match frame {
                None if self.need_status => {
                    let e = RemoteError::Network(format!(
                        "{} ended without its status (the stream was cut short); hint: the peer stopped or the connection dropped, run the command again",
                        self.what
                    ));
                    return Err(self.fail(e));
                }
                None => {
                    self.state = State::Done;
                }
                Some(Err(e)) => {
                    let e = RemoteError::Network(format!("{} broke off: {}", self.what, chain(&e)));
                    return Err(self.fail(e));
                }
                Some(Ok(f)) => match f.into_data() {
                    Ok(d) => self.buf = d,
                    Err(f) => {
                        if let Ok(t) = f.into_trailers() {
                            match status_of(&t) {
                                Some(Ok(())) => self.state = State::Done,
                                Some(Err(e)) => return Err(self.fail(e)),
                                None => {
                                    let e = RemoteError::Network(format!(
                                        "{} ended with trailers that hold no status; hint: the peer is not a recman server of this version",
                                        self.what
                                    ));
                                    return Err(self.fail(e));
                                }
                            }
                        }
                    }
                },
            }
        }
    }

    /// Exactly `n` bytes, for the meta prefix.
    fn exact(&mut self, n: usize) -> Result<Vec<u8>, RemoteError> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.next_data()? {
                Some(mut d) => {
                    let take = (n - out.len()).min(d.len());
                    out.extend_from_slice(&d[..take]);
                    d.advance(take);
                    self.buf = d;
                }
                None => {
                    let e = RemoteError::Network(format!(
                        "{} ended inside its meta header; hint: the peer is not a recman server of this version",
                        self.what
                    ));
                    return Err(self.fail(e));
                }
            }
        }
        Ok(out)
    }

    /// The meta JSON the body starts with.
    pub(crate) fn read_meta(&mut self) -> Result<serde_json::Value, RemoteError> {
        let len = u32::from_be_bytes(self.exact(4)?.try_into().expect("4 bytes")) as usize;
        if len > MAX_META {
            return Err(self.fail(RemoteError::Invalid(format!(
                "{} announces {len} bytes of meta, more than {MAX_META}; hint: the peer is not a recman server of this version",
                self.what
            ))));
        }
        let raw = self.exact(len)?;
        serde_json::from_slice(&raw).map_err(|e| {
            self.fail(RemoteError::Invalid(format!(
                "{} holds bad meta JSON: {e}",
                self.what
            )))
        })
    }
}

impl Read for FrameReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        match self.next_data() {
            Ok(None) => Ok(0),
            Ok(Some(mut d)) => {
                let n = out.len().min(d.len());
                out[..n].copy_from_slice(&d[..n]);
                d.advance(n);
                self.buf = d;
                Ok(n)
            }
            Err(e) => Err(to_io(e)),
        }
    }
}

/// A transport error inside an `io::Error`, for `Read` users; [`crate::from_io`] gets it back.
pub(crate) fn to_io(e: RemoteError) -> io::Error {
    let kind = match e.kind() {
        recman_error::ErrorKind::Transient => io::ErrorKind::ConnectionAborted,
        recman_error::ErrorKind::NotFound => io::ErrorKind::NotFound,
        recman_error::ErrorKind::Corrupt => io::ErrorKind::InvalidData,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}

/// An error and its sources in one line: hyper's top error says little ("connection error"),
/// its sources say what (a TLS alert, a reset).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}
