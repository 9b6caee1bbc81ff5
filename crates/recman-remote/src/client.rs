//! The calling side: one HTTP/2 connection per [`Client`], multiplexing calls from any number
//! of threads; reconnected on the next call after it drops.

use std::io::Read;
use std::net::ToSocketAddrs;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::error::RemoteError;
use crate::reader::{FrameReader, chain};
use crate::runtime::runtime;
use crate::tls::TlsFiles;
use crate::watch::{TlsFailure, Watched};
use crate::wire::{self, ChanBody, ERROR_MESSAGE, PATH_PREFIX};

/// How a client connects and retries.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// For the TCP connect and the TLS handshake together.
    pub connect_timeout: Duration,
    /// How long an idempotent call keeps being retried after network failures (with backoff
    /// from 100 ms doubling to 2 s) before the failure reaches the caller.
    pub retry_for: Duration,
}

impl Default for ClientOptions {
    /// 10 s to connect; retries for 30 s, or RECMAN_FLEET_RETRY_SECS (a site whose network
    /// cuts last longer, or a test that wants a dead peer found quickly).
    fn default() -> Self {
        let retry = std::env::var("RECMAN_FLEET_RETRY_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(30);
        ClientOptions {
            connect_timeout: Duration::from_secs(10),
            retry_for: Duration::from_secs(retry),
        }
    }
}

/// One call's request body.
pub enum Body {
    Empty,
    /// Known whole: can be sent again, so an idempotent call with it is retried.
    Bytes(Bytes),
    /// Streamed from a reader on a helper thread; never retried (it cannot be read twice).
    Reader(Box<dyn Read + Send>),
}

/// What kind of call this is.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallOptions {
    /// Running the call twice is harmless (reads, listings): network failures before the
    /// response starts are retried for [`ClientOptions::retry_for`].
    pub idempotent: bool,
    /// The whole call, connect to the last payload byte, must finish within this.
    pub deadline: Option<Duration>,
}

impl CallOptions {
    pub fn idempotent() -> CallOptions {
        CallOptions {
            idempotent: true,
            deadline: None,
        }
    }
    pub fn with_deadline(mut self, d: Duration) -> CallOptions {
        self.deadline = Some(d);
        self
    }
}

/// A call's response: the meta the server sent first, then the payload as a `Read` that
/// fails (never ends early) if the server reports an error or the stream breaks off.
pub struct Response {
    pub meta: serde_json::Value,
    reader: FrameReader,
}

impl Response {
    /// Reads the payload to its end, confirming the server's ok status.
    pub fn bytes(mut self) -> Result<Vec<u8>, RemoteError> {
        let mut out = Vec::new();
        while let Some(d) = self.reader.next_data()? {
            out.extend_from_slice(&d);
        }
        Ok(out)
    }

    /// The next payload chunk as received (no copy); None at the end, after an ok status.
    pub fn next_chunk(&mut self) -> Result<Option<Bytes>, RemoteError> {
        self.reader.next_data()
    }
}

impl Read for Response {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reader.read(buf)
    }
}

/// Where the helper thread feeding a request body leaves its read error.
type LocalErr = Arc<Mutex<Option<String>>>;

struct Conn {
    send: SendRequest<ChanBody>,
    failure: Arc<Mutex<Option<TlsFailure>>>,
}

/// A connection to one recman server (`https://host:port`), usable from many threads.
pub struct Client {
    url: String,
    host: String,
    port: u16,
    tls: Arc<ClientConfig>,
    opts: ClientOptions,
    conn: tokio::sync::Mutex<Option<Conn>>,
}

/// Host and port of `https://host[:port]` (default port 8471); IPv6 in brackets.
pub fn parse_url(url: &str) -> Result<(String, u16), RemoteError> {
    let bad = |why: &str| {
        RemoteError::Invalid(format!(
            "the server URL '{url}' {why}; hint: write it as https://HOST:PORT, e.g. https://db1:8471"
        ))
    };
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| bad("does not start with https://"))?;
    let rest = rest.trim_end_matches('/');
    if rest.contains('/') || rest.is_empty() {
        return Err(bad("must name only a host and port"));
    }
    let (host, port) = if let Some(r) = rest.strip_prefix('[') {
        let (h, p) = r.split_once(']').ok_or_else(|| bad("has an unclosed ["))?;
        (h.to_string(), p.strip_prefix(':'))
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (rest.to_string(), None),
        }
    };
    let port = match port {
        None | Some("") => 8471,
        Some(p) => p.parse().map_err(|_| bad("has a bad port"))?,
    };
    Ok((host, port))
}

impl Client {
    /// Reads the TLS files and checks the URL; the connection is made by the first call.
    pub fn connect(url: &str, tls: &TlsFiles) -> Result<Client, RemoteError> {
        Client::with_options(url, tls, ClientOptions::default())
    }

    pub fn with_options(
        url: &str,
        tls: &TlsFiles,
        opts: ClientOptions,
    ) -> Result<Client, RemoteError> {
        let (host, port) = parse_url(url)?;
        Ok(Client {
            url: url.trim_end_matches('/').to_string(),
            host,
            port,
            tls: tls.client_config()?,
            opts,
            conn: tokio::sync::Mutex::new(None),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends one call and returns once the response's meta has arrived; the payload is read
    /// from the returned [`Response`].
    pub fn call(
        &self,
        method: &str,
        meta: &serde_json::Value,
        body: Body,
        opts: CallOptions,
    ) -> Result<Response, RemoteError> {
        let deadline = opts.deadline.map(|d| Instant::now() + d);
        let retry_until = Instant::now() + self.opts.retry_for;
        let replayable = !matches!(body, Body::Reader(_));
        let mut body = Some(body);
        let mut wait = Duration::from_millis(100);
        loop {
            let this = match &body {
                Some(Body::Empty) => Body::Empty,
                Some(Body::Bytes(b)) => Body::Bytes(b.clone()),
                _ => body.take().expect("a reader body is sent once"),
            };
            match self.attempt_sync(method, meta, this, deadline) {
                Ok(r) => return Ok(r),
                Err(e) => {
                    let again = opts.idempotent
                        && replayable
                        && e.is_retryable()
                        && Instant::now() + wait < retry_until
                        && deadline.is_none_or(|d| Instant::now() + wait < d);
                    if !again {
                        return Err(e);
                    }
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// A call without payloads both ways; idempotent calls are retried.
    pub fn call_meta(
        &self,
        method: &str,
        meta: &serde_json::Value,
        opts: CallOptions,
    ) -> Result<serde_json::Value, RemoteError> {
        self.call_whole(method, meta, Bytes::new(), opts)
            .map(|(m, _)| m)
    }

    /// A call whose payloads both ways fit in memory. An idempotent one is retried whole,
    /// also when its response breaks off midway.
    pub fn call_whole(
        &self,
        method: &str,
        meta: &serde_json::Value,
        body: Bytes,
        opts: CallOptions,
    ) -> Result<(serde_json::Value, Vec<u8>), RemoteError> {
        self.call_with(method, meta, body, opts, |r| {
            let meta = std::mem::take(&mut r.meta);
            let mut out = Vec::new();
            while let Some(d) = r.next_chunk()? {
                out.extend_from_slice(&d);
            }
            Ok((meta, out))
        })
    }

    /// Runs `consume` on the response; for an idempotent call a network failure anywhere,
    /// also in the middle of the payload, sends the call again and runs `consume` again on
    /// the new response (so it must start over, e.g. clear what it collected).
    pub fn call_with<T>(
        &self,
        method: &str,
        meta: &serde_json::Value,
        body: Bytes,
        opts: CallOptions,
        mut consume: impl FnMut(&mut Response) -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        let retry_until = Instant::now() + self.opts.retry_for;
        let mut wait = Duration::from_millis(100);
        loop {
            let r = self
                .call(method, meta, Body::Bytes(body.clone()), opts)
                .and_then(|mut r| consume(&mut r));
            match r {
                Err(e)
                    if opts.idempotent
                        && e.is_retryable()
                        && Instant::now() + wait < retry_until =>
                {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
                other => return other,
            }
        }
    }

    async fn connection(
        &self,
        deadline: Option<Instant>,
    ) -> Result<(SendRequest<ChanBody>, Arc<Mutex<Option<TlsFailure>>>), RemoteError> {
        let mut guard = self.conn.lock().await;
        if let Some(c) = guard.as_ref()
            && !c.send.is_closed()
        {
            return Ok((c.send.clone(), c.failure.clone()));
        }
        *guard = None;
        let limit = Instant::now() + self.opts.connect_timeout;
        let limit = deadline.map_or(limit, |d| d.min(limit));
        let c = match tokio::time::timeout_at(limit, self.dial()).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(RemoteError::Network(format!(
                    "could not connect to the server at {} within {:?}; hint: check that `recman server` runs there and the firewall lets the port through",
                    self.url, self.opts.connect_timeout
                )));
            }
        };
        let out = (c.send.clone(), c.failure.clone());
        *guard = Some(c);
        Ok(out)
    }

    async fn dial(&self) -> Result<Conn, RemoteError> {
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| {
                RemoteError::Network(format!(
                    "cannot resolve the host of {}: {e}; hint: check the name in the URL",
                    self.url
                ))
            })?
            .next()
            .ok_or_else(|| {
                RemoteError::Network(format!("the host of {} has no address", self.url))
            })?;
        let tcp = TcpStream::connect(addr).await.map_err(|e| {
            RemoteError::Network(format!(
                "cannot connect to the server at {}: {e}; hint: check that `recman server` runs there and the firewall lets the port through",
                self.url
            ))
        })?;
        let _ = tcp.set_nodelay(true);
        let name = ServerName::try_from(self.host.clone()).map_err(|e| {
            RemoteError::Invalid(format!(
                "the host of {} is not a valid TLS name: {e}",
                self.url
            ))
        })?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| self.handshake_error(&e))?;
        let failure = Arc::new(Mutex::new(None));
        let io = Watched::new(tls, failure.clone());
        let (send, conn) = wire::tuned_h2!(hyper::client::conn::http2::Builder::new(
            TokioExecutor::new()
        ))
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| self.network("the HTTP/2 handshake", &e, &failure))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn { send, failure })
    }

    fn handshake_error(&self, e: &std::io::Error) -> RemoteError {
        match TlsFailure::of(e) {
            Some(f) => f.describe(&self.url),
            None => RemoteError::Network(format!(
                "the TLS handshake with the server at {} failed: {e}; hint: check the URL names a `recman server`",
                self.url
            )),
        }
    }

    /// A failure of the connection, explained by what TLS saw on it when it saw something.
    fn network(
        &self,
        doing: &str,
        e: &dyn std::error::Error,
        failure: &Mutex<Option<TlsFailure>>,
    ) -> RemoteError {
        if let Some(f) = failure.lock().expect("not poisoned").as_ref() {
            return f.describe(&self.url);
        }
        RemoteError::Network(format!(
            "{doing} with the server at {} failed: {}; hint: the server stopped or the network dropped the connection",
            self.url,
            chain(e)
        ))
    }

    /// One try: the request sent and the response started on the runtime, then its meta read
    /// on the caller's thread (a frame reader blocks, so it never runs on the runtime).
    fn attempt_sync(
        &self,
        method: &str,
        meta: &serde_json::Value,
        body: Body,
        deadline: Option<Instant>,
    ) -> Result<Response, RemoteError> {
        let (mut reader, local_err) =
            runtime().block_on(self.attempt(method, meta, body, deadline))?;
        match reader.read_meta() {
            Ok(meta) => Ok(Response { meta, reader }),
            Err(e) => Err(match local_err.lock().expect("not poisoned").take() {
                Some(m) => RemoteError::Io(m),
                None => e,
            }),
        }
    }

    async fn attempt(
        &self,
        method: &str,
        meta: &serde_json::Value,
        body: Body,
        deadline: Option<Instant>,
    ) -> Result<(FrameReader, LocalErr), RemoteError> {
        let (mut send, failure) = self.connection(deadline).await?;
        let prefix = wire::meta_prefix(meta);
        let local_err: LocalErr = Arc::new(Mutex::new(None));
        let req_body = match body {
            Body::Empty => ChanBody::Whole(Some(prefix)),
            Body::Bytes(b) => ChanBody::Parts([prefix, b].into()),
            Body::Reader(r) => {
                let (tx, rx) = wire::channel();
                let slot = local_err.clone();
                tokio::task::spawn_blocking(move || feed(r, prefix, tx, slot));
                rx
            }
        };
        let req = http::Request::post(format!(
            "https://{}:{}{PATH_PREFIX}{method}",
            self.host, self.port
        ))
        .header("content-type", "application/x-recman")
        .body(req_body)
        .map_err(|e| RemoteError::Invalid(format!("bad method name '{method}': {e}")))?;
        let what = format!("the response of {method} from {}", self.url);
        let sent = async {
            send.ready().await?;
            send.send_request(req).await
        };
        let resp = match deadline {
            None => sent.await,
            Some(d) => tokio::time::timeout_at(d, sent).await.map_err(|_| {
                RemoteError::Deadline(format!("{what} did not start before the call's deadline; hint: the server is busy or the network stalled"))
            })?,
        };
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                if let Some(m) = local_err.lock().expect("not poisoned").take() {
                    return Err(RemoteError::Io(m));
                }
                return Err(self.network(&format!("the call {method}"), &e, &failure));
            }
        };
        if resp.status() == http::StatusCode::FORBIDDEN {
            let why = resp
                .headers()
                .get(ERROR_MESSAGE)
                .map(|v| crate::error::decode_header(v.as_bytes()))
                .unwrap_or_else(|| "our certificate is not allowed".into());
            return Err(RemoteError::Refused(format!(
                "the server at {} refused our certificate: {why}; hint: use a certificate whose CN the server allows, or add it with --allow on the server",
                self.url
            )));
        }
        if !resp.status().is_success() {
            return Err(RemoteError::Invalid(format!(
                "the server at {} answered {method} with HTTP status {}; hint: the URL may not name a recman server of this version",
                self.url,
                resp.status()
            )));
        }
        let reader = FrameReader::new(
            tokio::runtime::Handle::current(),
            resp.into_body(),
            deadline,
            true,
            what,
        );
        Ok((reader, local_err))
    }
}

/// Sends a reader's bytes as the request body; a read error resets the stream (the server
/// sees a broken body, never a short one) and is kept for the caller's error.
fn feed(
    mut r: Box<dyn Read + Send>,
    prefix: Bytes,
    tx: wire::Feed,
    err: Arc<Mutex<Option<String>>>,
) {
    if tx.blocking_send(Ok(Frame::data(prefix))).is_err() {
        return;
    }
    loop {
        let mut buf = vec![0u8; wire::CHUNK];
        let mut n = 0;
        let res = loop {
            match r.read(&mut buf[n..]) {
                Ok(0) => break Ok(()),
                Ok(k) => {
                    n += k;
                    if n == buf.len() {
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        if let Err(e) = res {
            *err.lock().expect("not poisoned") = Some(format!("reading the request body: {e}"));
            let _ = tx.blocking_send(Err(e));
            return;
        }
        if n == 0 {
            return;
        }
        buf.truncate(n);
        if tx.blocking_send(Ok(Frame::data(Bytes::from(buf)))).is_err() {
            return;
        }
        if n < wire::CHUNK {
            // A short fill means the reader reached its end.
            return;
        }
    }
}
