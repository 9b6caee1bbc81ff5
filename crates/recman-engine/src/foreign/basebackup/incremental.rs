//! PostgreSQL 17's incremental backups (`pg_basebackup --incremental`), combined at restore
//! as pg_combinebackup combines them: a relation file the backup sent in part is an
//! `INCREMENTAL.<name>` file (a header, then the blocks changed since the prior backup);
//! the blocks it lacks come from the same file in the prior backup, itself whole or in part.
//! Every file read along the way is checked against its own backup's manifest.

use super::super::ImportError;
use std::io::{self, Read};

pub const MAGIC: u32 = 0xd3ae_1f0d;
pub const PREFIX: &str = "INCREMENTAL.";
const BLCKSZ: usize = recman_page::BLCKSZ;

/// `base/5/INCREMENTAL.1259` for `base/5/1259`.
pub fn incremental_name(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/{PREFIX}{name}"),
        None => format!("{PREFIX}{path}"),
    }
}

/// `base/5/1259` for `base/5/INCREMENTAL.1259`; None for another name.
pub fn full_name(path: &str) -> Option<String> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) => (Some(d), n),
        None => (None, path),
    };
    let name = name.strip_prefix(PREFIX)?;
    Some(match dir {
        Some(d) => format!("{d}/{name}"),
        None => name.to_string(),
    })
}

/// An incremental file's header: the blocks it holds, in the order it holds them, and the
/// length in blocks the relation had at its shortest since the prior backup.
#[derive(Clone, Debug)]
pub struct Header {
    pub blocks: Vec<u32>,
    pub truncation: u32,
}

impl Header {
    /// Reads the header from the start of `r`, leaving `r` at the first block.
    pub fn read(r: &mut dyn Read) -> io::Result<Header> {
        let mut word = || -> io::Result<u32> {
            let mut b = [0u8; 4];
            r.read_exact(&mut b)?;
            Ok(u32::from_le_bytes(b))
        };
        let magic = word()?;
        if magic != MAGIC {
            return Err(bad(format!(
                "it starts with {magic:#010x}, not the magic number of an incremental file"
            )));
        }
        let n = word()?;
        let truncation = word()?;
        if n as usize > (1 << 30) / BLCKSZ {
            return Err(bad(format!("its header claims {n} blocks")));
        }
        let blocks = (0..n).map(|_| word()).collect::<io::Result<Vec<u32>>>()?;
        if blocks.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("its blocks are not in ascending order".into()));
        }
        // The blocks start on a block boundary when there are any.
        let len = 12 + 4 * blocks.len();
        if !blocks.is_empty() && !len.is_multiple_of(BLCKSZ) {
            let pad = BLCKSZ - len % BLCKSZ;
            io::copy(&mut r.take(pad as u64), &mut io::sink())?;
        }
        Ok(Header { blocks, truncation })
    }

    /// The length of the file it rebuilds, in blocks.
    pub fn length(&self) -> u32 {
        self.blocks
            .last()
            .map_or(self.truncation, |b| self.truncation.max(b + 1))
    }
}

fn bad(why: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{why}; hint: check the backup with pg_verifybackup"),
    )
}

/// A relation file rebuilt from an incremental file and the file as the prior backup has
/// it (None: the prior backup lacks it). Both are read once, in order, to their ends, so
/// that their checks (size, manifest checksum) run.
pub struct Rebuilt<'a> {
    incr: Box<dyn Read + Send + 'a>,
    prior: Option<Box<dyn Read + Send + 'a>>,
    header: Header,
    next: usize,
    at: u32,
    length: u32,
    block: Vec<u8>,
    spare: Vec<u8>,
    pos: usize,
    prior_ended: bool,
}

impl<'a> Rebuilt<'a> {
    pub fn new(
        mut incr: Box<dyn Read + Send + 'a>,
        prior: Option<Box<dyn Read + Send + 'a>>,
    ) -> io::Result<Rebuilt<'a>> {
        let header = Header::read(&mut incr)?;
        Ok(Rebuilt {
            incr,
            prior_ended: prior.is_none(),
            prior,
            length: header.length(),
            header,
            next: 0,
            at: 0,
            block: vec![0; BLCKSZ],
            spare: vec![0; BLCKSZ],
            pos: BLCKSZ,
        })
    }

    /// The prior's next block into `spare`; false when the prior has no more.
    fn prior_block(&mut self) -> io::Result<bool> {
        let Some(p) = self.prior.as_mut().filter(|_| !self.prior_ended) else {
            return Ok(false);
        };
        let mut n = 0;
        while n < BLCKSZ {
            match p.read(&mut self.spare[n..])? {
                0 => break,
                k => n += k,
            }
        }
        match n {
            0 => {
                self.prior_ended = true;
                Ok(false)
            }
            BLCKSZ => Ok(true),
            _ => Err(bad(format!(
                "the prior backup's file ends inside block {}",
                self.at
            ))),
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        let from_prior = self.prior_block()?;
        if self.header.blocks.get(self.next) == Some(&self.at) {
            self.incr.read_exact(&mut self.block)?;
            self.next += 1;
        } else if self.at < self.header.truncation {
            if !from_prior {
                return Err(bad(format!(
                    "block {} is in neither the incremental file nor the prior backup",
                    self.at
                )));
            }
            std::mem::swap(&mut self.block, &mut self.spare);
        } else {
            // Past the truncation point and not sent: the relation was extended with it
            // and it is all zeroes, as pg_combinebackup writes it.
            self.block.fill(0);
        }
        self.at += 1;
        self.pos = 0;
        Ok(())
    }

    /// Reads both sources to their ends, so that their checks run.
    fn finish(&mut self) -> io::Result<()> {
        io::copy(&mut self.incr, &mut io::sink())?;
        if let Some(p) = self.prior.as_mut() {
            io::copy(p, &mut io::sink())?;
        }
        Ok(())
    }
}

impl Read for Rebuilt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.pos == BLCKSZ {
            if self.at == self.length {
                self.finish()?;
                return Ok(0);
            }
            self.fill()?;
        }
        let n = buf.len().min(BLCKSZ - self.pos);
        buf[..n].copy_from_slice(&self.block[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Reads the header of an incremental file of a plain-format backup, for the size of the
/// file it rebuilds.
pub fn rebuilt_size(path: &std::path::Path) -> Result<u64, ImportError> {
    let f = std::fs::File::open(path).map_err(|e| ImportError::io(path, e))?;
    let mut r = std::io::BufReader::new(f);
    let h = Header::read(&mut r).map_err(|e| ImportError::io(path, e))?;
    Ok(u64::from(h.length()) * BLCKSZ as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incremental(blocks: &[(u32, u8)], truncation: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend(MAGIC.to_le_bytes());
        v.extend((blocks.len() as u32).to_le_bytes());
        v.extend(truncation.to_le_bytes());
        for (b, _) in blocks {
            v.extend(b.to_le_bytes());
        }
        if !blocks.is_empty() {
            v.resize(v.len().div_ceil(BLCKSZ) * BLCKSZ, 0);
        }
        for (_, fill) in blocks {
            v.extend(vec![*fill; BLCKSZ]);
        }
        v
    }

    #[test]
    fn blocks_come_from_the_incremental_file_else_from_the_prior() {
        let prior: Vec<u8> = (0..4u8).flat_map(|b| vec![b + 10; BLCKSZ]).collect();
        // Block 1 changed, the relation cut to 3 blocks and then extended to 6.
        let incr = incremental(&[(1, 1), (3, 3), (4, 4)], 3);
        let mut out = Vec::new();
        Rebuilt::new(Box::new(&incr[..]), Some(Box::new(&prior[..])))
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        let firsts: Vec<u8> = out.chunks(BLCKSZ).map(|c| c[0]).collect();
        assert_eq!(firsts, vec![10, 1, 12, 3, 4]);
        assert_eq!(full_name("base/5/INCREMENTAL.1259").unwrap(), "base/5/1259");
        assert_eq!(incremental_name("base/5/1259"), "base/5/INCREMENTAL.1259");
    }

    #[test]
    fn a_missing_prior_block_is_an_error() {
        let incr = incremental(&[], 2);
        let e = Rebuilt::new(Box::new(&incr[..]), None)
            .unwrap()
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("block 0"), "{e}");
    }
}
