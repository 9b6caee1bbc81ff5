//! The read path of a tracked level 1: for a relation file the parent has and the change
//! tracking answers for, only the blocks the summaries name are read (in runs of up to
//! 1 MiB), checked like any page, and kept when their LSN is at or past the parent's start —
//! the same pages a scan would keep, found without reading the rest. The channel calls it
//! for such files before it starts its multiplexed reads of the others.

use crate::channel_shared::{ChannelShared, FileOutcome};
use crate::error::EngineError;
use crate::io::IoCounters;
use crate::pagecheck::{PageVerdicts, check_chunk};
use crate::pipeline::SetOut;
use crate::tracking::{FilePlan, Tracking};
use crate::util::now_micros;
use recman_page::{BLCKSZ, Fork};
use std::time::Instant;

/// Blocks per read request: 1 MiB.
const RUN_BLOCKS: u64 = 128;

/// A file of the set read through the summaries: its slot in the set, its index in the
/// backup's file list, and the runs of blocks to read.
pub(crate) struct TrackedFile {
    pub slot: u32,
    pub index: usize,
    pub runs: Vec<(u32, u32)>,
}

/// The runs to read of file `index`, when it goes through the summaries: a main-fork file the
/// parent had that the tracking does not take whole. Other forks are small and go through the
/// scan (the free space map is not WAL-logged; the visibility map is taken whole).
pub(crate) fn plan_for(
    sh: &ChannelShared,
    tracking: &Tracking,
    index: usize,
) -> Option<Vec<(u32, u32)>> {
    let f = &sh.files[index];
    let rf = f.relfile.as_ref()?;
    let inc = sh.increment?;
    if rf.fork != Fork::Main || !inc.known.contains(&f.rel) {
        return None;
    }
    match tracking.plan(rf) {
        FilePlan::Whole => None,
        FilePlan::Runs(r) => Some(r),
    }
}

/// Reads tracked file `t` (within `range`, a section, if any) into `writer`.
pub(crate) fn read_file(
    sh: &ChannelShared,
    tracking: &Tracking,
    writer: &mut SetOut,
    t: &TrackedFile,
    range: Option<(u64, u64)>,
    counters: &mut IoCounters,
) -> Result<(FileOutcome, i64), EngineError> {
    let sf = &sh.files[t.index];
    let path = sh.path_of(t.index);
    let opened = now_micros();
    let outcome = |size, crc32c, verdicts, pages, vanished| FileOutcome {
        index: t.index,
        set_no: 0,
        section: range,
        piece_no: 0,
        incremental: true,
        size,
        crc32c,
        verdicts,
        pages,
        vanished,
    };
    let source = sh.source_of(t.index);
    let file = match source.open(
        &path,
        crate::read_mode::ReadMode::Buffered,
        crate::source::WHOLE,
    ) {
        Ok((f, _)) => f,
        // Dropped by the server after it was listed; WAL replay removes it again.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            writer.end_file(t.slot, 0, 0)?;
            return Ok((outcome(0, 0, PageVerdicts::default(), 0, true), opened));
        }
        Err(e) => return Err(EngineError::io("open", &path, e)),
    };
    let size = file.size().map_err(|e| EngineError::io("stat", &path, e))?;
    let (lo, hi) = range.unwrap_or((0, u64::MAX));
    let hi = hi.min(size);
    let end = hi.max(lo.min(size));
    let since = sh.increment.map(|i| i.parent_start_lsn).unwrap_or(0);
    let rf = sf
        .relfile
        .as_ref()
        .expect("tracked files are relation files");
    let rules = sh.page_rules(rf);
    let bs = BLCKSZ as u64;
    let mut crc = 0u32;
    let mut verdicts = PageVerdicts::default();
    let mut pages = 0u64;
    let mut read = 0u64;
    let mut buf = vec![0u8; (RUN_BLOCKS * bs) as usize];
    for &(first, count) in &t.runs {
        let mut b = first as u64;
        let stop = first as u64 + count as u64;
        while b < stop {
            let n = (stop - b).min(RUN_BLOCKS);
            let from = (b * bs).max(lo);
            let to = ((b + n) * bs).min(hi);
            b += n;
            if from >= to {
                continue;
            }
            let want = (to - from) as usize;
            let t0 = Instant::now();
            let got = read_at(&file, &mut buf[..want], from)
                .map_err(|e| EngineError::io("read", &path, e))?;
            counters.io_time += t0.elapsed();
            counters.io_count += 1;
            counters.ready += 1;
            counters.bytes += got as u64;
            read += got as u64;
            let data = &mut buf[..got];
            check_chunk(Some(&file), &rules, from, data, &mut verdicts)
                .map_err(|e| EngineError::io("re-read", &path, e))?;
            pages += (got / BLCKSZ) as u64;
            for (at, len) in crate::incremental::changed_runs(data, since) {
                let run = &data[at..at + len];
                crc = crc32c::crc32c_append(crc, run);
                writer.chunk(t.slot, from + at as u64, run)?;
            }
            if got < want {
                break;
            }
        }
    }
    writer.end_file(t.slot, end, crc)?;
    tracking.count(read, end - lo.min(end));
    sh.progress.advance(end - lo.min(end));
    Ok((outcome(end, crc, verdicts, pages, false), opened))
}

/// Reads up to `buf.len()` bytes at `off`; fewer only at the end of the file.
fn read_at(f: &crate::source::SourceFile, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    use crate::source::ReadAt;
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
