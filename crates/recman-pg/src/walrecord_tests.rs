use super::*;

const SEG: usize = 4 * WAL_PAGE;
const SEG_LSN: u64 = 0x0300_0000;

/// Lays records out as PostgreSQL does: page headers (long on the first page), records
/// 8-aligned, split across pages with continuation headers.
struct Builder {
    payload: Vec<u8>,
    starts: Vec<usize>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            payload: Vec::new(),
            starts: Vec::new(),
        }
    }

    fn record(&mut self, rmid: u8, info: u8, body: &[u8]) {
        let tot = (RECORD_HEADER + body.len()) as u32;
        let mut r = Vec::new();
        r.extend_from_slice(&tot.to_le_bytes());
        r.extend_from_slice(&7u32.to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes());
        r.push(info);
        r.push(rmid);
        r.extend_from_slice(&[0, 0]);
        let c = crc32c::crc32c(body);
        let c = crc32c::crc32c_append(c, &r[..20]);
        r.extend_from_slice(&c.to_le_bytes());
        r.extend_from_slice(body);
        while !self.payload.len().is_multiple_of(8) {
            self.payload.push(0);
        }
        self.starts.push(self.payload.len());
        self.payload.extend_from_slice(&r);
    }

    /// The segment, and the byte offset (in the segment) of each record.
    fn segment(&self, magic: u16) -> (Vec<u8>, Vec<usize>) {
        self.pages(magic, SEG)
    }

    /// Like [`Builder::segment`], `size` bytes long.
    fn pages(&self, magic: u16, size: usize) -> (Vec<u8>, Vec<usize>) {
        let mut seg = vec![0u8; size];
        let mut src = 0usize;
        let mut offsets = Vec::new();
        let mut next_start = 0;
        for page in 0..size / WAL_PAGE {
            let at = page * WAL_PAGE;
            let long = page == 0;
            let hl = if long { LONG_HEADER } else { SHORT_HEADER };
            let mut info = if long { XLP_LONG_HEADER } else { 0 };
            // Bytes of a record begun on an earlier page.
            let rem = if src > 0 && src < self.payload.len() {
                let cur = self.starts.iter().rev().find(|&&s| s < src).copied();
                cur.map(|s| {
                    let tot = u32::from_le_bytes(self.payload[s..s + 4].try_into().unwrap());
                    (s + tot as usize).saturating_sub(src)
                })
                .unwrap_or(0)
            } else {
                0
            };
            if rem > 0 {
                info |= XLP_FIRST_IS_CONTRECORD;
            }
            seg[at..at + 2].copy_from_slice(&magic.to_le_bytes());
            seg[at + 2..at + 4].copy_from_slice(&info.to_le_bytes());
            seg[at + 8..at + 16].copy_from_slice(&(SEG_LSN + at as u64).to_le_bytes());
            seg[at + 16..at + 20].copy_from_slice(&(rem as u32).to_le_bytes());
            let room = WAL_PAGE - hl;
            for i in 0..room {
                if src >= self.payload.len() {
                    break;
                }
                if next_start < self.starts.len() && self.starts[next_start] == src {
                    offsets.push(at + hl + i);
                    next_start += 1;
                }
                seg[at + hl + i] = self.payload[src];
                src += 1;
            }
        }
        (seg, offsets)
    }
}

fn block_header(id: u8, flags: u8, data_len: u16) -> Vec<u8> {
    let mut v = vec![id, flags];
    v.extend_from_slice(&data_len.to_le_bytes());
    v
}

fn rel_bytes(r: RelId) -> Vec<u8> {
    [r.spc, r.db, r.rel]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

const REL: RelId = RelId {
    spc: 1663,
    db: 5,
    rel: 16384,
};

/// A heap-like record: block 0 with data and a full-page image with a hole, block 1 of the
/// same relation, then main data.
fn two_block_record(image: usize) -> Vec<u8> {
    let mut b = block_header(0, BKPBLOCK_HAS_IMAGE | BKPBLOCK_HAS_DATA, 10);
    b.extend_from_slice(&(image as u16).to_le_bytes());
    b.extend_from_slice(&100u16.to_le_bytes());
    b.push(BKPIMAGE_HAS_HOLE);
    b.extend(rel_bytes(REL));
    b.extend_from_slice(&42u32.to_le_bytes());
    b.extend(block_header(1, BKPBLOCK_SAME_REL | 2, 0));
    b.extend_from_slice(&9u32.to_le_bytes());
    b.extend([XLR_BLOCK_ID_DATA_SHORT, 3]);
    b.extend(vec![0xAB; 10 + image + 3]);
    b
}

fn decode_all(seg: &[u8]) -> (Vec<Change>, Coverage) {
    let mut v = Vec::new();
    let cov = decode_segment(seg, SEG_LSN, &mut |c| v.push(c)).unwrap();
    (v, cov)
}

fn block(fork: u8, block: u32) -> Change {
    Change::Block(BlockRef {
        rel: REL,
        fork,
        block,
    })
}

#[test]
fn decodes_block_references_across_pages() {
    let mut b = Builder::new();
    b.record(10, 0, &two_block_record(100));
    // Long enough to span a page boundary.
    b.record(10, 0, &two_block_record(9000));
    b.record(10, 0, &two_block_record(50));
    let (seg, _) = b.segment(0xD110);
    let (changes, cov) = decode_all(&seg);
    assert_eq!(
        changes,
        [0, 1, 2]
            .iter()
            .flat_map(|_| [block(0, 42), block(2, 9)])
            .collect::<Vec<_>>()
    );
    // The zeros after the last record end the decoded part.
    assert!(!cov.whole);
    assert!(cov.end_lsn > SEG_LSN + 9000);
}

#[test]
fn a_damaged_record_ends_decoding_there() {
    let mut b = Builder::new();
    b.record(10, 0, &two_block_record(100));
    b.record(10, 0, &two_block_record(100));
    let (mut seg, offsets) = b.segment(0xD110);
    seg[offsets[1] + 40] ^= 1;
    let (changes, cov) = decode_all(&seg);
    assert_eq!(changes.len(), 2);
    assert_eq!(cov.end_lsn, SEG_LSN + offsets[1] as u64);
}

#[test]
fn smgr_and_database_records_by_major() {
    let mut body = vec![XLR_BLOCK_ID_DATA_SHORT, 20];
    body.extend_from_slice(&5u32.to_le_bytes());
    body.extend(rel_bytes(REL));
    body.extend_from_slice(&7u32.to_le_bytes());
    let mut drop = vec![XLR_BLOCK_ID_DATA_SHORT, 12];
    drop.extend_from_slice(&77u32.to_le_bytes());
    drop.extend_from_slice(&1u32.to_le_bytes());
    drop.extend_from_slice(&1663u32.to_le_bytes());
    for (magic, drop_code) in [(0xD106u16, 0x10u8), (0xD113, 0x20)] {
        let mut b = Builder::new();
        b.record(RM_SMGR, XLOG_SMGR_TRUNCATE | XLR_SPECIAL_REL_UPDATE, &body);
        b.record(RM_DBASE, drop_code | XLR_SPECIAL_REL_UPDATE, &drop);
        // An unknown record type flagged as changing relation files.
        b.record(
            RM_HEAP,
            0x70 | XLR_SPECIAL_REL_UPDATE,
            &[XLR_BLOCK_ID_DATA_SHORT, 0],
        );
        b.record(RM_XLOG, XLOG_SWITCH, &[]);
        let (seg, offsets) = b.segment(magic);
        let (changes, cov) = decode_all(&seg);
        assert_eq!(
            changes,
            vec![
                Change::Truncate {
                    rel: REL,
                    blocks: 5
                },
                Change::Database { spc: 1663, db: 77 },
                Change::Unknown {
                    lsn: SEG_LSN + offsets[2] as u64,
                    rmid: RM_HEAP,
                    info: 0x71
                },
            ]
        );
        assert!(cov.whole, "a WAL switch ends the segment");
    }
}

const RM_HEAP: u8 = 10;

#[test]
fn a_record_continued_from_the_previous_segment_is_skipped() {
    let mut b = Builder::new();
    b.record(10, 0, &two_block_record(100));
    let (mut seg, _) = b.segment(0xD110);
    // Pretend the first 16 payload bytes continue a record of the segment before, and
    // rebuild the segment with that prefix.
    let mut b2 = Builder::new();
    b2.payload = vec![0xEE; 16];
    b2.record(10, 0, &two_block_record(100));
    b2.starts.remove(0);
    let (seg2, _) = b2.segment(0xD110);
    seg.copy_from_slice(&seg2);
    let info = u16_at(&seg, 2) | XLP_FIRST_IS_CONTRECORD;
    seg[2..4].copy_from_slice(&info.to_le_bytes());
    seg[16..20].copy_from_slice(&16u32.to_le_bytes());
    let (changes, _) = decode_all(&seg);
    assert_eq!(changes, vec![block(0, 42), block(2, 9)]);
}

#[test]
fn refuses_a_segment_of_an_unknown_major() {
    let (seg, _) = Builder::new().segment(0xD0FF);
    assert!(decode_segment(&seg, SEG_LSN, &mut |_| {}).is_err());
}

#[test]
fn a_record_whose_headers_a_segment_cuts_is_completed_by_the_next() {
    let mut b = Builder::new();
    // A filler ending 16 bytes before the segment's end, then a two-block record.
    let room = (WAL_PAGE - LONG_HEADER) + 3 * (WAL_PAGE - SHORT_HEADER);
    let body = room - 16 - RECORD_HEADER;
    let mut filler = vec![XLR_BLOCK_ID_DATA_LONG];
    filler.extend_from_slice(&((body - 5) as u32).to_le_bytes());
    filler.extend(vec![0u8; body - 5]);
    b.record(10, 0, &filler);
    b.record(10, 0, &two_block_record(100));
    let (both, offsets) = b.pages(0xD110, 2 * SEG);
    assert_eq!(offsets[1], SEG - 16);
    let (first, second) = both.split_at(SEG);
    let mut seen = Vec::new();
    let (_, ends1) = decode_segment_ends(first, SEG_LSN, &mut |c| seen.push(c)).unwrap();
    assert!(seen.is_empty(), "{seen:?}");
    let (lsn, prefix) = ends1.cut.clone().expect("the cut record is kept");
    assert_eq!((lsn, prefix.len()), (SEG_LSN + SEG as u64 - 16, 16));
    let (_, ends2) =
        decode_segment_ends(second, SEG_LSN + SEG as u64, &mut |c| seen.push(c)).unwrap();
    assert!(
        seen.is_empty(),
        "the continued record is not decoded on its own"
    );
    assert!(decode_cut_record(
        &prefix,
        &ends2.cont,
        lsn,
        ends1.magic,
        &mut |c| seen.push(c)
    ));
    assert_eq!(seen, vec![block(0, 42), block(2, 9)]);
    assert!(!decode_cut_record(
        &prefix,
        &ends2.cont[..4],
        lsn,
        ends1.magic,
        &mut |_| {}
    ));
}

/// A record referencing block `block` of fork `fork` of relation `rel` of database 5, then
/// block `block + 1` of the same fork, with three bytes of main data.
fn ref_record(rel: u32, fork: u8, block: u32) -> Vec<u8> {
    let mut b = block_header(0, fork, 0);
    b.extend(rel_bytes(RelId { rel, ..REL }));
    b.extend_from_slice(&block.to_le_bytes());
    b.extend(block_header(1, BKPBLOCK_SAME_REL | fork, 0));
    b.extend_from_slice(&(block + 1).to_le_bytes());
    b.extend([XLR_BLOCK_ID_DATA_SHORT, 3]);
    b.extend([0xCD; 3]);
    b
}

#[test]
fn a_summary_holds_each_reference_once_whatever_their_order() {
    // Forks in and out of order, repeats next to each other and far apart, blocks above
    // 2^31 and a relation number that would collide with a block if the two were mixed.
    let mut b = Builder::new();
    let mut x = 7u32;
    for i in 0..300u32 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        // Past 200 records, 40 relations more: the fork numbers go from a scan to a map.
        let rel = if i < 200 {
            [16384, 16390, 3, 16384][(x >> 7) as usize % 4]
        } else {
            20_000 + (x >> 7) % 40
        };
        let fork = [0, 0, 1, 2][(x >> 11) as usize % 4];
        let block = if i % 50 == 0 {
            u32::MAX - 1 - i
        } else {
            (x >> 16) % 40
        };
        b.record(10, 0, &ref_record(rel, fork, block));
        if i % 3 == 0 {
            b.record(10, 0, &ref_record(rel, fork, block));
        }
    }
    let (seg, _) = b.pages(0xD110, 64 * WAL_PAGE);
    let (changes, _) = {
        let mut v = Vec::new();
        let cov = decode_segment(&seg, SEG_LSN, &mut |c| v.push(c)).unwrap();
        (v, cov)
    };
    assert_eq!(changes.len(), 800, "two references in each of 400 records");
    let mut expected = crate::walsummary::SegmentSummary::default();
    for c in changes {
        expected.add(c);
    }
    let built = crate::walsummary::SegmentSummary::build(&seg, SEG_LSN).unwrap();
    assert_eq!(built.blocks, expected.blocks);
    assert!(
        built.blocks.len() > 40,
        "{} forks, more than a scan takes",
        built.blocks.len()
    );
}
