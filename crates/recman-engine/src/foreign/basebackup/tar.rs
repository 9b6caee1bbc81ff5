//! The tar files pg_basebackup writes, read as a stream: a member's header, then its bytes,
//! without seeking (a compressed tar cannot seek). PostgreSQL's own tar writer makes ustar
//! headers; GNU long names and pax paths are read too, so that a tar repacked by another tool
//! still opens.

use std::io::{self, Read};

const BLOCK: usize = 512;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// Hard links, devices and the like: nothing pg_basebackup writes.
    Other,
}

#[derive(Clone, Debug)]
pub struct Header {
    pub path: String,
    pub kind: Kind,
    pub mode: u32,
    pub mtime: i64,
    pub size: u64,
    pub link: String,
}

/// A tar stream positioned at a header or inside a member.
pub struct TarStream<R> {
    inner: R,
    /// Bytes of the current member not handed out yet, and the padding after it.
    left: u64,
    pad: u64,
}

/// The stream is no tar, or a damaged one; `what` says where it broke.
fn broken(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{what}: this is no tar file, or a damaged one; hint: list it with `tar -t` (after decompressing it), or take the backup again"
        ),
    )
}

fn field(b: &[u8]) -> String {
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// A numeric field: octal text, or base-256 when its high bit is set (sizes over 8 GB).
fn number(b: &[u8]) -> io::Result<u64> {
    if b.first().is_some_and(|c| c & 0x80 != 0) {
        let mut v = u64::from(b[0] & 0x7f);
        for c in &b[1..] {
            v = (v << 8) | u64::from(*c);
        }
        return Ok(v);
    }
    let t = field(b);
    let t = t.trim_matches(|c: char| c == ' ' || c == '\0');
    if t.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(t, 8)
        .map_err(|_| broken(&format!("a header holds {t:?} where a number belongs")))
}

fn pax_path(data: &[u8]) -> Option<String> {
    // Records are "<len> <key>=<value>\n".
    String::from_utf8_lossy(data).lines().find_map(|l| {
        let (_, kv) = l.split_once(' ')?;
        kv.strip_prefix("path=").map(str::to_string)
    })
}

impl<R: Read> TarStream<R> {
    pub fn new(inner: R) -> TarStream<R> {
        TarStream {
            inner,
            left: 0,
            pad: 0,
        }
    }

    /// The next member's header, past what is left of the current one; None at the end.
    /// A tar cut short (at a block boundary, or where a compressed stream has a member
    /// boundary) is told from a whole one by the zero block that ends every tar.
    pub fn next_header(&mut self) -> io::Result<Option<Header>> {
        let mut long_name: Option<String> = None;
        loop {
            self.skip_rest()?;
            let mut h = [0u8; BLOCK];
            if !self.fill(&mut h)? {
                return Err(broken("it ends without the zero blocks that end a tar"));
            }
            if h.iter().all(|c| *c == 0) {
                return Ok(None);
            }
            let size = number(&h[124..136])?;
            self.left = size;
            self.pad = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
            let flag = h[156];
            if flag == b'L' || flag == b'x' {
                let mut data = vec![0u8; size as usize];
                self.read_exact_member(&mut data)?;
                long_name = if flag == b'L' {
                    Some(field(&data))
                } else {
                    pax_path(&data).or(long_name)
                };
                continue;
            }
            if flag == b'g' {
                continue;
            }
            let mut path = field(&h[0..100]);
            if &h[257..262] == b"ustar" {
                let prefix = field(&h[345..500]);
                if !prefix.is_empty() {
                    path = format!("{prefix}/{path}");
                }
            }
            let path = long_name.take().unwrap_or(path);
            let kind = match flag {
                b'0' | 0 | b'7' => Kind::File,
                b'5' => Kind::Dir,
                b'2' => Kind::Symlink,
                _ => Kind::Other,
            };
            if kind != Kind::File {
                self.left = 0;
                self.pad = 0;
            }
            let path = path
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_string();
            return Ok(Some(Header {
                path,
                kind,
                mode: number(&h[100..108])? as u32 & 0o7777,
                mtime: number(&h[136..148])? as i64,
                size,
                link: field(&h[157..257]),
            }));
        }
    }

    fn read_exact_member(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact(buf)?;
        self.left -= buf.len() as u64;
        Ok(())
    }

    /// Reads a whole block; false at a clean end of the stream.
    fn fill(&mut self, b: &mut [u8; BLOCK]) -> io::Result<bool> {
        let mut n = 0;
        while n < BLOCK {
            match self.inner.read(&mut b[n..])? {
                0 if n == 0 => return Ok(false),
                0 => return Err(broken("it ends inside a header")),
                k => n += k,
            }
        }
        Ok(true)
    }

    fn skip_rest(&mut self) -> io::Result<()> {
        let n = self.left + self.pad;
        let skipped = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())?;
        if skipped != n {
            return Err(broken("it ends inside a member"));
        }
        self.left = 0;
        self.pad = 0;
        Ok(())
    }

    /// The current member's bytes; reading past them gives end of file.
    pub fn member(&mut self) -> Member<'_, R> {
        Member { s: self }
    }

    /// The stream left at the start of the current member's bytes, owning its reader.
    pub fn into_member(self) -> io::Take<R> {
        let left = self.left;
        self.inner.take(left)
    }
}

pub struct Member<'a, R> {
    s: &'a mut TarStream<R>,
}

impl<R: Read> Read for Member<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.s.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(self.s.left.min(usize::MAX as u64) as usize);
        let n = self.s.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(broken("it ends inside a member"));
        }
        self.s.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_read_in_order_with_their_bytes() {
        let mut b = ::tar::Builder::new(Vec::new());
        let mut h = ::tar::Header::new_ustar();
        h.set_size(3);
        h.set_mode(0o600);
        h.set_cksum();
        b.append_data(&mut h.clone(), "base/1/1259", &b"abc"[..])
            .unwrap();
        let long = format!("base/1/{}", "x".repeat(120));
        b.append_data(&mut h, &long, &b"xyz"[..]).unwrap();
        let data = b.into_inner().unwrap();
        let mut s = TarStream::new(&data[..]);
        let first = s.next_header().unwrap().unwrap();
        assert_eq!((first.path.as_str(), first.size), ("base/1/1259", 3));
        let second = s.next_header().unwrap().unwrap();
        assert_eq!(second.path, long);
        let mut out = String::new();
        s.member().read_to_string(&mut out).unwrap();
        assert_eq!(out, "xyz");
        assert!(s.next_header().unwrap().is_none());
        let cut = &data[..1024];
        let mut s = TarStream::new(cut);
        s.next_header().unwrap();
        let e = s.next_header().unwrap_err();
        assert!(e.to_string().contains("zero blocks"), "{e}");
    }
}
