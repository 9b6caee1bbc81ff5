//! Page checks against real PostgreSQL 15 pages (see fixtures/README.md).
#![allow(clippy::needless_range_loop)]

use recman_page::*;

const FIXTURE: &[u8] = include_bytes!("fixtures/pg15_pages.bin");

/// (source, absolute block number) of each fixture page, in order.
const PAGES: &[(&str, u32)] = &[
    ("global/1262", 0),
    ("base/1/1259", 0),
    ("base/1/1259", 1),
    ("base/1/1259", 2),
    ("base/5/16384.1", RELSEG_SIZE),
    ("base/5/16384.1", RELSEG_SIZE + 7),
    ("base/5/16384_fsm", 2),
];

fn page(i: usize) -> Vec<u8> {
    FIXTURE[i * BLCKSZ..(i + 1) * BLCKSZ].to_vec()
}

fn blkno_of(i: usize) -> u32 {
    let (path, blk_in_file) = PAGES[i];
    // The absolute block number must agree with the file's classification.
    let rf = classify(path).expect("fixture path classifies");
    assert_eq!(rf.first_block() + blk_in_file % RELSEG_SIZE, blk_in_file);
    blk_in_file
}

#[test]
fn fixture_has_all_pages() {
    assert_eq!(FIXTURE.len(), PAGES.len() * BLCKSZ);
}

#[test]
fn real_pages_checksum_matches() {
    for i in 0..PAGES.len() {
        let p = page(i);
        let blkno = blkno_of(i);
        assert_eq!(
            checksum_page(&p, blkno),
            page_checksum_field(&p),
            "page {i} ({} block {blkno})",
            PAGES[i].0
        );
        assert_eq!(verify_page(&p, blkno, true), Ok(()), "page {i}");
        assert_eq!(verify_page(&p, blkno, false), Ok(()), "page {i}");
        assert_ne!(page_lsn(&p), 0, "page {i} has an LSN");
    }
}

#[test]
fn block_number_is_mixed_in() {
    for i in 0..PAGES.len() {
        let p = page(i);
        let blkno = blkno_of(i);
        let wrong = blkno ^ 1;
        assert_ne!(checksum_page(&p, wrong), page_checksum_field(&p));
        let err = verify_page(&p, wrong, true).unwrap_err();
        assert!(matches!(err, PageFault::Checksum { .. }), "{err:?}");
        // A segment-1 page checked with its in-file block number fails.
        if blkno >= RELSEG_SIZE {
            assert!(verify_page(&p, blkno - RELSEG_SIZE, true).is_err());
        }
    }
}

#[test]
fn stored_checksum_is_ignored_while_computing() {
    let mut p = page(1);
    let c = checksum_page(&p, 0);
    p[8] ^= 0xff;
    p[9] ^= 0x5a;
    assert_eq!(checksum_page(&p, 0), c);
    // ...but pd_flags (bytes 10..12, same 32-bit word) is included.
    let mut q = page(1);
    q[10] ^= 0x01;
    assert_ne!(checksum_page(&q, 0), c);
}

#[test]
fn flipped_byte_gives_checksum_fault() {
    for &(i, off) in &[(0usize, 100usize), (1, 4000), (4, 8191), (6, 30), (3, 0)] {
        let mut p = page(i);
        let blkno = blkno_of(i);
        let stored = page_checksum_field(&p);
        p[off] ^= 0x10;
        let err = verify_page(&p, blkno, true).unwrap_err();
        match err {
            PageFault::Checksum {
                stored: s,
                computed,
            } => {
                assert_eq!(s, stored);
                assert_ne!(computed, stored);
                assert_eq!(computed, checksum_page(&p, blkno));
            }
            other => panic!("page {i} offset {off}: {other:?}"),
        }
        assert_eq!(err.kind(), "CHECKSUM");
        // Without checksums the body change goes unnoticed.
        if off >= SIZE_OF_PAGE_HEADER {
            assert_eq!(verify_page(&p, blkno, false), Ok(()));
        }
    }
}

#[test]
fn checksum_is_in_range() {
    let mut p = vec![0u8; BLCKSZ];
    let mut x = 0x1234_5678u32;
    for round in 0..200u32 {
        for b in p.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        let c = checksum_page(&p, round);
        assert!(c >= 1);
    }
}

#[test]
fn all_zero_page_is_ok() {
    let p = vec![0u8; BLCKSZ];
    assert_eq!(verify_page(&p, 0, true), Ok(()));
    assert_eq!(verify_page(&p, 12345, false), Ok(()));
    assert!(is_all_zero(&p));
}

#[test]
fn new_page_with_data_is_not_all_zero() {
    let mut p = vec![0u8; BLCKSZ];
    p[5000] = 1;
    let err = verify_page(&p, 0, true).unwrap_err();
    assert_eq!(err, PageFault::NotAllZero);
    assert_eq!(err.kind(), "ALL ZERO");
    assert_eq!(verify_page(&p, 0, false), Err(PageFault::NotAllZero));

    // A real page whose pd_upper was zeroed.
    let mut q = page(1);
    q[14] = 0;
    q[15] = 0;
    assert_eq!(verify_page(&q, 0, true), Err(PageFault::NotAllZero));
    // Last byte only.
    let mut r = vec![0u8; BLCKSZ];
    r[BLCKSZ - 1] = 0x80;
    assert_eq!(verify_page(&r, 0, false), Err(PageFault::NotAllZero));
}

fn set_u16(p: &mut [u8], off: usize, v: u16) {
    p[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// Re-stamps the checksum so that only the header rules can fail.
fn restamp(p: &mut [u8], blkno: u32) {
    let c = checksum_page(p, blkno);
    set_u16(p, 8, c);
}

#[test]
fn header_faults() {
    let base = page(1);
    let hdr = PageHeader::parse(&base);
    assert!(hdr.lower <= hdr.upper);

    let cases: Vec<(usize, u16, &str)> = vec![
        (12, hdr.upper + 8, "pd_lower > pd_upper"),
        (14, hdr.special + 8, "pd_upper > pd_special"),
        (16, 8200, "pd_upper > pd_special"), // special beyond page, upper still below
        (10, 0x0008, "invalid flag bits in pd_flags"),
        (18, 0x2005, "page layout version is not 4"),
        (18, 0x1004, "page size field is not 8192"),
    ];
    for (off, val, want) in cases {
        let mut p = base.clone();
        set_u16(&mut p, off, val);
        restamp(&mut p, 0);
        let err = verify_page(&p, 0, true).unwrap_err();
        assert_eq!(err.kind(), "CORRUPT", "{off}:{val:#x} {err}");
        if off == 16 {
            // pd_special 8200 > BLCKSZ: whichever rule trips first, it is a header fault.
            assert!(matches!(err, PageFault::Header { .. }));
        } else {
            assert_eq!(err, PageFault::Header { reason: want }, "{off}:{val:#x}");
        }
        // Also reported with checksums off.
        assert!(matches!(
            verify_page(&p, 0, false),
            Err(PageFault::Header { .. })
        ));
        // Without re-stamping, the checksum fault wins.
        let mut q = base.clone();
        set_u16(&mut q, off, val);
        assert!(matches!(
            verify_page(&q, 0, true),
            Err(PageFault::Checksum { .. })
        ));
    }
}

#[test]
fn special_must_be_maxaligned_and_within_page() {
    let mut p = vec![0u8; BLCKSZ];
    set_u16(&mut p, 12, 24);
    set_u16(&mut p, 14, 8000);
    set_u16(&mut p, 16, 8188);
    set_u16(&mut p, 18, 0x2004);
    p[100] = 1;
    assert_eq!(
        verify_page(&p, 0, false),
        Err(PageFault::Header {
            reason: "pd_special not MAXALIGNed"
        })
    );
    set_u16(&mut p, 16, 8192);
    assert_eq!(verify_page(&p, 0, false), Ok(()));
    restamp(&mut p, 77);
    assert_eq!(verify_page(&p, 77, true), Ok(()));
    assert!(verify_page(&p, 78, true).is_err());
}

#[test]
fn short_page_is_a_header_fault() {
    let err = verify_page(&[0u8; 100], 0, true).unwrap_err();
    assert!(matches!(err, PageFault::Header { .. }));
}

#[test]
fn display_texts() {
    let f = PageFault::Checksum {
        stored: 0x1a2b,
        computed: 0x3c4d,
    };
    assert_eq!(
        f.to_string(),
        "checksum mismatch: stored 0x1a2b, computed 0x3c4d"
    );
    let f = PageFault::Checksum {
        stored: 0x1,
        computed: 0xff,
    };
    assert_eq!(
        f.to_string(),
        "checksum mismatch: stored 0x0001, computed 0x00ff"
    );
    assert_eq!(
        PageFault::Header {
            reason: "pd_lower > pd_upper"
        }
        .to_string(),
        "invalid page header: pd_lower > pd_upper"
    );
    assert!(PageFault::NotAllZero.to_string().contains("not all zeros"));
}

#[test]
fn verify_pages_reports_bad_blocks() {
    let mut buf = FIXTURE[BLCKSZ..4 * BLCKSZ].to_vec(); // base/1/1259 blocks 0..3
    assert!(verify_pages(&buf, 0, true).is_empty());
    buf[BLCKSZ + 500] ^= 1;
    let faults = verify_pages(&buf, 0, true);
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0].0, 1);
    assert_eq!(faults[0].1.kind(), "CHECKSUM");
}
