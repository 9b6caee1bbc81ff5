//! RMAN's MAXSETSIZE: no backup set holds more bytes than this. The planner's sets are split,
//! each keeping its channel, largest files first; a multisection set is already bounded by
//! its SECTION SIZE. A file larger than MAXSETSIZE cannot be in any set: as in RMAN, that is
//! refused (SECTION SIZE is the way to back it up in parts).
//!
//! RMAN's MAXPIECESIZE: no piece holds more bytes of files than this. A set's piece holds its
//! files, so sets are split as for MAXSETSIZE; a file larger than it is backed up in sections
//! of at most that size (whole pages), as SECTION SIZE would, in a multisection set of its own.

use crate::plan::{MAX_SECTIONS, Plan, PlannedSet};

/// Splits the sets of `p` (over files of `sizes`) so that none holds more than `max` bytes;
/// `Err((file, size))` names a file larger than `max` on its own.
pub fn cap_sets(p: &mut Plan, sizes: &[u64], max: u64) -> Result<(), (usize, u64)> {
    let mut out: Vec<PlannedSet> = Vec::with_capacity(p.sets.len());
    for set in p.sets.drain(..) {
        if !set.sections.is_empty() || set.bytes <= max {
            out.push(set);
            continue;
        }
        let empty = PlannedSet {
            files: Vec::new(),
            bytes: 0,
            ..set.clone()
        };
        let mut cur = empty.clone();
        for &f in &set.files {
            if sizes[f] > max {
                return Err((f, sizes[f]));
            }
            if !cur.files.is_empty() && cur.bytes + sizes[f] > max {
                out.push(std::mem::replace(&mut cur, empty.clone()));
            }
            cur.files.push(f);
            cur.bytes += sizes[f];
        }
        out.push(cur);
    }
    for (k, s) in out.iter_mut().enumerate() {
        s.set_no = k as u32 + 1;
        s.mux = s.mux.min(s.files.len().max(1) as u32);
    }
    p.sets = out;
    Ok(())
}

/// Cuts the sets of `p` (over files of `sizes`) so that no piece holds more than `max` bytes:
/// whole-file sets are split, a file larger than `max` gets a multisection set of sections of
/// at most `max`, and a multisection set with a longer section is cut again. `Err((file,
/// size))` names a file that would need more than [`MAX_SECTIONS`] pieces.
pub fn cap_pieces(p: &mut Plan, sizes: &[u64], max: u64) -> Result<(), (usize, u64)> {
    let page = recman_page::BLCKSZ as u64;
    let sec = (max / page).max(1) * page;
    let cut = |f: usize| {
        let n = sizes[f].div_ceil(sec);
        if n > MAX_SECTIONS {
            return Err((f, sizes[f]));
        }
        Ok((0..n)
            .map(|i| (i * sec, ((i + 1) * sec).min(sizes[f])))
            .collect::<Vec<_>>())
    };
    let mut whole = Vec::with_capacity(p.sets.len());
    let mut multi = Vec::new();
    for set in p.sets.drain(..) {
        if !set.sections.is_empty() {
            let sections = match set.sections.iter().all(|(a, b)| b - a <= max) {
                true => set.sections.clone(),
                false => cut(set.files[0])?,
            };
            multi.push(PlannedSet { sections, ..set });
            continue;
        }
        let (large, rest): (Vec<usize>, Vec<usize>) =
            set.files.iter().partition(|&&f| sizes[f] > max);
        for f in large {
            multi.push(PlannedSet {
                set_no: 0,
                // Like the planner's multisection sets: any free channel takes a section.
                channel: 0,
                files: vec![f],
                bytes: sizes[f],
                mux: 1,
                sections: cut(f)?,
            });
        }
        if !rest.is_empty() {
            let bytes = rest.iter().map(|&f| sizes[f]).sum();
            whole.push(PlannedSet {
                files: rest,
                bytes,
                ..set
            });
        }
    }
    p.sets = whole;
    cap_sets(p, sizes, max).expect("no file left is larger than the cap");
    p.sets.extend(multi);
    for (k, s) in p.sets.iter_mut().enumerate() {
        s.set_no = k as u32 + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlanSettings, plan};

    #[test]
    fn sets_are_split_under_maxsetsize_on_their_channel_and_a_larger_file_is_refused() {
        let sizes = [400, 300, 300, 200, 100, 100];
        let settings = PlanSettings {
            channels: 2,
            filesperset: 64,
            maxopenfiles: 8,
            section_size: None,
        };
        let mut p = plan(&sizes, settings);
        let channels_before: Vec<u32> = p.sets.iter().map(|s| s.channel).collect();
        cap_sets(&mut p, &sizes, 450).unwrap();
        assert!(p.sets.iter().all(|s| s.bytes <= 450), "{:?}", p.sets);
        let mut files: Vec<usize> = p.sets.iter().flat_map(|s| s.files.clone()).collect();
        files.sort();
        assert_eq!(files, (0..sizes.len()).collect::<Vec<_>>());
        assert!(p.sets.len() > channels_before.len());
        assert!(p.sets.iter().all(|s| channels_before.contains(&s.channel)));
        let nos: Vec<u32> = p.sets.iter().map(|s| s.set_no).collect();
        assert_eq!(nos, (1..=p.sets.len() as u32).collect::<Vec<_>>());
        assert!(p.sets.iter().all(|s| s.mux as usize <= s.files.len()));

        let mut p = plan(&sizes, settings);
        assert_eq!(cap_sets(&mut p, &sizes, 350), Err((0, 400)));
    }

    #[test]
    fn no_piece_over_maxpiecesize_and_a_large_file_in_sections() {
        const MIB: u64 = 1 << 20;
        // A 10 MiB file, one of exactly 1 MiB, and small ones; two channels.
        let mut sizes = vec![10 * MIB + 8192, MIB, 300 << 10, 300 << 10, 500 << 10];
        sizes.extend(std::iter::repeat_n(8192, 40));
        let settings = PlanSettings {
            channels: 2,
            filesperset: 64,
            maxopenfiles: 8,
            section_size: None,
        };
        let mut p = plan(&sizes, settings);
        cap_pieces(&mut p, &sizes, MIB).unwrap();
        for s in &p.sets {
            match s.sections.is_empty() {
                true => assert!(s.bytes <= MIB, "{s:?}"),
                false => assert!(s.sections.iter().all(|(a, b)| b - a <= MIB), "{s:?}"),
            }
        }
        let multi: Vec<_> = p.sets.iter().filter(|s| !s.sections.is_empty()).collect();
        assert_eq!(multi.len(), 1);
        assert_eq!(multi[0].files, vec![0]);
        assert_eq!(multi[0].sections.len(), 11);
        assert_eq!(multi[0].sections.last(), Some(&(10 * MIB, 10 * MIB + 8192)));
        // Every file is backed up once.
        let mut files: Vec<usize> = p.sets.iter().flat_map(|s| s.files.clone()).collect();
        files.sort();
        assert_eq!(files, (0..sizes.len()).collect::<Vec<_>>());
        let nos: Vec<u32> = p.sets.iter().map(|s| s.set_no).collect();
        assert_eq!(nos, (1..=p.sets.len() as u32).collect::<Vec<_>>());

        // A SECTION SIZE above the cap is cut to it; a file needing more than 256 pieces is
        // refused.
        let mut p = plan(
            &sizes,
            PlanSettings {
                section_size: Some(4 * MIB),
                ..settings
            },
        );
        cap_pieces(&mut p, &sizes, MIB).unwrap();
        assert!(
            p.sets
                .iter()
                .all(|s| s.sections.iter().all(|(a, b)| b - a <= MIB))
        );
        let huge = [300 * MIB];
        let mut p = plan(&huge, settings);
        assert_eq!(cap_pieces(&mut p, &huge, MIB), Err((0, 300 * MIB)));
    }
}
