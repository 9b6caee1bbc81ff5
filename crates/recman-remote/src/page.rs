//! The fleet page's server: one read-only HTML document at `/`, over HTTPS (HTTP/1.1, which
//! every browser speaks) with the fleet's mutual TLS. A client must present a certificate the
//! fleet's CA signed, whose CN is on the allow-list when there is one, and the read-only
//! bearer token when one is set. Only GET and HEAD of `/` are served. Every response forbids
//! the browser to load anything (Content-Security-Policy `default-src 'none'`, inline styles
//! and `data:` images excepted), so a value that slipped past the page's escaping still could
//! not run a script or reach another host.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};

use crate::error::RemoteError;
use crate::server::{Allow, Log, ServerHandle};
use crate::server::{accept_until_dropped, handshake, listen};
use crate::tls::TlsFiles;
use crate::wire::ChanBody;

/// Makes the page afresh for each request (it runs on a blocking thread: it may read a
/// catalog); Err is a message for the 500 response and the log.
pub type Render = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// Who may read the page, beyond holding a certificate of the fleet's CA.
#[derive(Clone, Debug)]
pub struct PageAccess {
    pub allow: Allow,
    /// When set, each request must also carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
}

/// What the browser may load for the page: nothing but the page's own inline styles and
/// `data:` images; no script, no frame, no form target, no other host.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Listens on `addr` and serves the page until the handle is dropped.
pub fn serve_page(
    addr: &str,
    tls: &TlsFiles,
    access: PageAccess,
    render: Render,
    log: Log,
) -> Result<ServerHandle, RemoteError> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server_config_for(b"http/1.1")?);
    let listener = listen(addr, "--page-listen")?;
    let access = Arc::new(access);
    let each_log = log.clone();
    accept_until_dropped(listener, log, move |tcp, peer| {
        let (acceptor, access, render, log) = (
            acceptor.clone(),
            access.clone(),
            render.clone(),
            each_log.clone(),
        );
        async move {
            let Some((tls, cn)) = handshake(tcp, peer, &acceptor, &log).await else {
                return;
            };
            connection(tls, peer, cn, access, render, log).await;
        }
    })
}

async fn connection(
    tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    addr: SocketAddr,
    cn: String,
    access: Arc<PageAccess>,
    render: Render,
    log: Log,
) {
    let allowed = access.allow.permits(&cn);
    if !allowed {
        log(&format!(
            "refused the page to {addr}: certificate CN={cn} is not on the allow-list (--page-allow)"
        ));
    }
    let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let (access, render, log) = (access.clone(), render.clone(), log.clone());
        async move {
            Ok::<_, std::convert::Infallible>(answer(&req, allowed, &access, render, &log).await)
        }
    });
    // A client that opens a connection and sends nothing is dropped after a while.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(20))
        .serve_connection(TokioIo::new(tls), svc)
        .await;
}

async fn answer(
    req: &http::Request<Incoming>,
    allowed: bool,
    access: &PageAccess,
    render: Render,
    log: &Log,
) -> http::Response<ChanBody> {
    use http::StatusCode as S;
    if !allowed {
        return plain(
            S::FORBIDDEN,
            "your certificate's CN is not on this server's allow-list\n",
        );
    }
    if let Some(token) = &access.token
        && !bearer_matches(req.headers(), token)
    {
        let mut r = plain(S::UNAUTHORIZED, "this page needs the read-only token\n");
        r.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    let head = req.method() == http::Method::HEAD;
    if req.method() != http::Method::GET && !head {
        let mut r = plain(
            S::METHOD_NOT_ALLOWED,
            "the fleet page is read-only: GET it\n",
        );
        r.headers_mut().insert(
            http::header::ALLOW,
            http::HeaderValue::from_static("GET, HEAD"),
        );
        return r;
    }
    if req.uri().path() != "/" {
        return plain(S::NOT_FOUND, "the fleet page is at /\n");
    }
    match tokio::task::spawn_blocking(move || render()).await {
        Ok(Ok(html)) => {
            let body = if head { None } else { Some(Bytes::from(html)) };
            respond(S::OK, "text/html; charset=utf-8", body)
        }
        Ok(Err(e)) => {
            log(&format!("the fleet page failed: {e}"));
            plain(S::INTERNAL_SERVER_ERROR, &format!("recman: {e}\n"))
        }
        Err(_) => plain(
            S::INTERNAL_SERVER_ERROR,
            "recman: making the page panicked; hint: this is a bug, report it with the server's log\n",
        ),
    }
}

/// Whether the request's `Authorization` is `Bearer <token>`, compared in time that does not
/// depend on where the first difference is.
fn bearer_matches(headers: &http::HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
    else {
        return false;
    };
    given.len() == token.len()
        && given
            .iter()
            .zip(token.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn plain(status: http::StatusCode, text: &str) -> http::Response<ChanBody> {
    respond(
        status,
        "text/plain; charset=utf-8",
        Some(Bytes::copy_from_slice(text.as_bytes())),
    )
}

fn respond(
    status: http::StatusCode,
    content_type: &'static str,
    body: Option<Bytes>,
) -> http::Response<ChanBody> {
    let mut r = http::Response::new(ChanBody::Whole(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    for (name, value) in [
        (http::header::CONTENT_TYPE, content_type),
        (
            http::header::CONTENT_SECURITY_POLICY,
            CONTENT_SECURITY_POLICY,
        ),
        (http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (http::header::CACHE_CONTROL, "no-store"),
        (http::header::REFERRER_POLICY, "no-referrer"),
        (http::header::X_FRAME_OPTIONS, "DENY"),
    ] {
        h.insert(name, http::HeaderValue::from_static(value));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_must_match_whole() {
        let mut h = http::HeaderMap::new();
        assert!(!bearer_matches(&h, "s3cret"));
        h.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer s3cret"),
        );
        assert!(bearer_matches(&h, "s3cret"));
        assert!(!bearer_matches(&h, "s3cre"));
        assert!(!bearer_matches(&h, "s3cret2"));
        h.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Basic s3cret"),
        );
        assert!(!bearer_matches(&h, "s3cret"));
    }
}
