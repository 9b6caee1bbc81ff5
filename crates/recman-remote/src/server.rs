//! The serving side: accepts mutual-TLS connections, checks the client certificate's CN
//! against the allow-list, and runs each call's [`Service`] handler on a blocking thread.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use recman_error::ErrorKind;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::error::{RemoteError, ServiceError};
use crate::reader::FrameReader;
use crate::runtime::runtime;
use crate::tls::TlsFiles;
use crate::tls::{common_name, take_refusal};
use crate::wire::{self, ChanBody, PATH_PREFIX};

/// Who is calling: the connection's address and its certificate's CN (already allowed).
#[derive(Clone, Debug)]
pub struct Peer {
    pub addr: SocketAddr,
    pub cn: String,
}

/// Which client certificates (all signed by the CA) a server accepts, by CN. A server that
/// serves several clusters checks its per-cluster lists itself with [`Peer::cn`].
#[derive(Clone, Debug)]
pub enum Allow {
    Any,
    Only(Vec<String>),
}

impl Allow {
    pub fn from_list(cns: &[String]) -> Allow {
        if cns.is_empty() {
            Allow::Any
        } else {
            Allow::Only(cns.to_vec())
        }
    }
    pub(crate) fn permits(&self, cn: &str) -> bool {
        match self {
            Allow::Any => true,
            Allow::Only(l) => l.iter().any(|a| a == cn),
        }
    }
}

/// One incoming call as a handler sees it.
pub struct Call<'a> {
    pub peer: &'a Peer,
    pub method: &'a str,
    pub meta: serde_json::Value,
    /// The request payload; reading it fails if the client's stream breaks off.
    pub body: &'a mut dyn Read,
}

/// What a server does with calls. `call` runs on a blocking thread of its own, so it may do
/// synchronous I/O; writes to `out` block while the client is not reading (flow control).
/// Returning Ok ends the response with an ok status; Err with the error's kind and message,
/// also after payload was written (the client's reader then fails instead of ending).
pub trait Service: Send + Sync + 'static {
    fn call(&self, call: Call<'_>, out: &mut ResponseWriter) -> Result<(), ServiceError>;
}

/// The response of one call: the meta first ([`ResponseWriter::meta`], `{}` when never
/// given), then payload through `Write` or [`ResponseWriter::send`].
pub struct ResponseWriter {
    tx: wire::Feed,
    meta_sent: bool,
    buf: Vec<u8>,
}

impl ResponseWriter {
    fn push(&mut self, frame: Frame<Bytes>) -> io::Result<()> {
        self.tx
            .blocking_send(Ok(frame))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }

    /// Sends the response's meta; must come before any payload, once.
    pub fn meta(&mut self, meta: &serde_json::Value) -> io::Result<()> {
        if self.meta_sent {
            return Err(io::Error::other("the response meta was already sent"));
        }
        self.meta_sent = true;
        self.push(Frame::data(wire::meta_prefix(meta)))
    }

    fn ensure_meta(&mut self) -> io::Result<()> {
        if !self.meta_sent {
            self.meta(&serde_json::json!({}))?;
        }
        Ok(())
    }

    /// Sends a chunk of payload without copying it.
    pub fn send(&mut self, b: Bytes) -> io::Result<()> {
        self.ensure_meta()?;
        self.flush_buf()?;
        if b.is_empty() {
            return Ok(());
        }
        self.push(Frame::data(b))
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let b = std::mem::take(&mut self.buf);
            self.push(Frame::data(Bytes::from(b)))?;
        }
        Ok(())
    }

    fn finish(mut self, r: Result<(), ServiceError>) {
        let end = match r {
            Ok(()) => self
                .ensure_meta()
                .and_then(|_| self.flush_buf())
                .map(|_| wire::ok_trailers())
                .unwrap_or_else(|e| wire::error_trailers(ErrorKind::Io, &e.to_string())),
            Err(e) => wire::error_trailers(e.kind, &e.message),
        };
        let _ = self.push(Frame::trailers(end));
    }
}

impl Write for ResponseWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.ensure_meta()?;
        self.buf.extend_from_slice(data);
        if self.buf.len() >= wire::CHUNK {
            self.flush_buf()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_buf()
    }
}

/// Where a server writes its log lines (refusals, failed handshakes); stderr by default.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

pub fn stderr_log() -> Log {
    Arc::new(|l: &str| eprintln!("recman server: {l}"))
}

/// A running server; dropping it stops accepting connections.
pub struct ServerHandle {
    pub local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: Option<oneshot::Receiver<()>>,
}

impl ServerHandle {
    /// Blocks until the server stops (it stops only when the handle is dropped elsewhere, or
    /// never: the `recman server` command waits here).
    pub fn wait(mut self) {
        if let Some(d) = self.done.take() {
            let _ = runtime().block_on(d);
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Listens on `addr` and serves calls until the handle is dropped.
pub fn serve(
    addr: &str,
    tls: &TlsFiles,
    allow: Allow,
    service: Arc<dyn Service>,
    log: Log,
) -> Result<ServerHandle, RemoteError> {
    let config = tls.server_config()?;
    let listener = listen(addr, "--listen")?;
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let allow = Arc::new(allow);
    let each_log = log.clone();
    accept_until_dropped(listener, log, move |tcp, peer| {
        let (acceptor, allow, service, log) = (
            acceptor.clone(),
            allow.clone(),
            service.clone(),
            each_log.clone(),
        );
        async move { connection(tcp, peer, acceptor, allow, service, log).await }
    })
}

/// Binds `addr`; `opt` names the option that gave it, for the hint.
pub(crate) fn listen(addr: &str, opt: &str) -> Result<TcpListener, RemoteError> {
    runtime().block_on(TcpListener::bind(addr)).map_err(|e| {
        RemoteError::Invalid(format!(
            "cannot listen on {addr}: {e}; hint: choose a free address and port with {opt}"
        ))
    })
}

/// Accepts connections on `listener` and runs `each` for every one in a task of its own,
/// until the returned handle is dropped.
pub(crate) fn accept_until_dropped<F, Fut>(
    listener: TcpListener,
    log: Log,
    each: F,
) -> Result<ServerHandle, RemoteError>
where
    F: Fn(tokio::net::TcpStream, SocketAddr) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let local_addr = listener
        .local_addr()
        .map_err(|e| RemoteError::Io(format!("the listening address: {e}")))?;
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    runtime().spawn(async move {
        loop {
            let (tcp, peer) = tokio::select! {
                _ = &mut stop_rx => break,
                r = listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        log(&format!("accept failed: {e}"));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let _ = tcp.set_nodelay(true);
            tokio::spawn(each(tcp, peer));
        }
        let _ = done_tx.send(());
    });
    Ok(ServerHandle {
        local_addr,
        stop: Some(stop_tx),
        done: Some(done_rx),
    })
}

/// The TLS handshake of one connection, and the client certificate's CN; None (logged) when
/// the client is refused at the handshake: no certificate, one the CA did not sign, expired.
pub(crate) async fn handshake(
    tcp: tokio::net::TcpStream,
    addr: SocketAddr,
    acceptor: &tokio_rustls::TlsAcceptor,
    log: &Log,
) -> Option<(
    tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    String,
)> {
    let tls = match tokio::time::timeout(Duration::from_secs(20), acceptor.accept(tcp)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            let why = take_refusal().unwrap_or_else(|| e.to_string());
            log(&format!("refused a connection from {addr}: {why}"));
            return None;
        }
        Err(_) => {
            log(&format!(
                "refused a connection from {addr}: no TLS handshake within 20s"
            ));
            return None;
        }
    };
    let cn = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| common_name(c))
        .unwrap_or_default();
    Some((tls, cn))
}

async fn connection(
    tcp: tokio::net::TcpStream,
    addr: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    allow: Arc<Allow>,
    service: Arc<dyn Service>,
    log: Log,
) {
    let Some((tls, cn)) = handshake(tcp, addr, &acceptor, &log).await else {
        return;
    };
    let refusal = if allow.permits(&cn) {
        None
    } else {
        log(&format!(
            "refused a connection from {addr}: certificate CN={cn} is not on the allow-list (--allow)"
        ));
        Some(format!("its CN '{cn}' is not on the server's allow-list"))
    };
    let peer = Arc::new(Peer { addr, cn });
    let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let (peer, service, refusal) = (peer.clone(), service.clone(), refusal.clone());
        async move { Ok::<_, std::convert::Infallible>(dispatch(req, peer, service, refusal)) }
    });
    let r = crate::wire::tuned_h2!(hyper::server::conn::http2::Builder::new(
        TokioExecutor::new()
    ))
    .serve_connection(TokioIo::new(tls), svc)
    .await;
    if let Err(e) = r {
        log(&format!(
            "the connection from {addr} ended: {}",
            crate::reader::chain(&e)
        ));
    }
}

fn dispatch(
    req: http::Request<Incoming>,
    peer: Arc<Peer>,
    service: Arc<dyn Service>,
    refusal: Option<String>,
) -> http::Response<ChanBody> {
    if let Some(why) = refusal {
        let mut r = http::Response::new(ChanBody::Whole(None));
        *r.status_mut() = http::StatusCode::FORBIDDEN;
        *r.headers_mut() = wire::error_trailers(ErrorKind::InvalidInput, &why);
        return r;
    }
    let Some(method) = req
        .uri()
        .path()
        .strip_prefix(PATH_PREFIX)
        .map(str::to_string)
    else {
        let mut r = http::Response::new(ChanBody::Whole(None));
        *r.status_mut() = http::StatusCode::NOT_FOUND;
        return r;
    };
    let (tx, body) = wire::channel();
    let handle = tokio::runtime::Handle::current();
    let what = format!("the request body of {method} from {}", peer.addr);
    let incoming = req.into_body();
    tokio::task::spawn_blocking(move || {
        let mut reader = FrameReader::new(handle, incoming, None, false, what);
        let mut out = ResponseWriter {
            tx,
            meta_sent: false,
            buf: Vec::new(),
        };
        let r = match reader.read_meta() {
            Err(e) => Err(ServiceError::from(e)),
            Ok(meta) => {
                let call = Call {
                    peer: &peer,
                    method: &method,
                    meta,
                    body: &mut reader,
                };
                std::panic::catch_unwind(AssertUnwindSafe(|| service.call(call, &mut out)))
                    .unwrap_or_else(|_| {
                        Err(ServiceError::new(
                            ErrorKind::Internal,
                            format!("the server's handler of {method} panicked; hint: this is a bug, report it with the server's log"),
                        ))
                    })
            }
        };
        out.finish(r);
    });
    http::Response::new(body)
}
