//! RMAN's MAXSETSIZE: no backup set holds more bytes than this. The planner's sets are split,
//! each keeping its channel, largest files first; a multisection set is already bounded by
//! its SECTION SIZE. A file larger than MAXSETSIZE cannot be in any set: as in RMAN, that is
//! refused (SECTION SIZE is the way to back it up in parts).

use crate::plan::{Plan, PlannedSet};

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
}
