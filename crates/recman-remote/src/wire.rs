//! What goes in an HTTP/2 stream: a body starts with the call's meta (a u32 big-endian length
//! and that many bytes of JSON), then the payload bytes; a response ends with trailers that
//! say whether the whole payload was sent (`recman-status: ok`) or what failed.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use recman_error::ErrorKind;
use tokio::sync::mpsc;

use crate::error::RemoteError;
use crate::error::{decode_header, encode_header, kind_from_str};

pub(crate) const STATUS: &str = "recman-status";
pub(crate) const ERROR_KIND: &str = "recman-error-kind";
pub(crate) const ERROR_MESSAGE: &str = "recman-error-message";
/// The URL path calls are posted to: `/recman/v1/<method>`.
pub(crate) const PATH_PREFIX: &str = "/recman/v1/";
/// Payload bytes per DATA frame batch a writer hands over.
pub(crate) const CHUNK: usize = 256 * 1024;
/// The largest meta accepted: meta is for small descriptions, the payload for data.
pub(crate) const MAX_META: usize = 16 << 20;

/// HTTP/2 flow control and keep-alive, one set for both ends so their windows agree: deep
/// enough that a channel's reads in flight are not held by window updates, and a dead peer is
/// found within seconds. A macro because hyper's client and server builders are different
/// types with the same setters.
macro_rules! tuned_h2 {
    ($builder:expr) => {
        $builder
            .timer(hyper_util::rt::TokioTimer::new())
            .initial_stream_window_size(8 << 20)
            .initial_connection_window_size(32 << 20)
            .max_frame_size(1 << 20)
            .max_send_buf_size(4 << 20)
            .keep_alive_interval(std::time::Duration::from_secs(10))
            .keep_alive_timeout(std::time::Duration::from_secs(20))
    };
}
pub(crate) use tuned_h2;

pub(crate) fn meta_prefix(meta: &serde_json::Value) -> Bytes {
    let json = serde_json::to_vec(meta).expect("a JSON value serializes");
    let mut v = Vec::with_capacity(4 + json.len());
    v.extend_from_slice(&(json.len() as u32).to_be_bytes());
    v.extend_from_slice(&json);
    Bytes::from(v)
}

pub(crate) fn ok_trailers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(STATUS, http::HeaderValue::from_static("ok"));
    h
}

pub(crate) fn error_trailers(kind: ErrorKind, message: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(STATUS, http::HeaderValue::from_static("error"));
    h.insert(
        ERROR_KIND,
        http::HeaderValue::from_str(kind.as_str()).expect("ascii"),
    );
    h.insert(
        ERROR_MESSAGE,
        http::HeaderValue::from_str(&encode_header(message)).expect("encoded ascii"),
    );
    h
}

/// Ok when the trailers (or headers) say the call succeeded, the remote error otherwise,
/// None when they hold no status at all.
pub(crate) fn status_of(h: &HeaderMap) -> Option<Result<(), RemoteError>> {
    let status = h.get(STATUS)?;
    if status.as_bytes() == b"ok" {
        return Some(Ok(()));
    }
    let kind = h
        .get(ERROR_KIND)
        .map(|v| kind_from_str(&String::from_utf8_lossy(v.as_bytes())))
        .unwrap_or(ErrorKind::Internal);
    let message = h
        .get(ERROR_MESSAGE)
        .map(|v| decode_header(v.as_bytes()))
        .unwrap_or_else(|| "the remote side failed without a message".into());
    Some(Err(RemoteError::Remote { kind, message }))
}

/// A body fed from another thread (bounded: the feeder blocks when HTTP/2 flow control holds
/// the stream), or a body known whole.
pub(crate) enum ChanBody {
    Whole(Option<Bytes>),
    /// Known whole, in parts sent as they are (a request's meta, then its payload: joining
    /// them would copy the payload).
    Parts(std::collections::VecDeque<Bytes>),
    Chan(mpsc::Receiver<Result<Frame<Bytes>, io::Error>>),
}

pub(crate) type Feed = mpsc::Sender<Result<Frame<Bytes>, io::Error>>;

pub(crate) fn channel() -> (Feed, ChanBody) {
    let (tx, rx) = mpsc::channel(4);
    (tx, ChanBody::Chan(rx))
}

impl Body for ChanBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            ChanBody::Whole(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ChanBody::Parts(p) => Poll::Ready(p.pop_front().map(|b| Ok(Frame::data(b)))),
            ChanBody::Chan(rx) => rx.poll_recv(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ChanBody::Whole(b) => b.is_none(),
            ChanBody::Parts(p) => p.is_empty(),
            ChanBody::Chan(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ChanBody::Whole(Some(b)) => SizeHint::with_exact(b.len() as u64),
            ChanBody::Whole(None) => SizeHint::with_exact(0),
            ChanBody::Parts(p) => SizeHint::with_exact(p.iter().map(|b| b.len() as u64).sum()),
            ChanBody::Chan(_) => SizeHint::default(),
        }
    }
}
