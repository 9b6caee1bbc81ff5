//! What TLS said on a client connection. With TLS 1.3 the server checks our certificate after
//! our side of the handshake is done, so its refusal (an alert) arrives on the first read and
//! reaches hyper as a bare "connection error"; the stream wrapper keeps it for the message.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rustls::AlertDescription;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::RemoteError;

#[derive(Clone, Debug)]
pub(crate) enum TlsFailure {
    /// The server sent this alert: it refused our certificate (or the handshake).
    Alert(AlertDescription),
    /// We refused the server's certificate.
    Untrusted(String),
}

impl TlsFailure {
    pub(crate) fn of(e: &io::Error) -> Option<TlsFailure> {
        let t = e.get_ref()?.downcast_ref::<rustls::Error>()?;
        match t {
            rustls::Error::AlertReceived(a) => Some(TlsFailure::Alert(*a)),
            rustls::Error::InvalidCertificate(c) => Some(TlsFailure::Untrusted(format!("{c:?}"))),
            _ => None,
        }
    }

    pub(crate) fn describe(&self, url: &str) -> RemoteError {
        match self {
            TlsFailure::Alert(a) => {
                let why = match a {
                    AlertDescription::CertificateExpired => "it has expired",
                    AlertDescription::UnknownCA => "it is not signed by the server's CA",
                    AlertDescription::BadCertificate => "the server could not verify it",
                    AlertDescription::CertificateRequired => "we sent none",
                    AlertDescription::CertificateRevoked => "it is revoked",
                    AlertDescription::HandshakeFailure => "the handshake failed",
                    _ => "",
                };
                let why = if why.is_empty() {
                    format!("TLS alert {a:?}")
                } else {
                    format!("{why} (TLS alert {a:?})")
                };
                RemoteError::Refused(format!(
                    "the server at {url} refused our certificate: {why}; hint: give --tls-cert a current certificate signed by the CA the server uses as its --tls-ca"
                ))
            }
            TlsFailure::Untrusted(why) => RemoteError::Untrusted(format!(
                "the server at {url} presented a certificate that does not check against our --tls-ca: {why}; hint: give --tls-ca the CA that signed the server's certificate, and connect by a name the certificate holds"
            )),
        }
    }
}

pub(crate) struct Watched<S> {
    inner: S,
    slot: Arc<Mutex<Option<TlsFailure>>>,
}

impl<S> Watched<S> {
    pub(crate) fn new(inner: S, slot: Arc<Mutex<Option<TlsFailure>>>) -> Self {
        Watched { inner, slot }
    }

    fn note<T>(&self, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &r
            && let Some(f) = TlsFailure::of(e)
        {
            let mut s = self.slot.lock().expect("not poisoned");
            if s.is_none() {
                *s = Some(f);
            }
        }
        r
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        self.note(r)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(r)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.note(r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.note(r)
    }
}
