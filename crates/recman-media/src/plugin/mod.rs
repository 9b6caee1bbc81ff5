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

mod pool;
mod stream;
mod wire;

use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::error::{ErrorClass, MediaError};
use crate::media::{Capabilities, Media, MediaReader, MediaWriter, ObjectInfo, check_name};
use pool::{Shared, missing, retry};
use stream::{PluginReader, PluginWriter};
use wire::{Launch, Plugin};

pub use wire::{MAX_FRAME, PROTOCOL};

/// A media manager reached through a plugin process.
pub struct PluginMedia {
    shared: Arc<Shared>,
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
