//! The external media-manager plugin driver: recman's answer to Oracle's SBT library.
//!
//! A plugin is any program that speaks recman-media-plugin/1 (docs/plugin-protocol.md) on
//! its stdin and stdout. Running it as a child process rather than loading a library keeps a
//! vendor's crash out of recman and lets plugins be written in any language
//! (examples/plugins/recman_dir_plugin.py).
//!
//! Every stream gets a process of its own, so channel threads never wait for each other's
//! round trips; finished streams hand their process to a small idle pool, because starting a
//! plugin (an interpreter, a login to a tape server) can cost more than a small object.
//! Session-level calls (stat, list, remove) share one process behind a mutex.

// MediaError is the crate-wide error (error.rs); whether to box it is decided there, for
// every driver at once, not in one of them.

mod stream;
mod wire;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::{ErrorClass, MediaError};
use crate::media::{Capabilities, Media, MediaReader, MediaWriter, ObjectInfo, check_name};
use stream::{PluginReader, PluginWriter};
use wire::{HINT_STDERR, Hello, Launch, Plugin};

pub use wire::{MAX_FRAME, PROTOCOL};

/// Idle processes kept for reuse; more than a typical channel count would only hold memory.
const MAX_IDLE: usize = 8;

/// Tries of an idempotent request that keeps failing transiently (first try included).
const TRIES: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(20);

/// A media manager reached through a plugin process.
pub struct PluginMedia {
    shared: Arc<Shared>,
}

struct Shared {
    launch: Launch,
    hello: Hello,
    session: Mutex<Option<Plugin>>,
    idle: Mutex<Vec<Plugin>>,
}

impl PluginMedia {
    /// Starts the plugin `argv` (program and arguments) and completes the handshake, keeping
    /// that process for session-level calls.
    pub fn new(argv: Vec<String>) -> Result<PluginMedia, MediaError> {
        PluginMedia::with_env(argv, Vec::new())
    }

    /// Like [`PluginMedia::new`], with variables added to the plugin's environment (the
    /// equivalent of RMAN's `PARMS 'ENV=(...)'`); they never appear in messages.
    pub fn with_env(
        argv: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Result<PluginMedia, MediaError> {
        // Only the program: arguments may carry credentials.
        let program = argv.first().map(String::as_str).unwrap_or("");
        let launch = Launch {
            device: format!("plugin {program}"),
            argv,
            env,
        };
        let (plugin, hello) = Plugin::start(&launch)?;
        Ok(PluginMedia {
            shared: Arc::new(Shared {
                launch,
                hello,
                session: Mutex::new(Some(plugin)),
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The name the plugin gave in the handshake.
    pub fn plugin_name(&self) -> &str {
        &self.shared.hello.name
    }

    /// The version the plugin gave in the handshake.
    pub fn plugin_version(&self) -> &str {
        &self.shared.hello.version
    }

    /// The largest payload of one frame, as agreed in the handshake.
    pub fn max_frame(&self) -> usize {
        self.shared.hello.max_frame
    }
}

impl fmt::Debug for PluginMedia {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginMedia")
            .field("device", &self.shared.launch.device)
            .field("plugin", &self.shared.hello.name)
            .field("version", &self.shared.hello.version)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves a plugin that is at worst broken, and broken
    // plugins are detected and replaced, so the poison carries no information.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn device(&self) -> &str {
        &self.launch.device
    }

    /// A process for a new stream: an idle one, or a fresh one.
    fn take(&self) -> Result<Plugin, MediaError> {
        if let Some(p) = lock(&self.idle).pop() {
            return Ok(p);
        }
        Plugin::start(&self.launch).map(|(p, _)| p)
    }

    /// Takes back a stream's process; broken ones and those over the pool size are reaped
    /// (outside the lock, since reaping waits for the process).
    fn give_back(&self, p: Plugin) {
        if p.is_broken() {
            return;
        }
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(p);
        }
    }

    /// Runs one request on the session process, replacing it if it died.
    fn session<T>(
        &self,
        f: impl FnOnce(&mut Plugin) -> Result<T, MediaError>,
    ) -> Result<T, MediaError> {
        let mut slot = lock(&self.session);
        let plugin = match slot.as_mut() {
            Some(p) => p,
            None => slot.insert(Plugin::start(&self.launch)?.0),
        };
        let out = f(plugin);
        if plugin.is_broken() {
            *slot = None;
        }
        out
    }
}

/// Runs an idempotent request, retrying transient failures with exponential backoff.
fn retry<T>(mut attempt: impl FnMut() -> Result<T, MediaError>) -> Result<T, MediaError> {
    let mut pause = FIRST_BACKOFF;
    for n in 1.. {
        match attempt() {
            Err(e) if e.class == ErrorClass::Transient && n < TRIES => {
                std::thread::sleep(pause);
                pause *= 2;
            }
            Err(e) if e.class == ErrorClass::Transient => {
                return Err(e.with_note(&format!("after {TRIES} tries")));
            }
            other => return other,
        }
    }
    unreachable!("the loop returns by its last try")
}

/// The error for a successful reply that lacks a field the protocol requires.
fn missing(device: &str, op: &str, object: &str, field: &str) -> MediaError {
    MediaError::new(
        ErrorClass::Permanent,
        device,
        object,
        op,
        format!("the plugin's reply to `{op}` lacks a valid `{field}`"),
    )
    .with_hint(HINT_STDERR)
}

impl Media for PluginMedia {
    fn describe(&self) -> String {
        self.shared.launch.device.clone()
    }

    fn capabilities(&self) -> Capabilities {
        self.shared.hello.capabilities
    }

    fn create(&self, name: &str) -> Result<Box<dyn MediaWriter>, MediaError> {
        let s = &self.shared;
        check_name(s.device(), name)?;
        let mut p = s.take()?;
        let handle = p
            .call("open_write", name, json!({"name": name}), &[])
            .and_then(|r| {
                r.u64("handle")
                    .ok_or_else(|| missing(s.device(), "open_write", name, "handle"))
            });
        match handle {
            Ok(h) => Ok(Box::new(PluginWriter::new(Arc::clone(s), p, h, name))),
            Err(e) => {
                s.give_back(p);
                Err(e)
            }
        }
    }

    fn open(&self, name: &str) -> Result<Box<dyn MediaReader>, MediaError> {
        let s = &self.shared;
        check_name(s.device(), name)?;
        let mut p = s.take()?;
        let opened = retry(|| {
            let r = p.call("open_read", name, json!({"name": name}), &[])?;
            let handle = r
                .u64("handle")
                .ok_or_else(|| missing(s.device(), "open_read", name, "handle"))?;
            let size = r
                .u64("size")
                .ok_or_else(|| missing(s.device(), "open_read", name, "size"))?;
            Ok((handle, size))
        });
        match opened {
            Ok((h, size)) => Ok(Box::new(PluginReader::new(Arc::clone(s), p, h, size, name))),
            Err(e) => {
                s.give_back(p);
                Err(e)
            }
        }
    }

    fn stat(&self, name: &str) -> Result<Option<u64>, MediaError> {
        let s = &self.shared;
        check_name(s.device(), name)?;
        retry(|| {
            s.session(|p| {
                let r = p.call("info", name, json!({"name": name}), &[])?;
                match r.header.get("size") {
                    Some(Value::Null) | None => Ok(None),
                    Some(v) => v
                        .as_u64()
                        .map(Some)
                        .ok_or_else(|| missing(s.device(), "info", name, "size")),
                }
            })
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, MediaError> {
        let s = &self.shared;
        if !s.hello.capabilities.list {
            return Err(MediaError::new(
                ErrorClass::Permanent,
                s.device(),
                prefix,
                "list",
                "the plugin cannot list objects".to_string(),
            )
            .with_hint("use a catalog, or a plugin that announces the `list` capability"));
        }
        let mut out: Vec<ObjectInfo> = Vec::new();
        loop {
            let after = out.last().map(|o| o.name.clone());
            let (page, truncated) = retry(|| {
                s.session(|p| {
                    let req = json!({"prefix": prefix, "start_after": after});
                    let r = p.call("list", prefix, req, &[])?;
                    let bad = || missing(s.device(), "list", prefix, "objects");
                    let objects = r
                        .header
                        .get("objects")
                        .and_then(Value::as_array)
                        .ok_or_else(bad)?;
                    let page = objects
                        .iter()
                        .map(|o| {
                            let name = o.get("name").and_then(Value::as_str).ok_or_else(bad)?;
                            let size = o.get("size").and_then(Value::as_u64).ok_or_else(bad)?;
                            Ok(ObjectInfo {
                                name: name.to_string(),
                                size,
                            })
                        })
                        .collect::<Result<Vec<_>, MediaError>>()?;
                    let truncated = r
                        .header
                        .get("truncated")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    Ok((page, truncated))
                })
            })?;
            // A truncated empty page would never advance; treat it as the end.
            let more = truncated && !page.is_empty();
            out.extend(page);
            if !more {
                break;
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }

    fn remove(&self, name: &str) -> Result<bool, MediaError> {
        let s = &self.shared;
        check_name(s.device(), name)?;
        retry(|| {
            s.session(|p| {
                let r = p.call("remove", name, json!({"name": name}), &[])?;
                r.header
                    .get("removed")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| missing(s.device(), "remove", name, "removed"))
            })
        })
    }
}
