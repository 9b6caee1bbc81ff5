//! Frames of recman-media-plugin/1: a 4-byte big-endian length and a JSON header, then a
//! 4-byte length and a payload.

use std::io::{self, Read, Write};

use serde_json::{Map, Value};

/// Headers are small JSON objects and list replies are paged, so a longer header length means
/// the plugin wrote something that is not a frame (typically a log line on stdout).
pub const MAX_HEADER: usize = 16 << 20;

pub enum FrameError {
    Io(io::Error),
    Malformed(String),
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

pub fn write_frame(w: &mut impl Write, header: &[u8], payload: &[u8]) -> io::Result<()> {
    let len = |n: usize| u32::try_from(n).map_err(|_| io::Error::other("frame part over 4 GiB"));
    w.write_all(&len(header.len())?.to_be_bytes())?;
    w.write_all(header)?;
    w.write_all(&len(payload.len())?.to_be_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// One frame, refusing a header over [`MAX_HEADER`] or a payload over `max_payload` before
/// allocating for it.
pub fn read_frame(r: &mut impl Read, max_payload: usize) -> Result<(Vec<u8>, Vec<u8>), FrameError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let n = u32::from_be_bytes(len) as usize;
    if n > MAX_HEADER {
        return Err(FrameError::Malformed(format!(
            "a header length of {n} bytes (it began with {:?})",
            String::from_utf8_lossy(&len)
        )));
    }
    let header = read_exactly(r, n)?;
    r.read_exact(&mut len)?;
    let n = u32::from_be_bytes(len) as usize;
    if n > max_payload {
        return Err(FrameError::Malformed(format!(
            "a payload of {n} bytes, over the agreed max_frame of {max_payload}"
        )));
    }
    let payload = read_exactly(r, n)?;
    Ok((header, payload))
}

/// Reads `n` bytes, growing the buffer as they arrive: a length the peer announces but never
/// sends costs no more memory than what it did send.
fn read_exactly(r: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    r.take(n as u64).read_to_end(&mut v)?;
    if v.len() < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(v)
}

/// A reply header: a JSON object whose `ok` is a boolean; None for anything else.
pub fn reply_header(head: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(head) {
        Ok(Value::Object(m)) if m.get("ok").is_some_and(Value::is_boolean) => Some(m),
        _ => None,
    }
}
