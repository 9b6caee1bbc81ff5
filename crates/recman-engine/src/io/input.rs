//! The read phase of a channel: up to MAXOPENFILES files open at once, each with its share of
//! the channel's input buffers kept in flight through the I/O engine, handed to the channel in
//! round-robin order (RMAN's multiplexing). Every buffer the channel waits for is counted as
//! READY, a SHORT wait or a LONG wait against its file.

use super::{BufferPlan, IoCounters, IoEngine, ReadDone, ReadReq, Throttle};
use crate::adapt::{Adaptive, IoWay};
use crate::aligned::{ALIGN, AlignedBuf};
use crate::read_mode::ReadMode;
use crate::source::{DataSource, SourceFile};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

/// A file to read: its position in the caller's list, its path, and its size when listed
/// (reads go on past it while the file keeps growing).
#[derive(Clone, Debug)]
pub struct InputFile {
    pub slot: u32,
    pub index: usize,
    pub path: PathBuf,
    pub size_hint: u64,
    /// Read only this byte range (a section of a large file); None reads it all.
    pub range: Option<(u64, u64)>,
    /// Opened through the mux's second source (a standby's, for relation files).
    pub alt: bool,
}

/// What the channel gets next.
pub enum Event<'a> {
    Chunk {
        slot: u32,
        index: usize,
        offset: u64,
        data: &'a mut [u8],
        file: &'a SourceFile,
    },
    /// Every byte of the file (or its range) has been handed out.
    End {
        slot: u32,
        index: usize,
        end: u64,
        counters: IoCounters,
        opened: i64,
        closed: i64,
        /// Read with O_DIRECT (false: through the page cache).
        direct: bool,
    },
    /// The file was removed between listing and opening (a dropped relation).
    Vanished { slot: u32, index: usize },
}

struct Open {
    f: InputFile,
    file: SourceFile,
    /// Opened with O_DIRECT: requests are rounded up to whole aligned blocks.
    direct: bool,
    next_submit: u64,
    next_consume: u64,
    limit: u64,
    inflight: usize,
    done: HashMap<u64, ReadDone>,
    /// Completions held back until this instant (fault injection of a slow device).
    held: HashMap<u64, Instant>,
    counters: IoCounters,
    opened: i64,
    finished: bool,
    /// Read the way the chooser says (a local file Auto would have read directly): switched
    /// whenever the chooser's phase changes.
    adaptive: bool,
}

pub struct InputMux<'e> {
    engine: &'e mut dyn IoEngine,
    plan: BufferPlan,
    mux: usize,
    free: Vec<AlignedBuf>,
    queue: VecDeque<InputFile>,
    open: Vec<Open>,
    tags: HashMap<u64, (u32, u64)>,
    next_tag: u64,
    rr: usize,
    /// The buffer handed out last, taken back on the next call.
    lent: Option<(u32, AlignedBuf)>,
    throttle: &'e mut Throttle,
    slow: Option<(String, std::time::Duration)>,
    reads: ReadMode,
    /// Where files are opened (the second for files marked `alt`): the local file system
    /// when None.
    sources: [Option<&'e dyn DataSource>; 2],
    /// The backup's chooser of direct or buffered reads for uncached files.
    adapt: Option<&'e Adaptive>,
}

fn now_micros() -> i64 {
    crate::util::now_micros()
}

impl<'e> InputMux<'e> {
    /// Takes its buffers from `spare` where it holds them at the plan's size (see
    /// [`InputMux::recycle`]) and makes only the rest: a fresh buffer is zeroed, and a channel
    /// that made its buffers anew for every set spent nearly as much time zeroing them as the
    /// page checks took (a scale-20 backup zeroed 223 MiB to read 321).
    pub fn new(
        engine: &'e mut dyn IoEngine,
        plan: BufferPlan,
        mux: u32,
        files: Vec<InputFile>,
        throttle: &'e mut Throttle,
        spare: &mut Vec<AlignedBuf>,
    ) -> InputMux<'e> {
        let mux = (mux.max(1) as usize).min(files.len().max(1));
        let need = plan.per_file * mux;
        spare.retain(|b| b.capacity() == plan.size);
        let mut free: Vec<AlignedBuf> = spare.drain(..need.min(spare.len())).collect();
        free.extend((free.len()..need).map(|_| AlignedBuf::new(plan.size)));
        InputMux {
            engine,
            plan,
            mux,
            free,
            queue: files.into(),
            open: Vec::new(),
            tags: HashMap::new(),
            next_tag: 1,
            rr: 0,
            lent: None,
            throttle,
            slow: crate::fault::slow_read(),
            reads: ReadMode::Buffered,
            sources: [None, None],
            adapt: None,
        }
    }

    /// Opens the files through `source`, those marked `alt` through `alt` (paths from their
    /// `path_of`).
    pub fn sources(mut self, source: &'e dyn DataSource, alt: Option<&'e dyn DataSource>) -> Self {
        self.sources = [Some(source), alt.or(Some(source))];
        self
    }

    /// How the files are read: directly, through the page cache, or each the cheaper way
    /// (see [`ReadMode`]).
    pub fn reads(mut self, mode: ReadMode) -> Self {
        self.reads = mode;
        self
    }

    /// Files that [`ReadMode::Auto`] would read directly are read the way `adapt` finds
    /// cheaper while the backup runs (see `crate::adapt`).
    pub fn adaptive(mut self, adapt: &'e Adaptive) -> Self {
        self.adapt = Some(adapt);
        self
    }

    /// For a file opened as `reads` says (`direct`: with O_DIRECT): whether it is read
    /// directly, and whether the chooser decides that.
    fn choose_way(
        &self,
        file: &SourceFile,
        reads: ReadMode,
        direct: bool,
    ) -> std::io::Result<(bool, bool)> {
        let (Some(a), Some(f), ReadMode::Auto, true) = (self.adapt, file.local(), reads, direct)
        else {
            return Ok((direct, false));
        };
        match a.phase() {
            IoWay::Direct => Ok((true, true)),
            // Taking O_DIRECT away is refused by no file system; were it, reads stay direct.
            IoWay::Buffered => Ok((!crate::source::set_direct(f, false)?, true)),
        }
    }

    /// Records what chunk `k`'s read cost the channel (`waited`), and moves the file to the
    /// way every file takes now.
    fn adapt_after(
        &mut self,
        k: usize,
        bytes: u64,
        waited: std::time::Duration,
    ) -> std::io::Result<()> {
        let (Some(a), o) = (self.adapt, &mut self.open[k]) else {
            return Ok(());
        };
        if !o.adaptive {
            return Ok(());
        }
        let way = if o.direct {
            IoWay::Direct
        } else {
            IoWay::Buffered
        };
        a.record(way, bytes, waited);
        let lead = a.phase();
        // A direct read needs an aligned offset: a file switches there (every request but a
        // file's last is whole buffers from an aligned start).
        if lead != way
            && o.next_submit.is_multiple_of(ALIGN as u64)
            && let Some(f) = o.file.local()
        {
            let switched = crate::source::set_direct(f, lead == IoWay::Direct)?;
            o.direct = (lead == IoWay::Direct) == switched;
            o.adaptive = switched;
        }
        Ok(())
    }

    pub fn plan(&self) -> BufferPlan {
        self.plan
    }

    fn route(&mut self, d: ReadDone) {
        let (slot, offset) = self
            .tags
            .remove(&d.tag)
            .expect("every completion has a tag");
        match self.open.iter_mut().find(|o| o.f.slot == slot) {
            Some(o) => {
                o.inflight -= 1;
                if let Some((pat, delay)) = &self.slow
                    && o.f.path.to_string_lossy().contains(pat.as_str())
                {
                    // One request at a time, like a slow device: each waits behind the last.
                    let after = o
                        .held
                        .values()
                        .max()
                        .copied()
                        .unwrap_or_else(Instant::now)
                        .max(Instant::now());
                    o.held.insert(offset, after + *delay);
                }
                o.done.insert(offset, d);
            }
            // A file already closed: its read-ahead past the end comes back unused.
            None => self.free.push(d.buf),
        }
    }

    fn submit_for(&mut self, k: usize) -> std::io::Result<()> {
        loop {
            let o = &self.open[k];
            // A file's quota counts reads in flight and completed ones not yet consumed, so no
            // file can hold the buffers another one needs.
            if o.finished
                || o.inflight + o.done.len() >= self.plan.per_file
                || o.next_submit >= o.limit
            {
                return Ok(());
            }
            // Past the listed size, keep a single read in flight: it finds where the file ends.
            if o.next_submit >= o.f.size_hint.max(o.next_consume) && o.inflight > 0 {
                return Ok(());
            }
            let Some(buf) = self.free.pop() else {
                return Ok(());
            };
            let mut len = (self.plan.size as u64).min(o.limit - o.next_submit) as usize;
            if o.direct {
                // Whole aligned blocks; the bytes past a range's end are dropped on completion.
                len = len.next_multiple_of(ALIGN).min(buf.capacity());
            }
            let (tag, offset, file, slot) =
                (self.next_tag, o.next_submit, o.file.clone(), o.f.slot);
            self.next_tag += 1;
            self.throttle.pace();
            self.tags.insert(tag, (slot, offset));
            self.engine.submit(ReadReq {
                tag,
                file,
                offset,
                len,
                buf,
            })?;
            let o = &mut self.open[k];
            o.inflight += 1;
            o.next_submit += len as u64;
        }
    }

    fn open_more(&mut self) -> std::io::Result<Option<Event<'static>>> {
        while self.open.len() < self.mux {
            let Some(f) = self.queue.pop_front() else {
                return Ok(None);
            };
            let (start, limit) = f.range.unwrap_or((0, u64::MAX));
            // A range that starts off the alignment cannot be read directly anyway.
            let reads = if start.is_multiple_of(ALIGN as u64) {
                self.reads
            } else {
                ReadMode::Buffered
            };
            let opened = match self.sources[f.alt as usize] {
                Some(s) => s.open(&f.path, reads, (start, limit)),
                None => crate::source::open_local(&f.path, reads, (start, limit))
                    .map(|(file, d)| (SourceFile::Local(std::sync::Arc::new(file)), d)),
            };
            match opened {
                Ok((file, direct)) => {
                    let (direct, adaptive) = self.choose_way(&file, reads, direct)?;
                    self.open.push(Open {
                        file,
                        direct,
                        next_submit: start,
                        next_consume: start,
                        limit,
                        inflight: 0,
                        done: HashMap::new(),
                        held: HashMap::new(),
                        counters: IoCounters::default(),
                        opened: now_micros(),
                        finished: false,
                        adaptive,
                        f,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Some(Event::Vanished {
                        slot: f.slot,
                        index: f.index,
                    }));
                }
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot open {}: {e}", f.path.display()),
                    ));
                }
            }
        }
        Ok(None)
    }

    /// Gives the buffers back to `spare` for the channel's next set, once every file has
    /// been read (a buffer a read still fills stays with the engine and is dropped there).
    pub fn recycle(mut self, spare: &mut Vec<AlignedBuf>) {
        spare.append(&mut self.free);
        spare.extend(self.lent.take().map(|(_, b)| b));
    }

    /// The next chunk or end of a file, in round-robin order over the open files.
    pub fn next_event(&mut self) -> std::io::Result<Option<Event<'_>>> {
        if let Some((_, buf)) = self.lent.take() {
            self.free.push(buf);
        }
        // A file whose last chunk went out on the previous call ends now.
        if let Some(k) = self.open.iter().position(|o| o.finished) {
            return self.close(k).map(Some);
        }
        if let Some(ev) = self.open_more()? {
            return Ok(Some(ev));
        }
        if self.open.is_empty() {
            return Ok(None);
        }
        for k in 0..self.open.len() {
            self.submit_for(k)?;
        }
        let k = self.rr % self.open.len();
        let want = self.open[k].next_consume;
        let t = Instant::now();
        let avail = |o: &Open| {
            o.done.contains_key(&want) && o.held.get(&want).is_none_or(|at| Instant::now() >= *at)
        };
        let mut waited = std::time::Duration::ZERO;
        if avail(&self.open[k]) {
            self.open[k].counters.record_ready();
        } else {
            while let Some(d) = self.engine.try_complete() {
                self.route(d);
            }
            if avail(&self.open[k]) {
                self.open[k].counters.record_short(t);
                waited = t.elapsed();
            } else {
                while !avail(&self.open[k]) {
                    if let Some(at) = self.open[k].held.get(&want) {
                        std::thread::sleep(at.saturating_duration_since(Instant::now()));
                        continue;
                    }
                    let d = self.engine.wait_complete()?;
                    self.route(d);
                }
                self.open[k].counters.record_long(t);
                waited = t.elapsed();
            }
        }
        self.open[k].held.remove(&want);
        let d = self.open[k].done.remove(&want).expect("waited for it");
        let asked = (self.plan.size as u64).min(self.open[k].limit - want) as usize;
        let n = match d.result {
            // A direct read may run past the end of a range: those bytes belong to the next one.
            Ok(n) => n.min(asked),
            Err(e) => {
                self.free.push(d.buf);
                let p = self.open[k].f.path.display().to_string();
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot read {p}: {e}"),
                ));
            }
        };
        self.throttle.add(n as u64);
        self.adapt_after(k, n as u64, waited)?;
        let o = &mut self.open[k];
        o.counters.io_count += 1;
        o.counters.bytes += n as u64;
        o.counters.io_time += d.io_time;
        o.next_consume += n as u64;
        let at_end = n < asked || o.next_consume >= o.limit;
        if at_end {
            o.finished = true;
        }
        if n == 0 {
            self.free.push(d.buf);
            return self.close(k).map(Some);
        }
        if !at_end {
            self.rr += 1;
        }
        let slot = o.f.slot;
        self.lent = Some((slot, d.buf));
        let (_, buf) = self.lent.as_mut().expect("just set");
        let o = &self.open[k];
        Ok(Some(Event::Chunk {
            slot,
            index: o.f.index,
            offset: want,
            data: &mut buf.as_mut_slice()[..n],
            file: &o.file,
        }))
    }

    fn close(&mut self, k: usize) -> std::io::Result<Event<'static>> {
        // Read-ahead past the end may still be in flight; take it back before closing.
        while self.open[k].inflight > 0 {
            let d = self.engine.wait_complete()?;
            self.route(d);
        }
        let o = self.open.swap_remove(k);
        for (_, d) in o.done {
            self.free.push(d.buf);
        }
        Ok(Event::End {
            slot: o.f.slot,
            index: o.f.index,
            end: o.next_consume,
            counters: o.counters,
            opened: o.opened,
            closed: now_micros(),
            direct: o.direct,
        })
    }
}
