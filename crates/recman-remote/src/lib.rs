//! The fleet transport: calls between recman processes on different hosts (the backup host,
//! a database host's agent, a repository host), over HTTP/2 with mutual TLS.
//!
//! # The contract
//!
//! **Connection.** `https://HOST:PORT` (port 8471 when left out), TLS 1.2/1.3 by rustls with
//! aws-lc-rs, ALPN `h2`. Both sides present a certificate; each verifies the other's against
//! its own `--tls-ca` (one CA for the fleet). The client checks the server's certificate holds
//! the host name of the URL. The server reads the client certificate's CN and refuses a CN
//! that is not on its [`Allow`] list: the client gets [`RemoteError::Refused`] ("the server at
//! URL refused our certificate: ...; hint: ..."), the server logs a line naming the peer's
//! address and the CN (or the TLS reason: expired, unknown CA). One HTTP/2 connection per
//! [`Client`] carries any number of concurrent calls, from any number of threads.
//!
//! **Call.** A named method (`[a-z0-9-]+`), a JSON meta value, and a payload, both ways:
//! `POST /recman/v1/<method>`; the request body is `u32 big-endian length | meta JSON |
//! payload bytes`, and so is the response body. Payloads stream: the client feeds a `Read`
//! from a helper thread ([`Body::Reader`]), the server's handler reads [`Call::body`] and writes
//! [`ResponseWriter`]; HTTP/2 flow control (8 MiB per stream, 32 MiB per connection) blocks a
//! writer whose reader is behind. Meta is for small descriptions (at most 16 MiB).
//!
//! **Status.** A response ends with HTTP/2 trailers: `recman-status: ok`, or `error` with
//! `recman-error-kind` (the [`recman_error::ErrorKind`] word: corrupt, not-found,
//! invalid-input, busy, cancelled, transient, ...) and `recman-error-message` (percent-encoded
//! UTF-8). A handler may fail after writing payload: the client's [`Response`] reader then
//! returns the error instead of ending; a response that ends without trailers (the connection
//! dropped, the server died) is a [`RemoteError::Network`] error too. A stream is never
//! silently short.
//!
//! **Errors.** [`RemoteError::kind`] maps every failure to an `ErrorKind`; a service's error
//! keeps the kind it had on the server ([`RemoteError::Remote`]). Through `std::io::Read` a
//! transport error is an `io::Error` wrapping the `RemoteError` ([`from_io`] gets it back).
//!
//! **Deadlines.** [`CallOptions::deadline`] bounds the whole call (connect, response start,
//! every payload read); passing it is [`RemoteError::Deadline`] (kind transient). Connecting
//! has its own limit ([`ClientOptions::connect_timeout`]). HTTP/2 pings every 10 s find a dead
//! connection within 30 s.
//!
//! **Retries.** Only idempotent calls ([`CallOptions::idempotent`]) with a replayable body
//! (empty or [`Body::Bytes`]) are retried, on network failures only, with backoff 100 ms
//! doubling to 2 s, for [`ClientOptions::retry_for`] (30 s, or `RECMAN_FLEET_RETRY_SECS`): a
//! dropped connection is dialled again. [`Client::call`] retries until the response starts;
//! [`Client::call_with`] and [`Client::call_whole`] also when the payload breaks off midway
//! (the consumer starts over).
//! A caller streaming a large payload through [`Client::call`] retries a broken stream
//! itself, from where it got to (e.g. a file read re-issued from its last whole block).
//!
//! **The fleet page.** [`serve_page`] serves one read-only HTML document to browsers over the
//! same mutual TLS (ALPN `http/1.1`, since a page needs no streams): GET or HEAD of `/`, a CN
//! allow-list of its own, an optional bearer token, and a Content-Security-Policy that lets
//! the browser load nothing but the page.
//!
//! **Threads.** The API is synchronous: a process-wide tokio runtime (two workers) runs the
//! connections; callers block on it from their own threads (never from inside an async task).
//! The server runs each call's [`Service::call`] on a blocking thread of that runtime.

mod client;
mod error;
mod page;
mod reader;
mod runtime;
mod server;
mod tls;
mod watch;
mod wire;

pub use client::{Body, CallOptions, Client, ClientOptions, Response, parse_url};
pub use error::{RemoteError, ServiceError, from_io};
pub use page::{CONTENT_SECURITY_POLICY, PageAccess, Render, serve_page};
pub use server::{
    Allow, Call, Log, Peer, ResponseWriter, ServerHandle, Service, serve, stderr_log,
};
pub use tls::{TlsFiles, common_name};
