//! Mutual TLS between recman processes: both sides present a certificate signed by the one
//! CA given as `--tls-ca`; the server also checks the client certificate's CN against its
//! allow-list (see `server`). Files are read when a server starts or a client connects.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig};

use crate::error::RemoteError;

/// The three PEM files of one side: its certificate (chain), its private key, and the CA
/// that signs the peers it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn files_err(path: &Path, what: &str, reason: impl std::fmt::Display, opt: &str) -> RemoteError {
    RemoteError::Files(format!(
        "cannot use the {what} {}: {reason}; hint: give a readable PEM file with {opt} (or the config file's [tls] section)",
        path.display()
    ))
}

fn read_certs(
    path: &Path,
    what: &str,
    opt: &str,
) -> Result<Vec<CertificateDer<'static>>, RemoteError> {
    let bytes = std::fs::read(path).map_err(|e| files_err(path, what, e, opt))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| files_err(path, what, format!("not a PEM file ({e})"), opt))?;
    if certs.is_empty() {
        return Err(files_err(path, what, "it holds no certificate", opt));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, RemoteError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| files_err(path, "private key", e, "--tls-key"))
}

fn roots(ca: &Path) -> Result<RootCertStore, RemoteError> {
    let mut store = RootCertStore::empty();
    for c in read_certs(ca, "CA certificate", "--tls-ca")? {
        store
            .add(c)
            .map_err(|e| files_err(ca, "CA certificate", e, "--tls-ca"))?;
    }
    Ok(store)
}

impl TlsFiles {
    pub(crate) fn server_config(&self) -> Result<Arc<ServerConfig>, RemoteError> {
        self.server_config_for(b"h2")
    }

    /// The server's TLS set-up offering one ALPN protocol: `h2` for the fleet's calls,
    /// `http/1.1` for the fleet page (a browser speaks it, and a page needs no streams).
    pub(crate) fn server_config_for(&self, alpn: &[u8]) -> Result<Arc<ServerConfig>, RemoteError> {
        let p = provider();
        let inner =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots(&self.ca)?), p.clone())
                .build()
                .map_err(|e| files_err(&self.ca, "CA certificate", e, "--tls-ca"))?;
        let verifier = Arc::new(Remembering { inner });
        let mut cfg = ServerConfig::builder_with_provider(p)
            .with_safe_default_protocol_versions()
            .map_err(|e| RemoteError::Invalid(format!("tls set-up: {e}")))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                read_certs(&self.cert, "certificate", "--tls-cert")?,
                read_key(&self.key)?,
            )
            .map_err(|e| files_err(&self.cert, "certificate and key", e, "--tls-cert/--tls-key"))?;
        cfg.alpn_protocols = vec![alpn.to_vec()];
        Ok(Arc::new(cfg))
    }

    pub(crate) fn client_config(&self) -> Result<Arc<ClientConfig>, RemoteError> {
        let mut cfg = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| RemoteError::Invalid(format!("tls set-up: {e}")))?
            .with_root_certificates(roots(&self.ca)?)
            .with_client_auth_cert(
                read_certs(&self.cert, "certificate", "--tls-cert")?,
                read_key(&self.key)?,
            )
            .map_err(|e| files_err(&self.cert, "certificate and key", e, "--tls-cert/--tls-key"))?;
        cfg.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(cfg))
    }
}

thread_local! {
    /// The CN and reason of the last client certificate this thread's verifier refused:
    /// rustls refuses inside the accept poll that returns the error, on the same thread, so
    /// the server's log line can name the certificate, not only the TLS error.
    static LAST_REFUSAL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Takes the refusal the verifier noted on this thread, if any.
pub(crate) fn take_refusal() -> Option<String> {
    LAST_REFUSAL.with(|r| r.borrow_mut().take())
}

/// webpki's client verifier, noting what it refused.
#[derive(Debug)]
struct Remembering {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for Remembering {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let r = self
            .inner
            .verify_client_cert(end_entity, intermediates, now);
        if let Err(e) = &r {
            let cn = common_name(end_entity).unwrap_or_else(|| "(none)".into());
            LAST_REFUSAL.with(|s| *s.borrow_mut() = Some(format!("certificate CN={cn}: {e}")));
        }
        r
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

/// One DER element: (tag, contents, rest).
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        first as usize
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let v = rest[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        rest = &rest[n..];
        v
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The subject's common name (OID 2.5.4.3) of a DER certificate; the certificate has been
/// verified (or is being refused) by webpki, this only reads the name for allow-lists and logs.
pub fn common_name(cert: &[u8]) -> Option<String> {
    const CN: [u8; 3] = [0x55, 0x04, 0x03];
    let (_, certificate, _) = der(cert)?;
    let (_, tbs, _) = der(certificate)?;
    let mut rest = tbs;
    let mut fields = Vec::new();
    while let Some((tag, body, r)) = der(rest) {
        fields.push((tag, body));
        rest = r;
    }
    // [0] version (optional), serial, signature, issuer, validity, subject.
    let skip = if fields.first()?.0 == 0xa0 { 1 } else { 0 };
    let (tag, subject) = *fields.get(skip + 4)?;
    if tag != 0x30 {
        return None;
    }
    let mut rdns = subject;
    while let Some((_, set, r)) = der(rdns) {
        rdns = r;
        let mut atvs = set;
        while let Some((_, atv, r2)) = der(atvs) {
            atvs = r2;
            let (_, oid, value) = der(atv)?;
            if oid == CN {
                let (tag, s, _) = der(value)?;
                if matches!(tag, 0x0c | 0x13 | 0x16 | 0x14) {
                    return Some(String::from_utf8_lossy(s).into_owned());
                }
            }
        }
    }
    None
}
