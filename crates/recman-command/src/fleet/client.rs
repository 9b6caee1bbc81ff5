//! The client side of the fleet's calls: WAL through the repository host's server, and a
//! restore's connection to a database host's agent.

use crate::fleet::through::through_agent;
use bytes::Bytes;
use recman_engine::Through;
use recman_remote::{CallOptions, Client, RemoteError, TlsFiles};
use serde_json::json;

/// archive-push of WAL file `name` (its bytes `data`) through the repository host at
/// `url`, for database `db` (None: the one this host's certificate may archive for). True:
/// it was already archived. The segment is durably archived there when this returns.
pub fn push_wal(
    url: &str,
    tls: &TlsFiles,
    db: Option<&str>,
    name: &str,
    data: Vec<u8>,
) -> Result<bool, RemoteError> {
    let client = Client::connect(url, tls)?;
    // Pushing the same content again is answered "already archived": safe to retry.
    let (meta, _) = client.call_whole(
        "archive-push",
        &json!({"db": db, "name": name}),
        Bytes::from(data),
        CallOptions::idempotent(),
    )?;
    Ok(meta["already"].as_bool() == Some(true))
}

/// archive-get of WAL file `name` through the repository host at `url`; None: it is not
/// archived there.
pub fn get_wal(
    url: &str,
    tls: &TlsFiles,
    db: Option<&str>,
    name: &str,
) -> Result<Option<Vec<u8>>, RemoteError> {
    let client = Client::connect(url, tls)?;
    let (meta, data) = client.call_whole(
        "archive-get",
        &json!({"db": db, "name": name}),
        Bytes::new(),
        CallOptions::idempotent(),
    )?;
    Ok((meta["found"].as_bool() == Some(true)).then_some(data))
}

/// A restore of database `db` written through the agent at `url`; its restore_command is the
/// one the agent gives (archive-get through the repository host), else None: the usual one.
pub fn restore_through_agent(url: &str, tls: &TlsFiles, db: &str) -> Result<Through, RemoteError> {
    let client = Client::connect(url, tls)?;
    let meta = client.call_meta(
        "restore-command",
        &json!({"db": db}),
        CallOptions::idempotent(),
    )?;
    let restore_command = meta["command"].as_str().map(str::to_string);
    Ok(through_agent(client, restore_command))
}
