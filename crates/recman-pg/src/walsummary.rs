//! The change-tracking summary of one WAL segment: which blocks of which relation forks its
//! records touch, which forks it creates or truncates, which databases it copies or drops,
//! and whether any record could not be read. archive-push builds one per segment, in the
//! pass that stores the segment, and keeps it next to it; a level 1 reads the summaries of
//! the segments between its parent's start and its own instead of every relation file.
//!
//! Encoding (little endian, before the repository's compression): the magic `RMCT`, a
//! version byte, the segment's LSN, the covered end LSN, a flags byte (1: whole segment
//! covered, 2: an unknown record), then four lists, each a count followed by its items:
//! forks with blocks (spc, db, rel varints, fork byte, block count, blocks as ascending
//! deltas), created forks, truncations (fork key and new length), databases (spc, db); then the
//! page magic (u16), a cut record (flag byte; LSN, length and bytes) and the continued bytes
//! (length and bytes).

use crate::walrecord::{Change, Coverage, RelId, SegmentEnds, WalDecodeError, decode_segment_ends};
use std::collections::{BTreeMap, BTreeSet, HashMap};

const MAGIC: &[u8; 4] = b"RMCT";
const VERSION: u8 = 1;

/// A relation fork: what blocks belong to.
pub type ForkKey = (RelId, u8);

/// The forks a segment's records name, numbered in order of appearance.
#[derive(Default)]
struct ForkNumbers {
    keys: Vec<ForkKey>,
    /// Filled once there are more than [`ForkNumbers::SCAN`] forks.
    numbers: HashMap<ForkKey, u32>,
}

impl ForkNumbers {
    /// Up to this many forks a scan of the list, newest first, finds a fork sooner than a
    /// hash would: a segment's records mostly name a few relations and their indexes, and
    /// hashing each reference took about 2 % of a WAL push's CPU, more than the integer sort.
    const SCAN: usize = 32;

    fn number(&mut self, key: ForkKey) -> u32 {
        let found = if self.keys.len() <= Self::SCAN {
            self.keys.iter().rposition(|k| *k == key).map(|i| i as u32)
        } else {
            self.numbers.get(&key).copied()
        };
        if let Some(n) = found {
            return n;
        }
        let n = self.keys.len() as u32;
        self.keys.push(key);
        if self.keys.len() > Self::SCAN {
            if self.numbers.is_empty() {
                self.numbers = self.keys.iter().zip(0..).map(|(k, i)| (*k, i)).collect();
            } else {
                self.numbers.insert(key, n);
            }
        }
        n
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentSummary {
    pub seg_lsn: u64,
    /// Every record starting before this LSN is in the summary.
    pub end_lsn: u64,
    /// The whole segment was read: the summary stands for all of it.
    pub whole: bool,
    /// A record changed relation files in a way the decoder does not know: the summary
    /// cannot say what changed.
    pub unknown: bool,
    pub blocks: BTreeMap<ForkKey, BTreeSet<u32>>,
    pub created: BTreeSet<ForkKey>,
    /// Main forks cut, with the shortest length they were cut to.
    pub truncated: BTreeMap<RelId, u32>,
    /// (tablespace, database) directories copied or dropped as a whole.
    pub databases: BTreeSet<(u32, u32)>,
    /// A record spanning into the next segment whose headers this one cuts, and the first
    /// bytes of a record continued from the previous one: merged in order, they decode it.
    pub ends: SegmentEnds,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("change-tracking summary is damaged: {0}; hint: delete it, a level 1 then scans instead")]
pub struct SummaryError(pub String);

impl SegmentSummary {
    /// Decodes segment `data` (starting at `seg_lsn`) into its summary.
    pub fn build(data: &[u8], seg_lsn: u64) -> Result<SegmentSummary, WalDecodeError> {
        let mut s = SegmentSummary {
            seg_lsn,
            ..Default::default()
        };
        // A segment references the same few blocks of a few forks many times over: each
        // reference becomes one integer, the fork's number in order of appearance above the
        // block, a repeat of the last one is dropped, and the rest are sorted and
        // deduplicated as integers, then each fork's set is built in one pass. Sorting the
        // (fork, block) tuples themselves took 8 % of a WAL push's CPU.
        let mut forks = ForkNumbers::default();
        let mut refs: Vec<u64> = Vec::new();
        let (Coverage { end_lsn, whole }, ends) =
            decode_segment_ends(data, seg_lsn, &mut |c| match c {
                Change::Block(b) => {
                    let r = (u64::from(forks.number((b.rel, b.fork))) << 32) | u64::from(b.block);
                    if refs.last() != Some(&r) {
                        refs.push(r);
                    }
                }
                other => s.add(other),
            })?;
        refs.sort_unstable();
        refs.dedup();
        for run in refs.chunk_by(|a, b| a >> 32 == b >> 32) {
            s.blocks
                .entry(forks.keys[(run[0] >> 32) as usize])
                .or_default()
                .extend(run.iter().map(|r| *r as u32));
        }
        s.end_lsn = end_lsn;
        s.whole = whole;
        s.ends = ends;
        Ok(s)
    }

    pub fn add(&mut self, c: Change) {
        match c {
            Change::Block(b) => {
                self.blocks
                    .entry((b.rel, b.fork))
                    .or_default()
                    .insert(b.block);
            }
            Change::Create { rel, fork } => {
                self.created.insert((rel, fork));
            }
            Change::Truncate { rel, blocks } => {
                let t = self.truncated.entry(rel).or_insert(blocks);
                *t = (*t).min(blocks);
            }
            Change::Database { spc, db } => {
                self.databases.insert((spc, db));
            }
            Change::Unknown { .. } => self.unknown = true,
        }
    }

    /// Number of block references kept.
    pub fn block_count(&self) -> usize {
        self.blocks.values().map(|b| b.len()).sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(64 + self.block_count() * 2);
        o.extend_from_slice(MAGIC);
        o.push(VERSION);
        o.extend_from_slice(&self.seg_lsn.to_le_bytes());
        o.extend_from_slice(&self.end_lsn.to_le_bytes());
        o.push(u8::from(self.whole) | (u8::from(self.unknown) << 1));
        let rel = |o: &mut Vec<u8>, r: &RelId| {
            put(o, r.spc as u64);
            put(o, r.db as u64);
            put(o, r.rel as u64);
        };
        put(&mut o, self.blocks.len() as u64);
        for ((r, fork), blocks) in &self.blocks {
            rel(&mut o, r);
            o.push(*fork);
            put(&mut o, blocks.len() as u64);
            let mut prev = 0u64;
            for &b in blocks {
                put(&mut o, b as u64 - prev);
                prev = b as u64;
            }
        }
        put(&mut o, self.created.len() as u64);
        for (r, fork) in &self.created {
            rel(&mut o, r);
            o.push(*fork);
        }
        put(&mut o, self.truncated.len() as u64);
        for (r, n) in &self.truncated {
            rel(&mut o, r);
            put(&mut o, *n as u64);
        }
        put(&mut o, self.databases.len() as u64);
        for (spc, db) in &self.databases {
            put(&mut o, *spc as u64);
            put(&mut o, *db as u64);
        }
        o.extend_from_slice(&self.ends.magic.to_le_bytes());
        match &self.ends.cut {
            Some((lsn, bytes)) => {
                o.push(1);
                o.extend_from_slice(&lsn.to_le_bytes());
                put(&mut o, bytes.len() as u64);
                o.extend_from_slice(bytes);
            }
            None => o.push(0),
        }
        put(&mut o, self.ends.cont.len() as u64);
        o.extend_from_slice(&self.ends.cont);
        o
    }

    pub fn decode(b: &[u8]) -> Result<SegmentSummary, SummaryError> {
        let mut r = Cursor { b, at: 0 };
        if r.take(4)? != MAGIC {
            return Err(SummaryError("it does not start with RMCT".into()));
        }
        let v = r.take(1)?[0];
        if v != VERSION {
            return Err(SummaryError(format!("unknown version {v}")));
        }
        let mut s = SegmentSummary {
            seg_lsn: u64::from_le_bytes(r.take(8)?.try_into().expect("8")),
            end_lsn: u64::from_le_bytes(r.take(8)?.try_into().expect("8")),
            ..Default::default()
        };
        let flags = r.take(1)?[0];
        s.whole = flags & 1 != 0;
        s.unknown = flags & 2 != 0;
        for _ in 0..r.count()? {
            let key = (r.rel()?, r.take(1)?[0]);
            let mut set = BTreeSet::new();
            let mut prev = 0u64;
            for _ in 0..r.count()? {
                prev += r.var()?;
                set.insert(r.u32_of(prev)?);
            }
            s.blocks.insert(key, set);
        }
        for _ in 0..r.count()? {
            let key = (r.rel()?, r.take(1)?[0]);
            s.created.insert(key);
        }
        for _ in 0..r.count()? {
            let rel = r.rel()?;
            let n = r.var()?;
            s.truncated.insert(rel, r.u32_of(n)?);
        }
        for _ in 0..r.count()? {
            let spc = r.var()?;
            let db = r.var()?;
            s.databases.insert((r.u32_of(spc)?, r.u32_of(db)?));
        }
        s.ends.magic = u16::from_le_bytes(r.take(2)?.try_into().expect("2"));
        if r.take(1)?[0] == 1 {
            let lsn = u64::from_le_bytes(r.take(8)?.try_into().expect("8"));
            let n = r.count()? as usize;
            s.ends.cut = Some((lsn, r.take(n)?.to_vec()));
        }
        let n = r.count()? as usize;
        s.ends.cont = r.take(n)?.to_vec();
        if r.at != b.len() {
            return Err(SummaryError("it has bytes past its end".into()));
        }
        Ok(s)
    }
}

fn put(o: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        o.push(v as u8 | 0x80);
        v >>= 7;
    }
    o.push(v as u8);
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], SummaryError> {
        let s = self
            .b
            .get(self.at..self.at + n)
            .ok_or_else(|| SummaryError(format!("it ends early at byte {}", self.at)))?;
        self.at += n;
        Ok(s)
    }
    fn var(&mut self) -> Result<u64, SummaryError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= ((b & 0x7F) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(SummaryError(format!("overlong number at byte {}", self.at)))
    }
    fn u32_of(&self, v: u64) -> Result<u32, SummaryError> {
        u32::try_from(v).map_err(|_| SummaryError(format!("{v} out of range at byte {}", self.at)))
    }
    /// A list's length, bounded by the bytes left (each item takes at least one).
    fn count(&mut self) -> Result<u64, SummaryError> {
        let n = self.var()?;
        if n > (self.b.len() - self.at) as u64 {
            return Err(SummaryError(format!(
                "list of {n} items at byte {}",
                self.at
            )));
        }
        Ok(n)
    }
    fn rel(&mut self) -> Result<RelId, SummaryError> {
        let (spc, db, rel) = (self.var()?, self.var()?, self.var()?);
        Ok(RelId {
            spc: self.u32_of(spc)?,
            db: self.u32_of(db)?,
            rel: self.u32_of(rel)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walrecord::BlockRef;

    #[test]
    fn encodes_and_decodes_every_list() {
        let r = RelId {
            spc: 1663,
            db: 5,
            rel: 16384,
        };
        let mut s = SegmentSummary {
            seg_lsn: 0x1000000,
            end_lsn: 0x2000000,
            whole: true,
            ..Default::default()
        };
        for b in [7, 3, 100_000, 3] {
            s.add(Change::Block(BlockRef {
                rel: r,
                fork: 0,
                block: b,
            }));
        }
        s.add(Change::Create { rel: r, fork: 2 });
        s.add(Change::Truncate { rel: r, blocks: 9 });
        s.add(Change::Truncate { rel: r, blocks: 4 });
        s.add(Change::Database { spc: 1663, db: 7 });
        s.ends = SegmentEnds {
            magic: 0xD110,
            cut: Some((0x1FFFFF8, vec![1, 2, 3])),
            cont: vec![4; 10],
        };
        let e = s.encode();
        let d = SegmentSummary::decode(&e).unwrap();
        assert_eq!(d, s);
        assert_eq!(d.block_count(), 3);
        assert_eq!(d.truncated[&r], 4);
        assert!(SegmentSummary::decode(&e[..e.len() - 1]).is_err());
        let mut bad = e.clone();
        bad.push(0);
        assert!(SegmentSummary::decode(&bad).is_err());
        s.add(Change::Unknown {
            lsn: 1,
            rmid: 9,
            info: 1,
        });
        assert!(SegmentSummary::decode(&s.encode()).unwrap().unknown);
    }
}
