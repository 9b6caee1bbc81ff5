//! A TCP proxy that speaks just enough HTTP/1.1 to fail individual requests, even on
//! keep-alive connections: it frames request and response bodies (Content-Length or
//! chunked) so it knows where each exchange ends.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What the proxy does to each request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Faults {
    /// Forwards everything untouched.
    None,
    /// Per request: with probability `slowdown`, answers 503 SlowDown without forwarding;
    /// otherwise with probability `cut`, forwards it and cuts the connection part-way
    /// through the response.
    Random { slowdown: f64, cut: f64 },
    /// Answers 403 AccessDenied to every request, like a store with revoked keys.
    Deny,
    /// Forwards the first `after` writes (PUT and POST) whose request path contains `path`,
    /// then answers 403 AccessDenied to each further one; reads, lists and deletes pass. A
    /// store whose write permission is revoked in the middle of a command, which then can
    /// still clean up. The count starts again at each [`FaultProxy::set_faults`].
    DenyWrites { path: &'static str, after: u64 },
    /// Forwards every request, but cuts the answer of each write (PUT and POST) whose path
    /// contains `path` after the first `after` of them: the store did the write, the client
    /// never hears so. Counted from each [`FaultProxy::set_faults`] too.
    CutWrites { path: &'static str, after: u64 },
}

enum Action {
    Forward,
    SlowDown,
    Cut,
    Deny,
}

/// A fault-injecting proxy on 127.0.0.1 in front of one upstream endpoint.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    upstream: String,
    faults: Mutex<Faults>,
    rng: Mutex<u64>,
    stop: AtomicBool,
    sockets: Mutex<Vec<TcpStream>>,
    requests: AtomicU64,
    /// The first line (`METHOD TARGET VERSION`) of every request, in arrival order.
    lines: Mutex<Vec<String>>,
    slowdowns: AtomicU64,
    cuts: AtomicU64,
    denials: AtomicU64,
    /// Writes matched by `Faults::DenyWrites` since the faults were last set.
    matched_writes: AtomicU64,
}

impl FaultProxy {
    /// Proxies to `upstream` ("127.0.0.1:PORT" or "http://127.0.0.1:PORT"); `seed` fixes
    /// the sequence of decisions.
    pub fn start(upstream: &str, faults: Faults, seed: u64) -> io::Result<FaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream: upstream
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string(),
            faults: Mutex::new(faults),
            rng: Mutex::new(seed),
            stop: AtomicBool::new(false),
            sockets: Mutex::new(Vec::new()),
            requests: AtomicU64::new(0),
            lines: Mutex::new(Vec::new()),
            slowdowns: AtomicU64::new(0),
            cuts: AtomicU64::new(0),
            denials: AtomicU64::new(0),
            matched_writes: AtomicU64::new(0),
        });
        let sh = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if sh.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    sh.track(&conn);
                    let sh = Arc::clone(&sh);
                    // A connection that breaks just ends; the client sees the break.
                    let _ = std::thread::Builder::new()
                        .name("fault-proxy-conn".into())
                        .spawn(move || drop(serve(conn, &sh)));
                }
            })?;
        Ok(FaultProxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// "http://127.0.0.1:PORT".
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set_faults(&self, faults: Faults) {
        let mut f = lock(&self.shared.faults);
        self.shared.matched_writes.store(0, Ordering::SeqCst);
        *f = faults;
    }

    /// Faults injected so far, of every kind.
    pub fn faults(&self) -> u64 {
        self.slowdowns() + self.cuts() + self.denials()
    }

    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// The first line of every request so far, in arrival order: what a test compares with a
    /// server's own log to tell the proxied client's requests from others'.
    pub fn request_lines(&self) -> Vec<String> {
        lock(&self.shared.lines).clone()
    }

    pub fn slowdowns(&self) -> u64 {
        self.shared.slowdowns.load(Ordering::SeqCst)
    }

    pub fn cuts(&self) -> u64 {
        self.shared.cuts.load(Ordering::SeqCst)
    }

    pub fn denials(&self) -> u64 {
        self.shared.denials.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for s in lock(&self.shared.sockets).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn track(&self, s: &TcpStream) {
        if let Ok(c) = s.try_clone() {
            lock(&self.sockets).push(c);
        }
    }

    /// splitmix64: tiny, seedable, good enough to spread faults.
    fn next(&self) -> u64 {
        let mut st = lock(&self.rng);
        *st = st.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *st;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Whether `first` is a write to a path containing `path` past the first `after` such.
    fn write_past(&self, first: &str, path: &str, after: u64) -> bool {
        let mut parts = first.split(' ');
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        (method == "PUT" || method == "POST")
            && target.contains(path)
            && self.matched_writes.fetch_add(1, Ordering::SeqCst) >= after
    }

    /// What to do with the request whose first line (`METHOD PATH VERSION`) is `first`.
    fn decide(&self, first: &str) -> Action {
        let faults = *lock(&self.faults);
        match faults {
            Faults::None => Action::Forward,
            Faults::Deny => Action::Deny,
            Faults::DenyWrites { path, after } if self.write_past(first, path, after) => {
                Action::Deny
            }
            Faults::CutWrites { path, after } if self.write_past(first, path, after) => Action::Cut,
            Faults::DenyWrites { .. } | Faults::CutWrites { .. } => Action::Forward,
            Faults::Random { slowdown, cut } => {
                let r = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
                if r < slowdown {
                    Action::SlowDown
                } else if r < slowdown + cut {
                    Action::Cut
                } else {
                    Action::Forward
                }
            }
        }
    }
}

/// How the end of a message body is found.
#[derive(Clone, Copy)]
enum Body {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

struct Head {
    raw: Vec<u8>,
    first: String,
    body: Body,
    close: bool,
}

fn read_head(r: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut raw = Vec::new();
    loop {
        let n = r.read_until(b'\n', &mut raw)?;
        if n == 0 {
            return if raw.is_empty() {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        if raw.ends_with(b"\r\n\r\n") || raw == b"\r\n" {
            break;
        }
        if raw.len() > 64 << 10 {
            return Err(io::Error::other("http head over 64 KiB"));
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default().to_string();
    let (mut body, mut close) = (Body::Empty, false);
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
        match k.as_str() {
            "content-length" => {
                let n = v
                    .parse()
                    .map_err(|_| io::Error::other("bad content-length"))?;
                if !matches!(body, Body::Chunked) {
                    body = Body::Length(n);
                }
            }
            "transfer-encoding" if v.contains("chunked") => body = Body::Chunked,
            "connection" if v.contains("close") => close = true,
            _ => {}
        }
    }
    Ok(Some(Head {
        raw,
        first,
        body,
        close,
    }))
}

/// Copies one body, as framed by its head.
fn copy_body(r: &mut impl BufRead, w: &mut impl Write, body: Body) -> io::Result<()> {
    match body {
        Body::Empty => Ok(()),
        Body::Length(n) => copy_n(r, w, n),
        Body::UntilClose => io::copy(r, w).map(drop),
        Body::Chunked => loop {
            let mut line = Vec::new();
            r.read_until(b'\n', &mut line)?;
            w.write_all(&line)?;
            let text = String::from_utf8_lossy(&line);
            let size = text.trim().split(';').next().unwrap_or_default();
            let size = u64::from_str_radix(size.trim(), 16)
                .map_err(|_| io::Error::other("bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    let mut t = Vec::new();
                    if r.read_until(b'\n', &mut t)? == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    w.write_all(&t)?;
                    if t == b"\r\n" {
                        return Ok(());
                    }
                }
            }
            copy_n(r, w, size + 2)?;
        },
    }
}

fn copy_n(r: &mut impl Read, w: &mut impl Write, n: u64) -> io::Result<()> {
    let copied = io::copy(&mut r.take(n), w)?;
    if copied < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

fn error_response(status: &str, code: &str, message: &str, head_only: bool) -> Vec<u8> {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>recman-fault-proxy</RequestId></Error>"
    );
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

fn serve(client: TcpStream, sh: &Shared) -> io::Result<()> {
    let mut cr = BufReader::new(client.try_clone()?);
    let mut cw = client;
    let mut upstream: Option<(BufReader<TcpStream>, TcpStream)> = None;
    while let Some(req) = read_head(&mut cr)? {
        sh.requests.fetch_add(1, Ordering::SeqCst);
        lock(&sh.lines).push(req.first.clone());
        let is_head = req.first.starts_with("HEAD ");
        let action = sh.decide(&req.first);
        if let Action::SlowDown | Action::Deny = action {
            // The body must be consumed so the next request on this connection parses.
            copy_body(&mut cr, &mut io::sink(), req.body)?;
            let resp = if let Action::Deny = action {
                sh.denials.fetch_add(1, Ordering::SeqCst);
                error_response("403 Forbidden", "AccessDenied", "Access Denied", is_head)
            } else {
                sh.slowdowns.fetch_add(1, Ordering::SeqCst);
                let msg = "Please reduce your request rate.";
                error_response("503 Slow Down", "SlowDown", msg, is_head)
            };
            cw.write_all(&resp)?;
            if req.close {
                return Ok(());
            }
            continue;
        }
        if upstream.is_none() {
            let s = TcpStream::connect(&sh.upstream)?;
            s.set_nodelay(true)?;
            sh.track(&s);
            upstream = Some((BufReader::new(s.try_clone()?), s));
        }
        let Some((ur, uw)) = upstream.as_mut() else {
            unreachable!("connected above")
        };
        uw.write_all(&req.raw)?;
        copy_body(&mut cr, uw, req.body)?;
        let resp = loop {
            let h = read_head(ur)?.ok_or(io::ErrorKind::UnexpectedEof)?;
            if h.first
                .split(' ')
                .nth(1)
                .is_some_and(|s| s.starts_with('1'))
            {
                cw.write_all(&h.raw)?;
                continue;
            }
            break h;
        };
        let status = resp.first.split(' ').nth(1).unwrap_or_default();
        let body = if is_head || status == "204" || status == "304" {
            Body::Empty
        } else if let Body::Empty = resp.body {
            if resp.close {
                Body::UntilClose
            } else {
                Body::Empty
            }
        } else {
            resp.body
        };
        if let Action::Cut = action {
            let body_len = if let Body::Length(n) = body { n } else { 0 };
            let total = resp.raw.len() as u64 + body_len;
            let cut_at = 1 + sh.next() % (total - 1).max(1);
            let head_part = (cut_at as usize).min(resp.raw.len());
            cw.write_all(&resp.raw[..head_part])?;
            let _ = copy_n(ur, &mut cw, cut_at - head_part as u64);
            sh.cuts.fetch_add(1, Ordering::SeqCst);
            let _ = cw.shutdown(Shutdown::Both);
            let _ = uw.shutdown(Shutdown::Both);
            return Ok(());
        }
        cw.write_all(&resp.raw)?;
        copy_body(ur, &mut cw, body)?;
        if req.close || resp.close {
            return Ok(());
        }
    }
    Ok(())
}
