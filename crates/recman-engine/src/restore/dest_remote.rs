//! A restore destination on another host: every [`Destination`] operation is one request to
//! the database host's agent (`dest_serve.rs` runs it there); a file's writes are pipelined,
//! many in flight at once (`dest_pipe.rs`). The transport is behind [`Caller`], so the engine
//! does not depend on it; the binary plugs in its client.

pub use super::caller::Caller;
use super::dest::{DestFile, Destination, DirState, MetaChange};
use super::dest_pipe::{FileWrites, Pipe};
use crate::aligned::AlignedBuf;
use crate::error::EngineError;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Operations per batched call (`*-all` methods): small enough for the call's meta.
const BATCH: usize = 512;

/// The database host's file system, through its agent.
pub struct RemoteDest {
    caller: Arc<dyn Caller>,
    pipe: Arc<Pipe>,
}

impl RemoteDest {
    pub fn new(caller: Arc<dyn Caller>) -> RemoteDest {
        RemoteDest {
            pipe: Arc::new(Pipe::new(Arc::clone(&caller))),
            caller,
        }
    }

    fn call(
        &self,
        method: &str,
        meta: Value,
        body: &[u8],
    ) -> Result<(Value, Vec<u8>), EngineError> {
        self.caller.call(method, meta, body)
    }

    fn path_call(&self, method: &str, path: &Path, mut extra: Value) -> Result<Value, EngineError> {
        extra["path"] = json!(path.display().to_string());
        self.call(method, extra, &[]).map(|(v, _)| v)
    }
}

fn bad_reply(method: &str) -> EngineError {
    EngineError::Internal(format!(
        "the agent's reply to {method} is not understood; hint: use the same recman version on the backup host and the database host"
    ))
}

impl Destination for RemoteDest {
    fn place(&self) -> String {
        format!(" on the database host (agent {})", self.caller.name())
    }

    fn dir_state(&self, dir: &Path, marker: &str) -> Result<DirState, EngineError> {
        let v = self.path_call("restore-dir-state", dir, json!({"marker": marker}))?;
        serde_json::from_value(v["state"].clone()).map_err(|_| bad_reply("restore-dir-state"))
    }

    fn empty_dir(&self, dir: &Path) -> Result<(), EngineError> {
        self.path_call("restore-empty-dir", dir, json!({}))
            .map(drop)
    }

    fn create_dir_all(&self, dir: &Path, mode: Option<u32>) -> Result<(), EngineError> {
        self.path_call("restore-create-dir-all", dir, json!({"mode": mode}))
            .map(drop)
    }

    fn write_whole(&self, path: &Path, data: &[u8]) -> Result<(), EngineError> {
        let meta = json!({"path": path.display().to_string()});
        self.call("restore-write-whole", meta, data).map(drop)
    }

    fn read_whole(&self, path: &Path) -> Result<Option<Vec<u8>>, EngineError> {
        let meta = json!({"path": path.display().to_string()});
        let (v, body) = self.call("restore-read-whole", meta, &[])?;
        Ok(v["exists"].as_bool().unwrap_or(false).then_some(body))
    }

    fn remove_file(&self, path: &Path) -> Result<(), EngineError> {
        self.path_call("restore-remove-file", path, json!({}))
            .map(drop)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn DestFile>, EngineError> {
        // The agent opens the file at each write: a request holds no state on the far side,
        // so a retried or reordered request cannot write into the wrong file.
        Ok(Arc::new(RemoteFile {
            pipe: Arc::clone(&self.pipe),
            writes: Arc::default(),
            path: path.to_path_buf(),
        }))
    }

    fn set_len(&self, path: &Path, len: u64) -> Result<(), EngineError> {
        self.path_call("restore-set-len", path, json!({"len": len}))
            .map(drop)
    }

    fn symlink(&self, target: &Path, path: &Path) -> Result<(), EngineError> {
        let extra = json!({"target": target.display().to_string()});
        self.path_call("restore-symlink", path, extra).map(drop)
    }

    fn set_meta(
        &self,
        path: &Path,
        owner: Option<(u32, u32)>,
        mode: Option<u32>,
        link: bool,
    ) -> Result<(), EngineError> {
        let extra = json!({
            "uid": owner.map(|o| o.0),
            "gid": owner.map(|o| o.1),
            "mode": mode,
            "link": link,
        });
        self.path_call("restore-set-meta", path, extra).map(drop)
    }

    fn flush(&self) -> Result<(), EngineError> {
        self.pipe.flush()
    }

    fn set_len_all(&self, files: &[(PathBuf, u64)]) -> Result<(), EngineError> {
        // One call per batch: a call per file costs a round trip each, which a restore of
        // thousands of small files would wait out one by one.
        for part in files.chunks(BATCH) {
            let ops: Vec<Value> = part
                .iter()
                .map(|(p, len)| json!({"path": p.display().to_string(), "len": len}))
                .collect();
            self.call("restore-set-len-all", json!({ "ops": ops }), &[])?;
        }
        Ok(())
    }

    fn set_meta_all(&self, items: &[MetaChange]) -> Result<(), EngineError> {
        for part in items.chunks(BATCH) {
            let ops: Vec<Value> = part
                .iter()
                .map(|m| {
                    json!({
                        "path": m.path.display().to_string(),
                        "uid": m.owner.map(|o| o.0),
                        "gid": m.owner.map(|o| o.1),
                        "mode": m.mode,
                        "link": m.link,
                    })
                })
                .collect();
            self.call("restore-set-meta-all", json!({ "ops": ops }), &[])?;
        }
        Ok(())
    }

    fn owner_of(&self, path: &Path) -> Option<(u32, u32)> {
        let v = self.path_call("restore-owner-of", path, json!({})).ok()?;
        Some((v["uid"].as_u64()? as u32, v["gid"].as_u64()? as u32))
    }

    fn may_chown(&self) -> bool {
        self.call("restore-may-chown", json!({}), &[])
            .ok()
            .and_then(|(v, _)| v["yes"].as_bool())
            .unwrap_or(false)
    }
}

struct RemoteFile {
    pipe: Arc<Pipe>,
    writes: Arc<FileWrites>,
    path: PathBuf,
}

impl DestFile for RemoteFile {
    /// Hands the write to the pipe and returns: [`Destination::flush`] waits for it.
    fn write_at(
        &self,
        data: &[u8],
        offset: u64,
        _: &mut Option<AlignedBuf>,
    ) -> Result<(), EngineError> {
        self.pipe.write(&self.writes, &self.path, offset, data)
    }

    /// Notes the file for the destination's flush, which fsyncs it after its writes.
    fn sync(&self) -> Result<(), EngineError> {
        self.pipe.sync_later(&self.writes, &self.path)
    }
}

impl Drop for RemoteFile {
    fn drop(&mut self) {
        // A file spread over several pieces is dropped at each piece's end and opened again
        // by the next: what it gathered is written (a failure reaches the flush). A failing
        // restore drops its files unsynced: their writes still end before it reports.
        let _ = self.pipe.hand_over_rest(&self.writes, &self.path);
        let _ = self.writes.settle();
    }
}
