//! The wire side of recman-media-plugin/1: frames, one plugin process and its handshake.
//! docs/plugin-protocol.md is the specification; this file follows it.

use std::io::{self, BufReader, BufWriter};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use recman_wire::frame::{FrameError, read_frame, reply_header, write_frame};
use serde_json::{Map, Value, json};

use crate::error::{ErrorClass, MediaError};
use crate::media::Capabilities;

/// The protocol this driver speaks; a plugin announcing anything else is refused.
pub const PROTOCOL: &str = "recman-media-plugin/1";

/// The largest payload recman sends or accepts in one frame (a plugin may ask for less).
pub const MAX_FRAME: usize = 4 << 20;

/// How long a plugin gets to exit after `bye` before it is killed: long enough to finish an
/// fsync, short enough not to hang a backup on a wedged plugin.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// A plugin that broke the protocol is probably not listening any more.
const BROKEN_REAP_TIMEOUT: Duration = Duration::from_millis(300);

pub const HINT_STDERR: &str =
    "look at the plugin's stderr (passed through to recman's) for its own messages";
const HINT_STDOUT: &str = "a plugin must write only protocol frames to stdout and its logs to stderr; \
     look at the plugin's stderr for its own messages";

/// What the plugin said about itself in the handshake.
#[derive(Clone, Debug)]
pub struct Hello {
    pub name: String,
    pub version: String,
    /// The payload limit both sides keep: the smaller of recman's and the plugin's.
    pub max_frame: usize,
    pub capabilities: Capabilities,
}

/// How to start the plugin.
#[derive(Clone)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// "plugin <program>", for messages.
    pub device: String,
}

/// A successful reply: its header (with `ok` removed) and payload.
pub struct Reply {
    pub header: Map<String, Value>,
    pub payload: Vec<u8>,
}

impl Reply {
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.header.get(key).and_then(Value::as_u64)
    }

    pub fn u32(&self, key: &str) -> Option<u32> {
        self.u64(key).and_then(|v| u32::try_from(v).ok())
    }
}

/// One running plugin process with its two pipes. Dropping it reaps the process.
pub struct Plugin {
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
    stdout: BufReader<ChildStdout>,
    device: String,
    max_frame: usize,
    /// Set once the process exited or spoke garbage: it is then never used or pooled again.
    broken: bool,
}

impl Plugin {
    /// Starts the plugin and completes the handshake.
    pub fn start(launch: &Launch) -> Result<(Plugin, Hello), MediaError> {
        let device = &launch.device;
        let Some((program, args)) = launch.argv.split_first() else {
            return Err(MediaError::new(
                ErrorClass::Permanent,
                device,
                "",
                "start",
                "the plugin command is empty".to_string(),
            )
            .with_hint("give the plugin program and its arguments"));
        };
        let mut child = Command::new(program)
            .args(args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                MediaError::new(
                    ErrorClass::Permanent,
                    device,
                    "",
                    "start",
                    format!(
                        "cannot start plugin program {program:?}: {}",
                        e.to_string().to_lowercase()
                    ),
                )
                .with_hint(
                    "check the plugin command: its first word must be an executable file or a program on PATH",
                )
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both pipes were requested above")
        };
        let mut plugin = Plugin {
            child,
            stdin: Some(BufWriter::with_capacity(64 * 1024, stdin)),
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            device: device.clone(),
            max_frame: MAX_FRAME,
            broken: false,
        };
        let hello = plugin.hello()?;
        plugin.max_frame = hello.max_frame;
        Ok((plugin, hello))
    }

    fn hello(&mut self) -> Result<Hello, MediaError> {
        let refuse = |this: &mut Plugin, message: String| {
            this.broken = true;
            MediaError::new(ErrorClass::Permanent, &this.device, "", "hello", message)
                .with_hint(&format!("use a plugin that speaks {PROTOCOL}"))
        };
        let req = json!({"protocol": PROTOCOL, "max_frame": MAX_FRAME});
        let reply = match self.call("hello", "", req, &[]) {
            Ok(r) => r,
            Err(e) if self.broken => return Err(e),
            Err(e) => {
                return Err(refuse(
                    self,
                    format!("the plugin refused the handshake: {}", e.message()),
                ));
            }
        };
        let theirs = reply
            .header
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("");
        if theirs != PROTOCOL {
            return Err(refuse(
                self,
                format!("the plugin speaks protocol {theirs:?}, recman speaks {PROTOCOL:?}"),
            ));
        }
        let text = |k: &str| {
            reply
                .header
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string()
        };
        let caps = reply.header.get("capabilities").and_then(Value::as_object);
        let flag = |k: &str| {
            caps.and_then(|c| c.get(k))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let block_size = caps
            .and_then(|c| c.get("block_size"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let max_frame = match reply.u64("max_frame") {
            None => MAX_FRAME,
            Some(n) if n > 0 => MAX_FRAME.min(usize::try_from(n).unwrap_or(MAX_FRAME)),
            Some(_) => {
                return Err(refuse(
                    self,
                    "the plugin announced a max_frame of 0".to_string(),
                ));
            }
        };
        Ok(Hello {
            name: text("name"),
            version: text("version"),
            max_frame,
            capabilities: Capabilities {
                atomic_commit: flag("atomic_commit"),
                ranged_read: flag("ranged_read"),
                list: flag("list"),
                block_size: usize::try_from(block_size).unwrap_or(0),
            },
        })
    }

    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Sends one request and waits for its reply. A reply with `ok: false` becomes an error
    /// of the plugin's class; a dead or babbling plugin becomes a permanent error and marks
    /// this process broken.
    pub fn call(
        &mut self,
        op: &str,
        object: &str,
        mut header: Value,
        payload: &[u8],
    ) -> Result<Reply, MediaError> {
        if self.broken {
            return Err(self.lost(
                op,
                object,
                "the plugin process failed earlier and is no longer used".into(),
            ));
        }
        header["op"] = Value::from(op);
        let bytes = serde_json::to_vec(&header).expect("a JSON value always serializes");
        let sent = match self.stdin.as_mut() {
            Some(w) => write_frame(w, &bytes, payload),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        };
        if let Err(e) = sent {
            return Err(self.died(op, object, &e));
        }
        let (head, payload) = match read_frame(&mut self.stdout, self.max_frame) {
            Ok(f) => f,
            Err(FrameError::Io(e)) => return Err(self.died(op, object, &e)),
            Err(FrameError::Malformed(m)) => {
                return Err(self
                    .lost(
                        op,
                        object,
                        format!("the plugin sent a malformed reply to `{op}`: {m}"),
                    )
                    .with_hint(HINT_STDOUT));
            }
        };
        let mut header = match reply_header(&head) {
            Some(m) => m,
            None => {
                let shown: String = String::from_utf8_lossy(&head).chars().take(80).collect();
                return Err(self
                    .lost(
                        op,
                        object,
                        format!(
                            "the plugin's reply to `{op}` is not a JSON header with `ok`: {shown:?}"
                        ),
                    )
                    .with_hint(HINT_STDOUT));
            }
        };
        if header.remove("ok") == Some(Value::Bool(true)) {
            return Ok(Reply { header, payload });
        }
        let message = header
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message")
            .to_string();
        let (class, hint) = match header.get("class").and_then(Value::as_str) {
            Some("not_found") => (
                ErrorClass::NotFound,
                "run `recman crosscheck` to mark missing pieces, or restore from another copy",
            ),
            Some("transient") => (
                ErrorClass::Transient,
                "the media manager reported a temporary problem; run the command again later",
            ),
            _ => (ErrorClass::Permanent, HINT_STDERR),
        };
        Err(MediaError::new(class, &self.device, object, op, message).with_hint(hint))
    }

    /// An error that leaves the conversation in an unknown state: the process is retired.
    fn lost(&mut self, op: &str, object: &str, message: String) -> MediaError {
        self.broken = true;
        MediaError::new(ErrorClass::Permanent, &self.device, object, op, message)
            .with_hint(HINT_STDERR)
    }

    fn died(&mut self, op: &str, object: &str, e: &io::Error) -> MediaError {
        // The pipe closes a moment before the process can be waited for.
        let status = wait_timeout(&mut self.child, Duration::from_millis(200))
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let what = match e.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::BrokenPipe => {
                "exited or closed its pipes".to_string()
            }
            _ => format!("could not be reached: {}", e.to_string().to_lowercase()),
        };
        self.lost(
            op,
            object,
            format!("the plugin {what} during request `{op}`{status}"),
        )
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        if !self.broken
            && let Some(w) = self.stdin.as_mut()
        {
            let _ = write_frame(w, br#"{"op":"bye"}"#, &[]);
        }
        // End of input tells even a plugin that ignores `bye` to finish.
        self.stdin = None;
        let limit = if self.broken {
            BROKEN_REAP_TIMEOUT
        } else {
            REAP_TIMEOUT
        };
        if wait_timeout(&mut self.child, limit).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits for the child up to `limit`; None when it is still running.
fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if start.elapsed() < limit => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(25));
            }
            _ => return None,
        }
    }
}
