//! What a repository costs: every request the object-store drivers send, counted by the kind
//! a cloud bills it as (PUT, GET, HEAD, LIST, DELETE) with the payload bytes each way.
//!
//! All of them go through one HTTP client factory, [`Metered`]: object_store's clients (S3,
//! Azure, GCS, their retries included) and recman's own signed and upload clients. Counting
//! there, per attempt, is what makes the numbers match a store's bill and its access log: a
//! retried request is two requests. The counters are process-wide, so a command takes a
//! [`snapshot`] before and after and keeps the difference.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Method;
use http_body::{Body, Frame, SizeHint};
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpResponseBody, HttpService,
    ReqwestConnector,
};

/// The kinds of request a store bills, in the order reports show them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Put,
    Get,
    Head,
    List,
    Delete,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::Put, Kind::Get, Kind::Head, Kind::List, Kind::Delete];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Put => "PUT",
            Kind::Get => "GET",
            Kind::Head => "HEAD",
            Kind::List => "LIST",
            Kind::Delete => "DELETE",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Requests of one kind and their payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KindUsage {
    pub requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// Requests and bytes by kind, indexed like [`Kind::ALL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage([KindUsage; 5]);

impl Usage {
    pub fn of(&self, kind: Kind) -> KindUsage {
        self.0[kind.index()]
    }

    pub fn set(&mut self, kind: Kind, u: KindUsage) {
        self.0[kind.index()] = u;
    }

    /// What was counted since `before` (a snapshot taken earlier in this process).
    pub fn since(&self, before: &Usage) -> Usage {
        let mut out = Usage::default();
        for k in Kind::ALL {
            let (a, b) = (self.of(k), before.of(k));
            out.set(
                k,
                KindUsage {
                    requests: a.requests.saturating_sub(b.requests),
                    bytes_sent: a.bytes_sent.saturating_sub(b.bytes_sent),
                    bytes_received: a.bytes_received.saturating_sub(b.bytes_received),
                },
            );
        }
        out
    }

    /// Adds `other`, kind by kind.
    pub fn add(&mut self, other: &Usage) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            a.requests += b.requests;
            a.bytes_sent += b.bytes_sent;
            a.bytes_received += b.bytes_received;
        }
    }

    /// All kinds together.
    pub fn total(&self) -> KindUsage {
        let mut t = KindUsage::default();
        for u in self.0 {
            t.requests += u.requests;
            t.bytes_sent += u.bytes_sent;
            t.bytes_received += u.bytes_received;
        }
        t
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|u| u.requests == 0)
    }

    /// The kinds with at least one request.
    pub fn kinds(&self) -> impl Iterator<Item = (Kind, KindUsage)> + '_ {
        Kind::ALL
            .into_iter()
            .map(|k| (k, self.of(k)))
            .filter(|(_, u)| u.requests > 0)
    }
}

struct Counter {
    requests: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Counter = Counter {
    requests: AtomicU64::new(0),
    sent: AtomicU64::new(0),
    received: AtomicU64::new(0),
};

static COUNTERS: [Counter; 5] = [ZERO; 5];

/// Everything this process has sent to object stores so far.
pub fn snapshot() -> Usage {
    let mut u = Usage::default();
    for k in Kind::ALL {
        let c = &COUNTERS[k.index()];
        u.set(
            k,
            KindUsage {
                requests: c.requests.load(Ordering::Relaxed),
                bytes_sent: c.sent.load(Ordering::Relaxed),
                bytes_received: c.received.load(Ordering::Relaxed),
            },
        );
    }
    u
}

/// The kind a store bills `method` on `uri` as. Listings are GETs that name no object but ask
/// for a list (S3's `list-type`/`versions`/`uploads`, Azure's `comp=list`, GCS's JSON `/o`);
/// S3's multi-object delete and Azure's blob batch (object_store deletes through it) are
/// POSTs; other POSTs create or complete uploads.
pub fn classify(method: &Method, uri: &http::Uri) -> Kind {
    let query = uri.query().unwrap_or("");
    let has = |p: &str| {
        query
            .split('&')
            .any(|kv| kv == p || kv.starts_with(&format!("{p}=")))
    };
    match *method {
        Method::HEAD => Kind::Head,
        Method::DELETE => Kind::Delete,
        Method::POST if has("delete") || query.contains("comp=batch") => Kind::Delete,
        Method::GET => {
            let listing = has("list-type")
                || has("versions")
                || has("uploads")
                || (has("comp") && query.contains("comp=list"))
                || uri.path().ends_with("/o");
            if listing { Kind::List } else { Kind::Get }
        }
        _ => Kind::Put,
    }
}

/// Hosts that hand out credentials (instance metadata, STS, OAuth): their requests are not
/// requests to the store and no store bills them.
fn is_credential_host(host: &str) -> bool {
    matches!(
        host,
        "169.254.169.254" | "169.254.170.2" | "[fd00:ec2::254]" | "metadata.google.internal"
    ) || host.starts_with("sts.")
        || host == "oauth2.googleapis.com"
        || host.ends_with(".microsoftonline.com")
}

fn record(kind: Kind, sent: u64) {
    let c = &COUNTERS[kind.index()];
    c.requests.fetch_add(1, Ordering::Relaxed);
    c.sent.fetch_add(sent, Ordering::Relaxed);
}

/// The HTTP client factory every object-store client is built with.
#[derive(Debug, Default)]
pub(crate) struct Metered;

impl Metered {
    pub(crate) fn client(options: &ClientOptions) -> object_store::Result<HttpClient> {
        Metered.connect(options)
    }
}

impl HttpConnector for Metered {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(MeteredService(inner)))
    }
}

#[derive(Debug)]
struct MeteredService(HttpClient);

#[async_trait::async_trait]
impl HttpService for MeteredService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let counted = !req.uri().host().is_some_and(is_credential_host);
        let kind = classify(req.method(), req.uri());
        if counted {
            record(kind, req.body().content_length() as u64);
        }
        let resp = self.0.execute(req).await?;
        if !counted {
            return Ok(resp);
        }
        let (parts, body) = resp.into_parts();
        let body = HttpResponseBody::new(CountedBody { inner: body, kind });
        Ok(HttpResponse::from_parts(parts, body))
    }
}

/// A response body that adds the bytes read from it to its kind's count.
struct CountedBody {
    inner: HttpResponseBody,
    kind: Kind,
}

impl Body for CountedBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let kind = self.kind;
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            COUNTERS[kind.index()]
                .received
                .fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(m: Method, uri: &str) -> Kind {
        classify(&m, &uri.parse().unwrap())
    }

    #[test]
    fn requests_are_billed_by_what_they_do() {
        let b = "http://h:9000/bucket";
        assert_eq!(
            kind(Method::GET, &format!("{b}?list-type=2&prefix=a%2F")),
            Kind::List
        );
        assert_eq!(
            kind(Method::GET, &format!("{b}?versions&prefix=a")),
            Kind::List
        );
        assert_eq!(kind(Method::GET, &format!("{b}/k?retention")), Kind::Get);
        assert_eq!(kind(Method::GET, &format!("{b}/k")), Kind::Get);
        assert_eq!(kind(Method::HEAD, &format!("{b}/k")), Kind::Head);
        assert_eq!(
            kind(Method::PUT, &format!("{b}/k?partNumber=1&uploadId=x")),
            Kind::Put
        );
        assert_eq!(kind(Method::POST, &format!("{b}/k?uploads")), Kind::Put);
        assert_eq!(
            kind(Method::POST, "http://a.blob/c?restype=container&comp=batch"),
            Kind::Delete
        );
        assert_eq!(kind(Method::POST, &format!("{b}?delete")), Kind::Delete);
        assert_eq!(
            kind(Method::DELETE, &format!("{b}/k?uploadId=x")),
            Kind::Delete
        );
        assert_eq!(
            kind(Method::GET, "http://a.blob/c?restype=container&comp=list"),
            Kind::List
        );
        assert_eq!(
            kind(Method::GET, "http://g/storage/v1/b/bkt/o?prefix=a"),
            Kind::List
        );
        assert_eq!(kind(Method::GET, "http://g/storage/v1/b/bkt"), Kind::Get);
    }

    #[test]
    fn differences_subtract_kind_by_kind() {
        let mut a = Usage::default();
        a.set(
            Kind::Put,
            KindUsage {
                requests: 5,
                bytes_sent: 100,
                bytes_received: 0,
            },
        );
        let mut b = a;
        b.set(
            Kind::Put,
            KindUsage {
                requests: 7,
                bytes_sent: 130,
                bytes_received: 4,
            },
        );
        let d = b.since(&a);
        assert_eq!(d.of(Kind::Put).requests, 2);
        assert_eq!(d.of(Kind::Put).bytes_sent, 30);
        assert_eq!(d.kinds().count(), 1);
        assert!(Usage::default().is_empty());
    }
}
