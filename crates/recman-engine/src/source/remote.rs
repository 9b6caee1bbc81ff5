//! The backup host's side of a database-host agent: a [`DataSource`] whose every read is a
//! call to `recman server --pgdata` over the fleet transport (the methods are listed on
//! [`super::agent`]). Reads are idempotent calls: a dropped connection is dialled again and
//! the read sent again, within the transport's retry window.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use recman_format::manifest::ManifestEntry;
use recman_remote::{CallOptions, Client, RemoteError, TlsFiles};
use serde_json::json;

use super::{DataSource, ReadAt, SourceFile};
use crate::error::EngineError;
use crate::scan::{Scan, ScannedFile};

/// A single read waits at most this long for its bytes: far more than a healthy agent needs
/// for a buffer, short enough that a hung one fails the backup instead of stalling it.
const READ_DEADLINE: Duration = Duration::from_secs(120);

impl From<RemoteError> for EngineError {
    fn from(e: RemoteError) -> EngineError {
        EngineError::Failed {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// A cluster's data directory on another host, read through its agent.
pub struct RemoteSource {
    client: Arc<Client>,
    /// The agent's data directory, as the agent reports it (for messages).
    remote_dir: String,
}

impl RemoteSource {
    /// Connects to the agent at `url` and asks where its data directory is.
    pub fn connect(url: &str, tls: &TlsFiles) -> Result<RemoteSource, EngineError> {
        let client = Arc::new(Client::connect(url, tls)?);
        let meta = client.call_meta("hello", &json!({}), CallOptions::idempotent())?;
        let remote_dir = meta["pgdata"].as_str().unwrap_or("?").to_string();
        Ok(RemoteSource { client, remote_dir })
    }

    pub fn url(&self) -> &str {
        self.client.url()
    }

    /// The connection to the agent, for the calls that are not file reads.
    pub fn client(&self) -> Arc<Client> {
        self.client.clone()
    }

    fn rel_of<'p>(&self, path: &'p Path) -> io::Result<&'p str> {
        let s = path.to_str().unwrap_or("");
        s.strip_prefix(self.client.url())
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| {
                io::Error::other(format!(
                    "{} is not a file of the agent at {}",
                    path.display(),
                    self.client.url()
                ))
            })
    }
}

fn to_io(e: RemoteError) -> io::Error {
    let kind = match e.kind() {
        recman_error::ErrorKind::NotFound => io::ErrorKind::NotFound,
        recman_error::ErrorKind::Transient => io::ErrorKind::ConnectionAborted,
        recman_error::ErrorKind::Corrupt => io::ErrorKind::InvalidData,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}

/// A file on the agent's host; each read is one call.
struct RemoteFile {
    client: Arc<Client>,
    rel: String,
}

impl ReadAt for RemoteFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let meta = json!({"path": self.rel, "offset": off, "len": buf.len()});
        let opts = CallOptions::idempotent().with_deadline(READ_DEADLINE);
        self.client
            .call_with("read", &meta, Bytes::new(), opts, |r| {
                let mut n = 0;
                while let Some(d) = r.next_chunk()? {
                    let take = d.len().min(buf.len() - n);
                    buf[n..n + take].copy_from_slice(&d[..take]);
                    n += take;
                }
                Ok(n)
            })
            .map_err(to_io)
    }
}

#[derive(serde::Deserialize)]
struct WireFile {
    rel: String,
    size: u64,
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: i64,
}

#[derive(serde::Deserialize)]
struct WireScan {
    entries: Vec<ManifestEntry>,
    files: Vec<WireFile>,
}

impl DataSource for RemoteSource {
    fn describe(&self) -> String {
        format!("{} (data directory {})", self.client.url(), self.remote_dir)
    }

    fn path_of(&self, rel: &str) -> PathBuf {
        PathBuf::from(format!("{}/{rel}", self.client.url()))
    }

    fn scan(&self) -> Result<Scan, EngineError> {
        let (_, body) =
            self.client
                .call_whole("scan", &json!({}), Bytes::new(), CallOptions::idempotent())?;
        let w: WireScan = serde_json::from_slice(&body).map_err(|e| {
            EngineError::Failed {
                kind: recman_error::ErrorKind::InvalidInput,
                message: format!(
                    "the agent at {} sent a file list recman cannot read: {e}; hint: run the same recman version on both hosts",
                    self.client.url()
                ),
            }
        })?;
        Ok(Scan {
            entries: w.entries,
            files: w
                .files
                .into_iter()
                .map(|f| ScannedFile {
                    relfile: recman_page::classify(&f.rel),
                    rel: f.rel,
                    size: f.size,
                    mode: f.mode,
                    uid: f.uid,
                    gid: f.gid,
                    mtime: f.mtime,
                })
                .collect(),
        })
    }

    fn facts(&self) -> Result<recman_pg::DataDirFacts, EngineError> {
        let m = self
            .client
            .call_meta("facts", &json!({}), CallOptions::idempotent())?;
        Ok(recman_pg::DataDirFacts {
            pgdata: PathBuf::from(m["pgdata"].as_str().unwrap_or_default()),
            major: m["major"].as_u64().unwrap_or(0) as u32,
            system_identifier: m["system_identifier"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
            checksums_enabled: m["checksums_enabled"].as_bool(),
            wal_segment_size: m["wal_segment_size"].as_u64(),
            state: m["state"].as_str().map(str::to_string),
            checkpoint_redo: m["checkpoint_redo"].as_u64().map(recman_pg::Lsn),
        })
    }

    fn canonical(&self) -> Option<PathBuf> {
        let m = self
            .client
            .call_meta("facts", &json!({}), CallOptions::idempotent())
            .ok()?;
        m["canonical"].as_str().map(PathBuf::from)
    }

    fn open(
        &self,
        path: &Path,
        _reads: crate::read_mode::ReadMode,
        _range: (u64, u64),
    ) -> io::Result<(SourceFile, bool)> {
        let rel = self.rel_of(path)?.to_string();
        let m = self
            .client
            .call_meta("stat", &json!({"path": rel}), CallOptions::idempotent())
            .map_err(to_io)?;
        let size = m["size"].as_u64().unwrap_or(0);
        let f = RemoteFile {
            client: self.client.clone(),
            rel,
        };
        Ok((SourceFile::Remote(Arc::new(f), size), false))
    }

    fn read_small(&self, rel: &str) -> Result<Option<Vec<u8>>, EngineError> {
        match self.client.call_whole(
            "read-file",
            &json!({"path": rel}),
            Bytes::new(),
            CallOptions::idempotent(),
        ) {
            Ok((_, b)) => Ok(Some(b)),
            Err(e) if e.kind() == recman_error::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn local_root(&self) -> Option<&Path> {
        None
    }

    fn agent_url(&self) -> Option<String> {
        Some(self.client.url().to_string())
    }

    fn agent_session(&self) -> Option<Result<recman_pg::Session, EngineError>> {
        Some(super::remote_pg::open(self.client.clone()))
    }
}
