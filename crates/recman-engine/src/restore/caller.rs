//! The transport a restore through an agent speaks: one request and its reply. Its own module
//! because both the write pipeline (`dest_pipe.rs`) and the remote destination
//! (`dest_remote.rs`, which re-exports it for the binary to implement) call it.

use crate::error::EngineError;
use bytes::Bytes;
use serde_json::Value;

/// One request and its reply, as the agent's transport carries them.
pub trait Caller: Send + Sync {
    /// The agent's address, for messages.
    fn name(&self) -> String;
    fn call(&self, method: &str, meta: Value, body: &[u8])
    -> Result<(Value, Vec<u8>), EngineError>;
    /// [`Caller::call`] with a body the transport may keep without copying it.
    fn call_bytes(
        &self,
        method: &str,
        meta: Value,
        body: Bytes,
    ) -> Result<(Value, Vec<u8>), EngineError> {
        self.call(method, meta, &body)
    }
}
