//! The logical page check (RMAN's CHECK LOGICAL): the structure inside a heap or B-tree page,
//! which a checksum cannot judge when the damage was written with a valid checksum (a bug in
//! the server, a tool that edits pages, memory corruption before the write). The rules are the
//! ones PostgreSQL's own code relies on when it reads a page, as amcheck checks them: the item
//! array ends at `pd_lower` on a line pointer boundary, each item with storage lies between
//! `pd_upper` and `pd_special`, is MAXALIGNed, is long enough for its tuple header, and no two
//! items overlap.
//!
//! Only pages whose kind can be told from the page alone are checked: heap pages (no special
//! space) and B-tree pages other than the metapage and deleted pages (16 bytes of special
//! space ending in a cycle id, which hash and GiST pages mark with their page ids instead).
//! Other access methods' pages keep the header check.

use crate::layout::{BLCKSZ, MAXALIGN, SIZE_OF_PAGE_HEADER};

/// Line pointer flags (`lp_flags`).
const LP_UNUSED: u8 = 0;
const LP_NORMAL: u8 = 1;
const LP_REDIRECT: u8 = 2;

/// `SizeofHeapTupleHeader`: a heap tuple is never shorter.
const SIZEOF_HEAP_TUPLE_HEADER: u16 = 23;
/// `MaxHeapTuplesPerPage` for 8 KiB pages.
const MAX_HEAP_TUPLES_PER_PAGE: usize = 291;
/// `sizeof(IndexTupleData)`.
const SIZEOF_INDEX_TUPLE: u16 = 8;
/// `sizeof(BTPageOpaqueData)`, also the size of hash and GiST special space.
const BT_SPECIAL: usize = 16;
/// `BTP_DELETED | BTP_META`: pages whose item area holds no index tuples.
const BTP_NO_ITEMS: u16 = (1 << 2) | (1 << 3);
/// Cycle ids stop below this; hash (0xFF80) and GiST (0xFF81) put their page ids there.
const MAX_BT_CYCLE_ID: u16 = 0xFF7F;

/// Which structure a page has, as far as the logical check knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    Heap,
    Btree,
    /// A metapage, a deleted B-tree page, or another access method's page.
    Other,
}

fn u16_at(p: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([p[at], p[at + 1]])
}

/// The kind of an initialised main-fork page.
pub fn page_kind(page: &[u8]) -> PageKind {
    let special = u16_at(page, 16) as usize;
    if special == BLCKSZ {
        return PageKind::Heap;
    }
    if special == BLCKSZ - BT_SPECIAL {
        let cycle_id = u16_at(page, BLCKSZ - 2);
        let flags = u16_at(page, special + 12);
        if cycle_id <= MAX_BT_CYCLE_ID && flags & BTP_NO_ITEMS == 0 {
            return PageKind::Btree;
        }
    }
    PageKind::Other
}

/// A line pointer: `lp_off:15, lp_flags:2, lp_len:15`, little-endian.
fn line_pointer(page: &[u8], n: usize) -> (u16, u8, u16) {
    let at = SIZE_OF_PAGE_HEADER + 4 * n;
    let w = u32::from_le_bytes([page[at], page[at + 1], page[at + 2], page[at + 3]]);
    (
        (w & 0x7FFF) as u16,
        ((w >> 15) & 0x3) as u8,
        (w >> 17) as u16,
    )
}

/// Why the logical check failed: the line pointer (1-based offset number, 0 for the page) and
/// the rule it breaks.
pub type LogicalFault = (u16, &'static str);

/// Checks the structure inside a heap or B-tree page whose header already passed
/// [`crate::verify_page`]; a new (all-zero) page and pages of other kinds pass. `page` must be
/// `BLCKSZ` long.
pub fn check_logical(page: &[u8]) -> Result<(), LogicalFault> {
    if page.len() != BLCKSZ || u16_at(page, 14) == 0 {
        return Ok(());
    }
    let kind = page_kind(page);
    if kind == PageKind::Other {
        return Ok(());
    }
    let lower = u16_at(page, 12) as usize;
    let upper = u16_at(page, 14);
    let special = u16_at(page, 16);
    if lower < SIZE_OF_PAGE_HEADER || !(lower - SIZE_OF_PAGE_HEADER).is_multiple_of(4) {
        return Err((0, "pd_lower does not end on a line pointer"));
    }
    let nline = (lower - SIZE_OF_PAGE_HEADER) / 4;
    if kind == PageKind::Heap && nline > MAX_HEAP_TUPLES_PER_PAGE {
        return Err((0, "more line pointers than a heap page holds"));
    }
    let mut stored: Vec<(u16, u16, u16)> = Vec::with_capacity(nline);
    for i in 0..nline {
        let item = (i + 1) as u16;
        let (off, flags, len) = line_pointer(page, i);
        match flags {
            LP_UNUSED => continue,
            LP_REDIRECT => {
                if kind == PageKind::Btree {
                    return Err((item, "redirect line pointer on a B-tree page"));
                }
                if off == 0 || off as usize > nline || len != 0 {
                    return Err((item, "redirect to an offset outside the line pointer array"));
                }
                continue;
            }
            // LP_DEAD items of the heap usually have no storage; B-tree's keep their tuple.
            _ if len == 0 => {
                if flags == LP_NORMAL {
                    return Err((item, "normal line pointer with lp_len 0"));
                }
                continue;
            }
            _ => {}
        }
        if off < upper || off as u32 + len as u32 > special as u32 {
            return Err((item, "item outside pd_upper..pd_special"));
        }
        if !off.is_multiple_of(MAXALIGN) {
            return Err((item, "item offset not MAXALIGNed"));
        }
        let tuple = &page[off as usize..(off + len) as usize];
        match kind {
            PageKind::Heap => {
                if len < SIZEOF_HEAP_TUPLE_HEADER {
                    return Err((item, "lp_len shorter than a heap tuple header"));
                }
                let hoff = tuple[22] as u16;
                if hoff < SIZEOF_HEAP_TUPLE_HEADER + 1
                    || !hoff.is_multiple_of(MAXALIGN)
                    || hoff > len
                {
                    return Err((item, "t_hoff outside the tuple"));
                }
            }
            _ => {
                if len < SIZEOF_INDEX_TUPLE {
                    return Err((item, "lp_len shorter than an index tuple header"));
                }
                if u16_at(tuple, 6) & 0x1FFF != len {
                    return Err((item, "index tuple size is not lp_len"));
                }
            }
        }
        stored.push((off, len, item));
    }
    stored.sort_unstable();
    for w in stored.windows(2) {
        if w[0].0 as u32 + w[0].1 as u32 > w[1].0 as u32 {
            return Err((w[1].2.max(w[0].2), "items overlap"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A heap page of three 64-byte tuples packed from the end, as PageAddItem places them.
    fn heap() -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        let nline = 3u16;
        let lower = SIZE_OF_PAGE_HEADER as u16 + 4 * nline;
        let upper = BLCKSZ as u16 - 64 * nline;
        p[12..14].copy_from_slice(&lower.to_le_bytes());
        p[14..16].copy_from_slice(&upper.to_le_bytes());
        p[16..18].copy_from_slice(&(BLCKSZ as u16).to_le_bytes());
        p[18..20].copy_from_slice(&0x2004u16.to_le_bytes());
        for i in 0..nline {
            let off = BLCKSZ as u16 - 64 * (i + 1);
            set_lp(&mut p, i as usize, off, LP_NORMAL, 64);
            p[off as usize + 22] = 24;
        }
        p
    }

    fn set_lp(p: &mut [u8], n: usize, off: u16, flags: u8, len: u16) {
        let w = off as u32 | (flags as u32) << 15 | (len as u32) << 17;
        let at = SIZE_OF_PAGE_HEADER + 4 * n;
        p[at..at + 4].copy_from_slice(&w.to_le_bytes());
    }

    #[test]
    fn a_sane_heap_page_passes_and_each_broken_rule_is_named() {
        let p = heap();
        assert_eq!(page_kind(&p), PageKind::Heap);
        assert_eq!(check_logical(&p), Ok(()));

        let mut q = p.clone();
        set_lp(&mut q, 2, BLCKSZ as u16 - 64 + 8, LP_NORMAL, 64);
        assert_eq!(
            check_logical(&q),
            Err((3, "item outside pd_upper..pd_special"))
        );
        let mut q = p.clone();
        set_lp(&mut q, 2, BLCKSZ as u16 - 64 * 3 + 32, LP_NORMAL, 64);
        q[BLCKSZ - 64 * 3 + 32 + 22] = 24;
        assert_eq!(check_logical(&q), Err((3, "items overlap")));
        let mut q = p.clone();
        set_lp(&mut q, 1, BLCKSZ as u16 - 128, LP_NORMAL, 8);
        assert_eq!(
            check_logical(&q).unwrap_err().1,
            "lp_len shorter than a heap tuple header"
        );
        let mut q = p.clone();
        set_lp(&mut q, 0, 9, LP_REDIRECT, 0);
        assert_eq!(check_logical(&q).unwrap_err().0, 1);
        let mut q = p.clone();
        q[12] += 2;
        assert_eq!(check_logical(&q).unwrap_err().0, 0);
        // Redirects, dead and unused pointers without storage are fine.
        let mut q = p;
        set_lp(&mut q, 0, 2, LP_REDIRECT, 0);
        set_lp(&mut q, 1, 0, 3, 0);
        set_lp(&mut q, 2, 0, LP_UNUSED, 0);
        assert_eq!(check_logical(&q), Ok(()));
    }

    #[test]
    fn btree_pages_are_checked_and_metapages_left_alone() {
        let mut p = vec![0u8; BLCKSZ];
        let special = (BLCKSZ - BT_SPECIAL) as u16;
        p[12..14].copy_from_slice(&(SIZE_OF_PAGE_HEADER as u16 + 4).to_le_bytes());
        p[14..16].copy_from_slice(&(special - 16).to_le_bytes());
        p[16..18].copy_from_slice(&special.to_le_bytes());
        set_lp(&mut p, 0, special - 16, LP_NORMAL, 16);
        p[special as usize - 16 + 6..special as usize - 16 + 8]
            .copy_from_slice(&16u16.to_le_bytes());
        assert_eq!(page_kind(&p), PageKind::Btree);
        assert_eq!(check_logical(&p), Ok(()));
        set_lp(&mut p, 0, special - 16, LP_NORMAL, 24);
        assert!(check_logical(&p).is_err());
        // The metapage's item area holds its metadata, not tuples.
        p[special as usize + 12] = 1 << 3;
        assert_eq!(page_kind(&p), PageKind::Other);
        assert_eq!(check_logical(&p), Ok(()));
    }
}
