//! An https front for the plain-http S3 server: terminates TLS with a test certificate and
//! passes the bytes on, so tests can reach the store over https with a private CA.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// Listens on 127.0.0.1; stops with the value.
pub struct TlsFront {
    port: u16,
    // Dropping the runtime ends the accept loop and every open connection.
    _rt: Runtime,
}

impl TlsFront {
    /// Serves `cert` (PEM chain) and `key` (PEM) in front of `upstream` ("127.0.0.1:PORT").
    pub fn start(upstream: &str, cert: &Path, key: &Path) -> io::Result<TlsFront> {
        let certs = CertificateDer::pem_file_iter(cert)
            .and_then(|i| i.collect::<Result<Vec<_>, _>>())
            .map_err(|e| io::Error::other(format!("{}: {e}", cert.display())))?;
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| io::Error::other(format!("{}: {e}", key.display())))?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(io::Error::other)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("tls-front")
            .enable_all()
            .build()?;
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let port = listener.local_addr()?.port();
        let upstream = upstream.trim_start_matches("http://").to_string();
        rt.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    // A refused handshake (the wrong-CA tests) just ends this connection.
                    let Ok(mut tls) = acceptor.accept(client).await else {
                        return;
                    };
                    if let Ok(mut up) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                    }
                });
            }
        });
        Ok(TlsFront { port, _rt: rt })
    }

    /// "https://localhost:PORT" (the test certificate names localhost and 127.0.0.1).
    pub fn endpoint(&self) -> String {
        format!("https://localhost:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}
