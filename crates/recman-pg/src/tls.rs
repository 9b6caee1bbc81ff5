//! TLS for connections to PostgreSQL, with libpq's meaning of the settings: `sslmode` says
//! whether to encrypt and what to check, `sslrootcert` which CAs are trusted, `sslcert` and
//! `sslkey` the client's own certificate. rustls does the work (aws-lc-rs, the provider the
//! S3 client already uses).

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::PgError;

/// What the server's certificate must prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verify {
    /// Encryption only (sslmode=prefer or require without a root certificate file).
    Nothing,
    /// Signed by a trusted CA (verify-ca, or require with a root certificate file).
    Chain,
    /// Signed by a trusted CA and naming the host connected to (verify-full).
    ChainAndName,
}

/// Where the trusted CAs come from.
#[derive(Clone, Debug)]
pub(crate) enum Roots {
    File(PathBuf),
    /// sslrootcert=system: the operating system's bundle.
    System,
}

/// The TLS side of a resolved connection; files are read when connecting, so that a replaced
/// certificate is picked up by the next connection.
#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub(crate) verify: Verify,
    pub(crate) roots: Option<Roots>,
    /// The client certificate and its key, when the server asks for one.
    pub(crate) client: Option<(PathBuf, PathBuf)>,
    /// "sslmode=verify-full (from PGSSLMODE)", for messages.
    pub(crate) described: String,
}

/// The system CA bundle where Debian and most distributions keep it; SSL_CERT_FILE wins.
const SYSTEM_BUNDLES: [&str; 3] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

impl TlsSettings {
    /// The rustls configuration, or an error naming the file that could not be used.
    pub(crate) fn client_config(&self, target: &str) -> Result<Arc<ClientConfig>, PgError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| self.file_err(target, Path::new("-"), "tls setup", e.to_string()))?;
        let verifier: Arc<dyn ServerCertVerifier> =
            match self.verify {
                Verify::Nothing => Arc::new(AnyCert(provider.clone())),
                v => {
                    let roots = self.root_store(target)?;
                    let inner = WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots),
                        provider.clone(),
                    )
                    .build()
                    .map_err(|e| {
                        self.file_err(target, Path::new("-"), "root certificates", e.to_string())
                    })?;
                    Arc::new(Checked {
                        inner,
                        names: v == Verify::ChainAndName,
                    })
                }
            };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = read_certs(cert)
                    .map_err(|r| self.file_err(target, cert, "client certificate", r))?;
                let k = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    self.file_err(target, key, "client key", pem_reason(&e.to_string()))
                })?;
                builder
                    .with_client_auth_cert(chain, k)
                    .map_err(|e| self.file_err(target, key, "client key", e.to_string()))?
            }
        };
        Ok(Arc::new(config))
    }

    fn root_store(&self, target: &str) -> Result<RootCertStore, PgError> {
        let path = match &self.roots {
            Some(Roots::File(p)) => p.clone(),
            Some(Roots::System) => system_bundle().ok_or_else(|| {
                self.file_err(
                    target,
                    Path::new(SYSTEM_BUNDLES[0]),
                    "system root certificates",
                    "no system CA bundle found".into(),
                )
            })?,
            None => {
                return Err(PgError::TlsSetup {
                    target: target.to_string(),
                    what: "root certificate file".into(),
                    path: default_dir()
                        .map(|d| d.join("root.crt"))
                        .unwrap_or_default(),
                    reason: format!(
                        "{} verifies the server's certificate, and no sslrootcert was given nor does the default file exist",
                        self.described
                    ),
                });
            }
        };
        let certs =
            read_certs(&path).map_err(|r| self.file_err(target, &path, "root certificates", r))?;
        let mut store = RootCertStore::empty();
        let (_, ignored) = store.add_parsable_certificates(certs);
        if store.is_empty() {
            return Err(self.file_err(
                target,
                &path,
                "root certificates",
                format!("none of its {ignored} certificates can be used as a CA"),
            ));
        }
        Ok(store)
    }

    fn file_err(&self, target: &str, path: &Path, what: &str, reason: String) -> PgError {
        PgError::TlsSetup {
            target: target.to_string(),
            what: what.to_string(),
            path: path.to_path_buf(),
            reason,
        }
    }
}

/// libpq's directory of default files: ~/.postgresql.
pub(crate) fn default_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".postgresql"))
}

fn system_bundle() -> Option<PathBuf> {
    if let Some(f) = std::env::var_os("SSL_CERT_FILE") {
        return Some(PathBuf::from(f));
    }
    SYSTEM_BUNDLES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| pem_reason(&e.to_string()))?;
    if certs.is_empty() {
        return Err("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into());
    }
    Ok(certs)
}

fn pem_reason(e: &str) -> String {
    format!("not a usable PEM file ({e})")
}

/// Verification by webpki; `names` false accepts a certificate for another host name, which
/// is what verify-ca means. webpki checks the name last, so a name error implies a good chain.
#[derive(Debug)]
struct Checked {
    inner: Arc<WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// sslmode=require without a root certificate: any certificate, as libpq does; the handshake
/// signatures are still checked, so the channel is encrypted to whoever holds the key.
#[derive(Debug)]
struct AnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The connector handed to the `postgres` crate.
pub(crate) struct Connector {
    pub(crate) config: Arc<ClientConfig>,
    /// What was checked, for the message when the server's certificate is refused.
    pub(crate) checked: String,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S> MakeTlsConnect<S> for Connector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type TlsConnect = Connect;
    type Error = BoxError;

    /// Called for every host, sockets too, before sslmode is looked at: a name no certificate
    /// can hold fails only if a handshake is attempted with it.
    fn make_tls_connect(&mut self, domain: &str) -> Result<Connect, BoxError> {
        let name = ServerName::try_from(domain.to_string())
            .map_err(|_| format!("{domain:?} is not a host name a certificate can name"));
        Ok(Connect {
            config: self.config.clone(),
            name,
            checked: self.checked.clone(),
        })
    }
}

pub(crate) struct Connect {
    config: Arc<ClientConfig>,
    name: Result<ServerName<'static>, String>,
    checked: String,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream<S>, BoxError>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let name = self.name?;
            let host = name.to_str().into_owned();
            tokio_rustls::TlsConnector::from(self.config)
                .connect(name, stream)
                .await
                .map(|s| Stream(Box::new(s)))
                .map_err(|e| Box::new(handshake_error(&host, &self.checked, e)) as BoxError)
        })
    }
}

/// Says which certificate failed and why, in words a DBA can act on.
fn handshake_error(host: &str, checked: &str, e: io::Error) -> HandshakeError {
    let inner = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<rustls::Error>())
        .cloned();
    let message = match inner {
        Some(rustls::Error::InvalidCertificate(c)) => {
            let why = match &c {
                CertificateError::UnknownIssuer => {
                    "it is not signed by a trusted CA (unknown issuer)".to_string()
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "it has expired".to_string()
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "it is not valid yet".to_string()
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    format!("it does not name host {host:?} ({c})")
                }
                other => format!("{other:?}"),
            };
            return HandshakeError {
                certificate: true,
                message: format!(
                    "the server's TLS certificate for {host} was refused: {why}; checked with {checked}"
                ),
            };
        }
        Some(rustls::Error::AlertReceived(a)) => format!(
            "the server ended the TLS handshake with alert {a:?} (it may have refused recman's client certificate, or want one: sslcert/sslkey)"
        ),
        Some(other) => format!("TLS handshake with {host} failed: {other}"),
        None => format!("TLS handshake with {host} failed: {e}"),
    };
    HandshakeError {
        certificate: false,
        message,
    }
}

/// A failed handshake, with whether the server's certificate was what the checks refused: the
/// connection's error takes its cause from this type, not from the words.
#[derive(Debug)]
pub(crate) struct HandshakeError {
    pub certificate: bool,
    message: String,
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HandshakeError {}

/// The cause of a failed connection whose error chain holds a handshake's failure.
pub(crate) fn cause_in(
    e: &(dyn std::error::Error + 'static),
) -> Option<crate::error::ConnectCause> {
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = at {
        if let Some(h) = err.downcast_ref::<HandshakeError>() {
            return Some(if h.certificate {
                crate::error::ConnectCause::TlsCertificate
            } else {
                crate::error::ConnectCause::Tls
            });
        }
        if let Some(io) = err.downcast_ref::<io::Error>()
            && let Some(r) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
        {
            return Some(match r {
                rustls::Error::InvalidCertificate(_) => crate::error::ConnectCause::TlsCertificate,
                _ => crate::error::ConnectCause::Tls,
            });
        }
        at = err.source();
    }
    None
}

/// An encrypted connection. Boxed: rustls's session state is large.
pub(crate) struct Stream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for Stream<S> {
    /// No tls-server-end-point binding: computing it needs the hash of the certificate's own
    /// signature algorithm; SCRAM then runs without channel binding, as with channel_binding=prefer
    /// against a server that offers none.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}
