//! A restore written through a database host's agent: the agent's transport for the
//! engine's remote restore destination, and the agent a database was registered with.

use bytes::Bytes;
use recman_catalog::CatalogError;
use recman_engine::restore_dest_remote::{Caller, RemoteDest};
use recman_engine::{Context, EngineError, Through};
use recman_remote::{CallOptions, Client, RemoteError};
use serde_json::Value;
use std::sync::Arc;

/// The agent's transport for the engine's remote restore destination.
struct AgentCaller {
    client: Client,
    /// The first failure that outlasted the transport's retries: the agent is gone, and each
    /// later call (the other channels', the clean-up's) fails at once with it instead of
    /// retrying again.
    gone: std::sync::Mutex<Option<String>>,
}

fn to_engine(e: RemoteError) -> EngineError {
    EngineError::Failed {
        kind: e.kind(),
        message: e.to_string(),
    }
}

impl Caller for AgentCaller {
    fn name(&self) -> String {
        self.client.url().to_string()
    }

    fn call(
        &self,
        method: &str,
        meta: Value,
        body: &[u8],
    ) -> Result<(Value, Vec<u8>), EngineError> {
        self.call_bytes(method, meta, Bytes::copy_from_slice(body))
    }

    fn call_bytes(
        &self,
        method: &str,
        meta: Value,
        body: Bytes,
    ) -> Result<(Value, Vec<u8>), EngineError> {
        // Every restore operation but these lands the same when sent twice.
        let opts = if matches!(method, "restore-symlink" | "restore-remove-file") {
            CallOptions::default()
        } else {
            CallOptions::idempotent()
        };
        if let Some(why) = self.gone.lock().expect("not poisoned").clone() {
            return Err(EngineError::Failed {
                kind: recman_error::ErrorKind::Transient,
                message: why,
            });
        }
        self.client
            .call_whole(method, &meta, body, opts)
            .map_err(|e| {
                if matches!(e, RemoteError::Network(_) | RemoteError::Deadline(_)) {
                    *self.gone.lock().expect("not poisoned") = Some(e.to_string());
                }
                to_engine(e)
            })
    }
}

/// A restore written through the agent `client` is connected to; `restore_command`: the one
/// the agent gives (archive-get through the repository host), else None for the usual one.
pub(crate) fn through_agent(client: Client, restore_command: Option<String>) -> Through {
    Through {
        dest: Arc::new(RemoteDest::new(Arc::new(AgentCaller {
            client,
            gone: std::sync::Mutex::new(None),
        }))),
        restore_command,
    }
}

/// The agent `ctx`'s database was registered with (`register database --agent`), if any.
pub fn db_agent(ctx: &Context) -> Result<Option<String>, CatalogError> {
    ctx.repo.catalog().db_agent(ctx.db.id)
}
