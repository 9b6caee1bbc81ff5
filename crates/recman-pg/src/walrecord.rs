//! A decoder for the WAL records of one segment, enough to know which relation blocks they
//! touch: record headers, block references, records spanning pages, and the few record
//! types that change relation files without naming blocks (smgr create/truncate, database
//! create/drop). Change tracking builds its summaries with it (see [`crate::walsummary`]).
//!
//! The record layout (XLogRecord, XLogRecordBlockHeader and its image header) has not moved
//! from 13 to 18; what differs by major is the meaning of the image flags (15 split
//! "compressed" into one bit per method) and the database record codes (15 added the
//! WAL_LOG strategy), both looked up from the page magic through the version table.

/// XLOG_BLCKSZ: the WAL page size of every build recman supports.
pub const WAL_PAGE: usize = 8192;
const SHORT_HEADER: usize = 24;
const LONG_HEADER: usize = 40;
const RECORD_HEADER: usize = 24;
const XLP_FIRST_IS_CONTRECORD: u16 = 0x0001;
const XLP_LONG_HEADER: u16 = 0x0002;

const RM_XLOG: u8 = 0;
const RM_XACT: u8 = 1;
const RM_SMGR: u8 = 2;
const RM_DBASE: u8 = 4;
const RM_TBLSPC: u8 = 5;
const XLOG_SWITCH: u8 = 0x40;
const XLOG_SMGR_CREATE: u8 = 0x10;
const XLOG_SMGR_TRUNCATE: u8 = 0x20;
const SMGR_TRUNCATE_HEAP: u32 = 0x0001;
/// The record changes relation files in a way its block references do not say.
const XLR_SPECIAL_REL_UPDATE: u8 = 0x01;

const BKPBLOCK_FORK_MASK: u8 = 0x0F;
const BKPBLOCK_HAS_IMAGE: u8 = 0x10;
const BKPBLOCK_HAS_DATA: u8 = 0x20;
const BKPBLOCK_SAME_REL: u8 = 0x80;
const BKPIMAGE_HAS_HOLE: u8 = 0x01;
const XLR_MAX_BLOCK_ID: u8 = 32;
const XLR_BLOCK_ID_DATA_SHORT: u8 = 255;
const XLR_BLOCK_ID_DATA_LONG: u8 = 254;
const XLR_BLOCK_ID_ORIGIN: u8 = 253;
const XLR_BLOCK_ID_TOPLEVEL_XID: u8 = 252;

/// A relation file's identity (RelFileNode up to 15, RelFileLocator from 16: same layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RelId {
    pub spc: u32,
    pub db: u32,
    pub rel: u32,
}

/// One block a record touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockRef {
    pub rel: RelId,
    /// 0 main, 1 fsm, 2 vm, 3 init.
    pub fork: u8,
    pub block: u32,
}

/// What one record does to relation files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Block(BlockRef),
    /// A fork file created (or re-created): every block of it is new.
    Create {
        rel: RelId,
        fork: u8,
    },
    /// The main fork cut to `blocks` blocks (the visibility map and free space map forks may
    /// be cut too; they are taken whole anyway).
    Truncate {
        rel: RelId,
        blocks: u32,
    },
    /// A database directory created by copying files (no block in WAL), or dropped.
    Database {
        spc: u32,
        db: u32,
    },
    /// A record that changes relation files in a way this decoder does not know.
    Unknown {
        lsn: u64,
        rmid: u8,
        info: u8,
    },
}

/// How far a segment could be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// Every record starting before this LSN was decoded (exclusive end).
    pub end_lsn: u64,
    /// The segment's records were read to its end (or to a WAL switch): nothing is missing.
    pub whole: bool,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum WalDecodeError {
    #[error(
        "wal segment starting at {lsn:X} has no valid first page header; hint: it is not a WAL segment of a supported PostgreSQL major"
    )]
    BadFirstPage { lsn: u64 },
}

/// Facts of the WAL format that differ by major.
#[derive(Clone, Copy, Debug)]
struct Format {
    magic: u16,
    /// Bits of bimg_info saying the image is compressed.
    compressed: u8,
    major: u32,
}

impl Format {
    fn of_magic(magic: u16) -> Option<Format> {
        let f = crate::version::TABLE
            .iter()
            .find(|f| f.wal_page_magic == magic)?;
        Some(Format {
            magic,
            // 13 and 14: BKPIMAGE_IS_COMPRESSED; 15 on: PGLZ | LZ4 | ZSTD.
            compressed: if f.major < 15 {
                0x02
            } else {
                0x04 | 0x08 | 0x10
            },
            major: f.major,
        })
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes the records that start in one WAL segment (`data`, starting at `seg_lsn`) and
/// reports every change to `out`. A record continued from the previous segment is skipped
/// (that segment's decoding saw its headers); a record running past the end is decoded from
/// the part here, and reported Unknown when what is needed lies in the next segment.
/// Decoding stops at the first invalid page or record (a segment still being written ends
/// there), and the coverage says how far it got.
pub fn decode_segment(
    data: &[u8],
    seg_lsn: u64,
    out: &mut dyn FnMut(Change),
) -> Result<Coverage, WalDecodeError> {
    decode_segment_ends(data, seg_lsn, out).map(|(c, _)| c)
}

/// Bytes of a record continued from the previous segment that a segment keeps: enough for the
/// block headers of any record (32 blocks of at most 38 bytes, and the record header).
pub const CONT_KEEP: usize = 4096;

/// The ends of a segment: what is needed to decode a record that spans two segments whose
/// headers the first one cuts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentEnds {
    /// The page magic of the segment (the WAL format of its major).
    pub magic: u16,
    /// A record starting in this segment that its headers run out of: its LSN and the bytes
    /// here. The next segment's `cont` completes it.
    pub cut: Option<(u64, Vec<u8>)>,
    /// The first bytes (up to [`CONT_KEEP`]) of a record continued from the previous segment.
    pub cont: Vec<u8>,
}

/// Decodes the record `prefix` (cut at a segment's end) completed by `cont` (the next
/// segment's first bytes), reporting its changes; false when even together they do not hold
/// what is needed, or `magic` is not a supported major's.
pub fn decode_cut_record(
    prefix: &[u8],
    cont: &[u8],
    lsn: u64,
    magic: u16,
    out: &mut dyn FnMut(Change),
) -> bool {
    let Some(fmt) = Format::of_magic(magic) else {
        return false;
    };
    let mut rec = prefix.to_vec();
    rec.extend_from_slice(cont);
    if rec.len() < RECORD_HEADER {
        return false;
    }
    let tot_len = u32_at(&rec, 0) as usize;
    rec.truncate(tot_len);
    decode_record(&rec, tot_len, lsn, fmt, out).is_ok()
}

/// [`decode_segment`], also returning the segment's [`SegmentEnds`].
pub fn decode_segment_ends(
    data: &[u8],
    seg_lsn: u64,
    out: &mut dyn FnMut(Change),
) -> Result<(Coverage, SegmentEnds), WalDecodeError> {
    let mut ends = SegmentEnds::default();
    let c = decode_inner(data, seg_lsn, out, &mut ends)?;
    Ok((c, ends))
}

fn decode_inner(
    data: &[u8],
    seg_lsn: u64,
    out: &mut dyn FnMut(Change),
    ends: &mut SegmentEnds,
) -> Result<Coverage, WalDecodeError> {
    let bad = WalDecodeError::BadFirstPage { lsn: seg_lsn };
    if data.len() < LONG_HEADER {
        return Err(bad);
    }
    let fmt = Format::of_magic(u16_at(data, 0)).ok_or(bad.clone())?;
    ends.magic = fmt.magic;
    let mut r = Reader {
        data,
        seg_lsn,
        fmt,
        pos: 0,
    };
    if !r.page_ok(0, false) {
        return Err(bad);
    }
    let info = u16_at(data, 2);
    let header = if info & XLP_LONG_HEADER != 0 {
        LONG_HEADER
    } else {
        SHORT_HEADER
    };
    r.pos = header;
    if info & XLP_FIRST_IS_CONTRECORD != 0 {
        let rem = u32_at(data, 16) as usize;
        let keep = rem.min(CONT_KEEP);
        let kept = r.walk(keep, Some(&mut ends.cont), true);
        if kept.is_err() || r.skip(rem - keep, true).is_err() {
            // The whole segment continues one record: nothing starts here.
            return Ok(Coverage {
                end_lsn: seg_lsn + data.len() as u64,
                whole: true,
            });
        }
        r.pos = align8(r.pos);
    }
    let mut rec = Vec::new();
    loop {
        let start = r.pos;
        let lsn_of = |p: usize| seg_lsn + p as u64;
        if start >= data.len() {
            return Ok(Coverage {
                end_lsn: lsn_of(data.len()),
                whole: true,
            });
        }
        rec.clear();
        // The record header may itself be split across pages; its length field never is.
        match r.read(4, &mut rec) {
            Ok(()) => {}
            Err(Stop::SegmentEnd) => {
                return Ok(Coverage {
                    end_lsn: lsn_of(data.len()),
                    whole: true,
                });
            }
            Err(Stop::Invalid) => {
                return Ok(Coverage {
                    end_lsn: lsn_of(start),
                    whole: false,
                });
            }
        }
        let rec_lsn = lsn_of(r.record_start(start));
        let tot_len = u32_at(&rec, 0) as usize;
        if tot_len < RECORD_HEADER {
            // Zeros past the last record: the end of what was written.
            return Ok(Coverage {
                end_lsn: rec_lsn,
                whole: false,
            });
        }
        match r.read(tot_len - 4, &mut rec) {
            Ok(()) => {
                if !crc_ok(&rec) {
                    return Ok(Coverage {
                        end_lsn: rec_lsn,
                        whole: false,
                    });
                }
                let (rmid, info) = (rec[17], rec[16]);
                // Whole and checked: nothing can be missing.
                let _ = decode_record(&rec, tot_len, rec_lsn, fmt, out);
                if rmid == RM_XLOG && info & 0xF0 == XLOG_SWITCH {
                    return Ok(Coverage {
                        end_lsn: lsn_of(data.len()),
                        whole: true,
                    });
                }
                r.pos = align8(r.pos);
            }
            Err(Stop::SegmentEnd) => {
                // Runs into the next segment: decode what is here; the next segment's
                // decoding skips the rest.
                // What it lacks is kept for the next segment's summary to complete.
                if rec.len() < RECORD_HEADER
                    || decode_record(&rec, tot_len, rec_lsn, fmt, out).is_err()
                {
                    ends.cut = Some((rec_lsn, rec.clone()));
                }
                return Ok(Coverage {
                    end_lsn: lsn_of(data.len()),
                    whole: true,
                });
            }
            Err(Stop::Invalid) => {
                return Ok(Coverage {
                    end_lsn: rec_lsn,
                    whole: false,
                });
            }
        }
    }
}

fn align8(p: usize) -> usize {
    (p + 7) & !7
}

/// The CRC-32C of a record: its data after the header, then the header up to the CRC field.
fn crc_ok(rec: &[u8]) -> bool {
    let c = crc32c::crc32c(&rec[RECORD_HEADER..]);
    let c = crc32c::crc32c_append(c, &rec[..20]);
    c == u32_at(rec, 20)
}

enum Stop {
    SegmentEnd,
    Invalid,
}

struct Reader<'a> {
    data: &'a [u8],
    seg_lsn: u64,
    fmt: Format,
    pos: usize,
}

impl Reader<'_> {
    /// Whether the page at `at` has a valid header for this place in the WAL; `cont`: the
    /// page must say it continues a record.
    fn page_ok(&self, at: usize, cont: bool) -> bool {
        if at + SHORT_HEADER > self.data.len() {
            return false;
        }
        let d = self.data;
        let info = u16_at(d, at + 2);
        u16_at(d, at) == self.fmt.magic
            && u64_at(d, at + 8) == self.seg_lsn + at as u64
            && (!cont || info & XLP_FIRST_IS_CONTRECORD != 0)
    }

    fn header_len(&self, at: usize) -> usize {
        if u16_at(self.data, at + 2) & XLP_LONG_HEADER != 0 {
            LONG_HEADER
        } else {
            SHORT_HEADER
        }
    }

    /// Where a record whose first byte is read from `start` begins: past a page header
    /// when `start` is a page boundary.
    fn record_start(&self, start: usize) -> usize {
        if start.is_multiple_of(WAL_PAGE) {
            start + self.header_len(start)
        } else {
            start
        }
    }

    /// Appends the next `n` payload bytes to `out`, stepping over page headers.
    fn read(&mut self, n: usize, out: &mut Vec<u8>) -> Result<(), Stop> {
        self.walk(n, Some(out), false)
    }

    fn skip(&mut self, n: usize, cont: bool) -> Result<(), Stop> {
        self.walk(n, None, cont)
    }

    fn walk(
        &mut self,
        mut n: usize,
        mut out: Option<&mut Vec<u8>>,
        cont: bool,
    ) -> Result<(), Stop> {
        let mut first = true;
        while n > 0 {
            if self.pos >= self.data.len() {
                return Err(Stop::SegmentEnd);
            }
            if self.pos.is_multiple_of(WAL_PAGE) {
                // A record's bytes past its first page continue on pages marked so; a record
                // starting at a page boundary starts on a page that is not.
                let continues = cont || !first || out.as_ref().is_some_and(|o| !o.is_empty());
                if !self.page_ok(self.pos, continues) {
                    return Err(Stop::Invalid);
                }
                self.pos += self.header_len(self.pos);
            }
            first = false;
            let page_end = (self.pos / WAL_PAGE + 1) * WAL_PAGE;
            let take = n.min(page_end - self.pos).min(self.data.len() - self.pos);
            if let Some(o) = out.as_deref_mut() {
                o.extend_from_slice(&self.data[self.pos..self.pos + take]);
            }
            self.pos += take;
            n -= take;
        }
        Ok(())
    }
}

/// What a cut record lacks to be decoded: bytes in the next segment.
struct Incomplete;

/// Decodes one record (`rec`: its bytes, maybe only the first part of `tot_len`); reports
/// nothing and returns Incomplete when what it needs lies past `rec`.
fn decode_record(
    rec: &[u8],
    tot_len: usize,
    lsn: u64,
    fmt: Format,
    out: &mut dyn FnMut(Change),
) -> Result<(), Incomplete> {
    let info = rec[16];
    let rmid = rec[17];
    let unknown = Change::Unknown { lsn, rmid, info };
    let Some(Headers { blocks, main_len }) = read_headers(rec, tot_len, fmt)? else {
        out(unknown);
        return Ok(());
    };
    let special = info & XLR_SPECIAL_REL_UPDATE != 0 && rmid != RM_XACT && rmid != RM_TBLSPC;
    let main_at = tot_len - main_len;
    if special && main_at + main_len > rec.len() {
        return Err(Incomplete);
    }
    for b in blocks {
        out(Change::Block(b));
    }
    if !special {
        // Drops (commit/abort records) only remove files; tablespace records make and
        // remove directories.
        return Ok(());
    }
    let main = &rec[main_at..main_at + main_len];
    match special_changes(rmid, info & 0xF0, main, fmt) {
        Some(changes) => changes.into_iter().for_each(&mut *out),
        None => out(unknown),
    }
    Ok(())
}

/// What a record's headers say: the blocks it touches and the length of its main data.
struct Headers {
    blocks: Vec<BlockRef>,
    main_len: usize,
}

/// Reads the block and data headers that follow the record header; None when they make no
/// sense (the record is then reported as Unknown), Incomplete when they lie past `rec`.
fn read_headers(rec: &[u8], tot_len: usize, fmt: Format) -> Result<Option<Headers>, Incomplete> {
    let mut p = RECORD_HEADER;
    let mut remaining = tot_len - RECORD_HEADER;
    let mut datatotal = 0usize;
    let mut main_len = 0usize;
    let mut last_rel: Option<RelId> = None;
    let mut blocks = Vec::new();
    macro_rules! need {
        ($n:expr) => {{
            let n = $n;
            if n > remaining {
                return Ok(None);
            }
            if p + n > rec.len() {
                return Err(Incomplete);
            }
            let at = p;
            p += n;
            remaining -= n;
            at
        }};
    }
    while remaining > datatotal {
        let at = need!(1);
        let id = rec[at];
        match id {
            XLR_BLOCK_ID_DATA_SHORT => {
                let at = need!(1);
                main_len = rec[at] as usize;
                datatotal += main_len;
                break;
            }
            XLR_BLOCK_ID_DATA_LONG => {
                let at = need!(4);
                main_len = u32_at(rec, at) as usize;
                datatotal += main_len;
                break;
            }
            XLR_BLOCK_ID_ORIGIN => {
                need!(2);
            }
            XLR_BLOCK_ID_TOPLEVEL_XID => {
                need!(4);
            }
            id if id <= XLR_MAX_BLOCK_ID => {
                let at = need!(3);
                let flags = rec[at];
                if flags & BKPBLOCK_HAS_DATA != 0 {
                    datatotal += u16_at(rec, at + 1) as usize;
                }
                if flags & BKPBLOCK_HAS_IMAGE != 0 {
                    let at = need!(5);
                    datatotal += u16_at(rec, at) as usize;
                    let bimg = rec[at + 4];
                    if bimg & BKPIMAGE_HAS_HOLE != 0 && bimg & fmt.compressed != 0 {
                        need!(2);
                    }
                }
                let rel = if flags & BKPBLOCK_SAME_REL != 0 {
                    match last_rel {
                        Some(r) => r,
                        None => {
                            return Ok(None);
                        }
                    }
                } else {
                    let at = need!(12);
                    RelId {
                        spc: u32_at(rec, at),
                        db: u32_at(rec, at + 4),
                        rel: u32_at(rec, at + 8),
                    }
                };
                last_rel = Some(rel);
                let at = need!(4);
                blocks.push(BlockRef {
                    rel,
                    fork: flags & BKPBLOCK_FORK_MASK,
                    block: u32_at(rec, at),
                });
            }
            _ => {
                return Ok(None);
            }
        }
    }
    // Block data and main data follow the headers, in that order.
    if remaining != datatotal || p > tot_len {
        return Ok(None);
    }
    Ok(Some(Headers { blocks, main_len }))
}

fn rel_at(m: &[u8], at: usize) -> RelId {
    RelId {
        spc: u32_at(m, at),
        db: u32_at(m, at + 4),
        rel: u32_at(m, at + 8),
    }
}

/// The changes of a record flagged XLR_SPECIAL_REL_UPDATE, from its main data; None when
/// the record type is not known here.
fn special_changes(rmid: u8, info: u8, m: &[u8], fmt: Format) -> Option<Vec<Change>> {
    match (rmid, info) {
        // xl_smgr_create: RelFileNode, ForkNumber.
        (RM_SMGR, XLOG_SMGR_CREATE) if m.len() >= 16 => Some(vec![Change::Create {
            rel: rel_at(m, 0),
            fork: u32_at(m, 12) as u8,
        }]),
        // xl_smgr_truncate: BlockNumber, RelFileNode, flags.
        (RM_SMGR, XLOG_SMGR_TRUNCATE) if m.len() >= 20 => {
            let rel = rel_at(m, 4);
            let flags = u32_at(m, 16);
            Some(if flags & SMGR_TRUNCATE_HEAP != 0 {
                vec![Change::Truncate {
                    rel,
                    blocks: u32_at(m, 0),
                }]
            } else {
                Vec::new()
            })
        }
        (RM_DBASE, code) => dbase(code, m, fmt.major),
        _ => None,
    }
}

/// Database records. Up to 14: CREATE 0x00 (a file copy), DROP 0x10. From 15: CREATE
/// FILE_COPY 0x00, CREATE WAL_LOG 0x10 (its files come as full-page images, so only the
/// directory is new), DROP 0x20.
fn dbase(code: u8, m: &[u8], major: u32) -> Option<Vec<Change>> {
    let drop_code = if major < 15 { 0x10 } else { 0x20 };
    if code == 0x00 && m.len() >= 8 {
        // xl_dbase_create(_file_copy)_rec: db_id, tablespace_id, src_db_id, src_tablespace_id.
        return Some(vec![Change::Database {
            db: u32_at(m, 0),
            spc: u32_at(m, 4),
        }]);
    }
    if major >= 15 && code == 0x10 {
        return Some(Vec::new());
    }
    if code == drop_code && m.len() >= 8 {
        // xl_dbase_drop_rec: db_id, ntablespaces, tablespace_ids[].
        let db = u32_at(m, 0);
        let n = u32_at(m, 4) as usize;
        if m.len() < 8 + 4 * n {
            return None;
        }
        return Some(
            (0..n)
                .map(|i| Change::Database {
                    db,
                    spc: u32_at(m, 8 + 4 * i),
                })
                .collect(),
        );
    }
    None
}

#[cfg(test)]
#[path = "walrecord_tests.rs"]
mod tests;
