//! The backup planner: files and settings in, backup sets assigned to channels out. A pure
//! value, so that it can be printed and tested without I/O.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanSettings {
    pub channels: u32,
    pub filesperset: u32,
    pub maxopenfiles: u32,
    /// RMAN's SECTION SIZE: files larger than this become multisection sets.
    pub section_size: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedSet {
    pub set_no: u32,
    pub channel: u32,
    /// Indices into the input file list, largest first.
    pub files: Vec<usize>,
    pub bytes: u64,
    /// Files read at once and interleaved into the piece: min(MAXOPENFILES, files in set).
    pub mux: u32,
    /// Byte ranges of a multisection set (one file, one piece per range); empty otherwise.
    pub sections: Vec<(u64, u64)>,
}

/// The most sections one file is split into, as RMAN allows.
pub const MAX_SECTIONS: u64 = 256;

/// Sections of a file of `size` bytes: `section` rounded up to whole pages, grown so that
/// there are at most [`MAX_SECTIONS`]; none when the file is not larger than a section.
pub fn sections(size: u64, section: u64) -> Vec<(u64, u64)> {
    let page = recman_page::BLCKSZ as u64;
    let mut sec = section.max(page).div_ceil(page) * page;
    if size <= sec {
        return Vec::new();
    }
    if size.div_ceil(sec) > MAX_SECTIONS {
        sec = size.div_ceil(MAX_SECTIONS).div_ceil(page) * page;
    }
    (0..size.div_ceil(sec))
        .map(|i| (i * sec, ((i + 1) * sec).min(size)))
        .collect()
}

/// Smallest section the planner chooses by itself: below it the extra pieces cost more than
/// the balance gains.
pub const AUTO_SECTION_MIN: u64 = 64 << 20;

/// The section size used when none is set: a file larger than a quarter of one channel's share
/// is split, so that no channel is left alone with one large file (a 1 GB relation segment in
/// a small database) while the others are done. Large databases with many files are balanced
/// by whole files and get no sections.
pub fn auto_section(sizes: &[u64], channels: u32) -> Option<u64> {
    if channels < 2 {
        return None;
    }
    let total: u64 = sizes.iter().sum();
    let sec = (total / (channels as u64 * 4)).max(AUTO_SECTION_MIN);
    sizes.iter().any(|&x| x > sec).then_some(sec)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub sets: Vec<PlannedSet>,
    pub files_per_set: u32,
}

impl Plan {
    pub fn sets_of(&self, channel: u32) -> impl Iterator<Item = &PlannedSet> {
        self.sets.iter().filter(move |s| s.channel == channel)
    }
}

/// RMAN's rules, balanced by bytes: files per set = min(FILESPERSET, ceil(files / channels))
/// at most; the number of sets is rounded up to a multiple of the channels; files go, largest
/// first, into the lightest set that still has room; sets go, heaviest first, to the lightest
/// channel.
pub fn plan(sizes: &[u64], s: PlanSettings) -> Plan {
    let s = PlanSettings {
        section_size: s.section_size.or_else(|| auto_section(sizes, s.channels)),
        ..s
    };
    let sectioned: Vec<usize> = match s.section_size {
        Some(sec) => (0..sizes.len())
            .filter(|&i| !sections(sizes[i], sec).is_empty())
            .collect(),
        None => Vec::new(),
    };
    let rest: Vec<usize> = (0..sizes.len())
        .filter(|i| !sectioned.contains(i))
        .collect();
    let rest_sizes: Vec<u64> = rest.iter().map(|&i| sizes[i]).collect();
    let mut p = plan_sets(&rest_sizes, s);
    for set in &mut p.sets {
        for f in &mut set.files {
            *f = rest[*f];
        }
    }
    for i in sectioned {
        let secs = sections(sizes[i], s.section_size.expect("only with a section size"));
        let set_no = p.sets.len() as u32 + 1;
        p.sets.push(PlannedSet {
            set_no,
            channel: 0,
            files: vec![i],
            bytes: sizes[i],
            mux: 1,
            sections: secs,
        });
    }
    p
}

fn plan_sets(sizes: &[u64], s: PlanSettings) -> Plan {
    let channels = s.channels.max(1) as usize;
    let n = sizes.len();
    if n == 0 {
        return Plan {
            sets: Vec::new(),
            files_per_set: 0,
        };
    }
    let per_channel = n.div_ceil(channels);
    let per_set = (s.filesperset.max(1) as usize).min(per_channel).max(1);
    // Whole sets go to channels, so a set count that is a multiple of the channel count lets
    // every channel carry the same bytes; sets then hold at most FILESPERSET files each.
    let n_sets = n
        .div_ceil(per_set)
        .div_ceil(channels)
        .saturating_mul(channels)
        .min(n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (Reverse(sizes[i]), i));
    let mut sets: Vec<(Vec<usize>, u64)> = vec![(Vec::new(), 0); n_sets];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
        (0..n_sets).map(|i| Reverse((0, i))).collect();
    for i in order {
        let Reverse((bytes, k)) = heap
            .pop()
            .expect("a set with room exists while files remain");
        sets[k].0.push(i);
        sets[k].1 = bytes + sizes[i];
        if sets[k].0.len() < per_set {
            heap.push(Reverse((sets[k].1, k)));
        }
    }
    sets.retain(|s| !s.0.is_empty());
    sets.sort_by_key(|s| Reverse(s.1));
    let mut load: BinaryHeap<Reverse<(u64, usize)>> =
        (0..channels).map(|c| Reverse((0, c))).collect();
    let mut out = Vec::with_capacity(sets.len());
    for (k, (files, bytes)) in sets.into_iter().enumerate() {
        let Reverse((l, c)) = load.pop().expect("channels > 0");
        load.push(Reverse((l + bytes, c)));
        let mux = (s.maxopenfiles.max(1) as usize).min(files.len()) as u32;
        out.push(PlannedSet {
            set_no: k as u32 + 1,
            channel: c as u32 + 1,
            files,
            bytes,
            mux,
            sections: Vec::new(),
        });
    }
    Plan {
        sets: out,
        files_per_set: per_set as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(channels: u32, filesperset: u32, maxopenfiles: u32) -> PlanSettings {
        PlanSettings {
            channels,
            filesperset,
            maxopenfiles,
            section_size: None,
        }
    }

    #[test]
    fn auto_sections_split_a_dominant_file_only() {
        // A 1 GiB file beside 500 MiB of small ones, two channels: sections of 1.5G / 8.
        let mut sizes = vec![1 << 30];
        sizes.extend(std::iter::repeat_n(5 << 20, 100));
        let sec = auto_section(&sizes, 2).expect("the large file is split");
        assert_eq!(sec, sizes.iter().sum::<u64>() / 8);
        let p = plan(&sizes, st(2, 64, 8));
        let multi: Vec<_> = p.sets.iter().filter(|s| !s.sections.is_empty()).collect();
        assert_eq!(multi.len(), 1);
        assert_eq!(multi[0].files, vec![0]);
        // One channel, or files all below the share: no sections.
        assert_eq!(auto_section(&sizes, 1), None);
        assert_eq!(auto_section(&vec![1 << 30; 64], 4), None);
        // Never smaller than the floor.
        assert_eq!(
            auto_section(&[100 << 20, 1 << 20], 8),
            Some(AUTO_SECTION_MIN)
        );
    }

    #[test]
    fn section_rules() {
        // A section larger than the file is ignored.
        assert!(sections(100 << 20, 200 << 20).is_empty());
        let s = sections(100 << 20, 32 << 20);
        assert_eq!(
            s,
            vec![
                (0, 32 << 20),
                (32 << 20, 64 << 20),
                (64 << 20, 96 << 20),
                (96 << 20, 100 << 20)
            ]
        );
        // At most 256 sections: the section grows instead.
        let s = sections(1 << 30, 1 << 20);
        assert_eq!(s.len(), 256);
        assert_eq!(s.last().unwrap().1, 1 << 30);
        let mut sizes = vec![1u64 << 30];
        sizes.extend([8192; 10]);
        let p = plan(
            &sizes,
            PlanSettings {
                section_size: Some(256 << 20),
                ..st(2, 64, 8)
            },
        );
        let multi: Vec<_> = p.sets.iter().filter(|s| !s.sections.is_empty()).collect();
        assert_eq!(multi.len(), 1);
        assert_eq!(
            (multi[0].files.clone(), multi[0].sections.len()),
            (vec![0], 4)
        );
        let mut seen: Vec<usize> = p.sets.iter().flat_map(|s| s.files.clone()).collect();
        seen.sort();
        assert_eq!(seen, (0..11).collect::<Vec<_>>());
    }

    #[test]
    fn rman_documented_examples() {
        // 12 files, 1 channel, FILESPERSET 4: level 4.
        let p = plan(&[10; 12], st(1, 4, 8));
        assert_eq!(p.sets.len(), 3);
        assert!(p.sets.iter().all(|s| s.mux == 4 && s.files.len() == 4));
        // 50 files, 1 channel, defaults: one set of 50, level 8.
        let p = plan(&[10; 50], st(1, 64, 8));
        assert_eq!(p.sets.len(), 1);
        assert_eq!(p.sets[0].mux, 8);
        // 2 files, FILESPERSET 3, MAXOPENFILES 8: 2 per set, level 2.
        let p = plan(&[10; 2], st(1, 3, 8));
        assert_eq!((p.sets.len(), p.sets[0].mux), (1, 2));
        // 20 files, FILESPERSET 8, 4 channels: files/channel = 5, so 4 sets of 5.
        let p = plan(&[10; 20], st(4, 8, 8));
        assert_eq!(p.files_per_set, 5);
        assert_eq!(p.sets.len(), 4);
    }

    #[test]
    fn every_file_exactly_once_and_bytes_balanced() {
        let sizes: Vec<u64> = (0..997)
            .map(|i| ((i * 7919) % 1000) as u64 * 8192 + 1)
            .collect();
        let p = plan(&sizes, st(3, 64, 8));
        let mut seen: Vec<usize> = p.sets.iter().flat_map(|s| s.files.clone()).collect();
        seen.sort();
        assert_eq!(seen, (0..997).collect::<Vec<_>>());
        let loads: Vec<u64> = (1..=3)
            .map(|c| p.sets_of(c).map(|s| s.bytes).sum())
            .collect();
        let (mx, mn) = (*loads.iter().max().unwrap(), *loads.iter().min().unwrap());
        assert!(mx - mn <= mx / 20, "channel loads {loads:?}");
        assert!(p.sets.iter().all(|s| s.files.len() <= 64));
    }

    #[test]
    fn one_huge_file_gets_its_own_channel() {
        let mut sizes = vec![1u64 << 30];
        sizes.extend(std::iter::repeat_n(1 << 20, 100));
        let p = plan(&sizes, st(2, 1, 8));
        let big = p.sets.iter().find(|s| s.files == vec![0]).unwrap();
        let other: u64 = p
            .sets
            .iter()
            .filter(|s| s.channel != big.channel)
            .map(|s| s.bytes)
            .sum();
        assert_eq!(other, 100 << 20);
    }
}
