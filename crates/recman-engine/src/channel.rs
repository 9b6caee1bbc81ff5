//! One backup channel: RMAN's read → copy → write pipeline. The channel takes the next backup
//! set from the shared queue whenever it finishes one, so channels end together; reads go
//! through the I/O engine (see [`crate::io`]), pages are checked and chunks compressed in the
//! channel's thread, and pieces are written in BLKSIZE blocks by a writer thread.

use crate::channel_shared::Unit;
use crate::channel_shared::{ChannelShared, FileOutcome};
use crate::error::EngineError;
use crate::io::input::{Event, InputFile, InputMux};
use crate::io::{BufferPlan, IoCounters, IoEngine, Throttle};
use crate::pagecheck::{PageVerdicts, check_chunk};
use crate::pipeline::pool::Worker;
use crate::pipeline::stats::stat_row;
use crate::pipeline::{OutputShape, SetOut, SetWriter, Uncommitted};
use crate::util::now_micros;
use recman_catalog::{IoStatRow, Repository};
use recman_format::{PieceHeader, SetFile};

/// Reads in flight at once per channel reading through an agent: enough to hide the round
/// trip of each call behind the others.
const REMOTE_READS: usize = 16;

#[derive(Debug, Clone)]
pub struct SetOutcome {
    pub set_no: u32,
    pub piece_no: u32,
    pub channel: u32,
    pub piece_path: String,
    /// The name the piece has on the output: `piece_path`, or the FORMAT's.
    pub written_as: String,
    pub size: u64,
    pub crc32c: u32,
    pub raw_bytes: u64,
    pub files: Vec<FileOutcome>,
}

pub struct ChannelOutcome {
    pub sets: Vec<SetOutcome>,
    /// The channel's AGGREGATE row (INPUT and OUTPUT rows are already in the catalog); the
    /// caller fills in the job's identity.
    pub stats: Vec<IoStatRow>,
    pub notice: Option<String>,
}

/// Runs one channel as worker `w` of the backup's pool: sets from the shared queue until it is
/// empty or another channel failed.
pub(crate) fn run_channel(sh: &ChannelShared, w: &Worker) -> Result<ChannelOutcome, EngineError> {
    let channel = w.no;
    let repo = sh.repo.as_ref().map(|h| h.open()).transpose()?;
    let clock = ChannelClock {
        started: now_micros(),
        cpu0: crate::tuning::thread_cpu_time(),
        cpu_wait0: crate::tuning::thread_cpu_wait(),
    };
    let (mut engine, notice) = channel_engine(sh)?;
    let mut throttle = Throttle::new(sh.io.rate).shared(sh.live.and_then(|l| l.pacer.clone()));
    let mut out = ChannelOutcome {
        sets: Vec::new(),
        stats: Vec::new(),
        notice,
    };
    let mut total = IoCounters::default();
    let device = sh
        .output
        .as_ref()
        .map(|m| crate::tuning::device_kind(&m.describe()));
    // A disk or an object store takes the next piece while the last one commits (fsync and
    // rename, an upload's completion), so the channel reads its next set meanwhile; a tape
    // drive or a plugin writes one object at a time, in order.
    let overlap = matches!(device.as_deref(), Some("disk" | "s3"));
    let recorder = Recorder {
        channel,
        repo: repo.as_ref(),
        backup_id: &sh.header.backup_id,
        mode: engine.mode().to_string(),
        device,
    };
    std::thread::scope(|scope| -> Result<(), EngineError> {
        // The set whose piece is committing: joined once the next set is read, or at the end.
        let mut committing: Option<Committing> = None;
        // The input buffers of the last set, for the next (InputMux::new says why).
        let mut spare = Vec::new();
        loop {
            // A stop (another channel failed, or a signal) must fail the backup, never end it
            // short with sets missing.
            w.check()?;
            if window_ended(sh)? {
                break;
            }
            let Some(set) = sh.queue.lock().expect("queue lock").pop_front() else {
                break;
            };
            let mut rows = Vec::new();
            let Some((so, staged)) = backup_set(
                sh,
                repo.as_ref(),
                engine.as_mut(),
                &mut throttle,
                w,
                set,
                &mut rows,
                &mut total,
                &mut spare,
            )?
            else {
                // The window ended inside this set: its piece was never committed.
                break;
            };
            let next = commit(scope, staged, overlap, channel, rows, so)?;
            if let Some(c) = committing.replace(next) {
                recorder.settle(c, &mut out)?;
            }
        }
        match committing.take() {
            Some(c) => recorder.settle(c, &mut out),
            None => Ok(()),
        }
    })?;
    let agg = clock.aggregate(
        channel,
        &total,
        engine.as_ref(),
        &throttle,
        &recorder.device,
    );
    out.stats.push(agg);
    Ok(out)
}

/// The I/O engine a channel reads with: helper threads for files read through an agent,
/// else the one `--io` chose, with its notice when it fell back from it.
fn channel_engine(sh: &ChannelShared) -> Result<(Box<dyn IoEngine>, Option<String>), EngineError> {
    let remote = sh.source.local_root().is_none()
        || sh.relation_source.is_some_and(|s| s.local_root().is_none());
    Ok(if remote {
        (crate::io::open_remote_engine(REMOTE_READS), None)
    } else {
        crate::io::open_engine(sh.io, 64).map_err(|e| {
            EngineError::from(crate::refusal::Input::IoModeUnavailable {
                mode: sh.io.mode.to_string(),
                why: e.to_string(),
            })
        })?
    })
}

/// A set's piece handed to its commit: on a thread of its own when the output overlaps
/// commits with reads, else committed here before the next set is read.
fn commit<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    staged: Option<Uncommitted>,
    overlap: bool,
    channel: u32,
    mut rows: Vec<IoStatRow>,
    so: SetOutcome,
) -> Result<Committing<'s>, EngineError> {
    Ok(match staged {
        Some(u) if overlap => Committing {
            handle: Some(scope.spawn(move || u.commit())),
            rows,
            outcome: so,
        },
        Some(u) => {
            let commit = std::time::Instant::now();
            let mut piece = u.commit()?;
            piece.output.record_final_wait(commit.elapsed());
            rows.push(piece.output_row(channel, so.set_no, so.piece_no));
            Committing {
                handle: None,
                rows,
                outcome: so,
            }
        }
        None => Committing {
            handle: None,
            rows,
            outcome: so,
        },
    })
}

/// Where a channel's finished sets go: their statistics rows, labelled with the job, to the
/// catalog; their outcomes to the channel's.
struct Recorder<'r> {
    channel: u32,
    repo: Option<&'r Repository>,
    backup_id: &'r str,
    /// The I/O engine's mode, for every row.
    mode: String,
    /// The output's kind of device, for OUTPUT rows.
    device: Option<String>,
}

impl Recorder<'_> {
    fn label(&self, rows: &mut Vec<IoStatRow>) {
        for r in rows {
            r.io_mode = self.mode.clone();
            r.job_id = self.backup_id.to_string();
            r.job_type = "BACKUP".into();
            r.backup_id = Some(self.backup_id.to_string());
            if r.kind == "OUTPUT" {
                r.device = self.device.clone();
            }
        }
    }

    /// Rows go to the catalog set by set: a cluster of a million files must not keep a million
    /// rows in memory until the end.
    fn store(&self, rows: &[IoStatRow]) -> Result<(), EngineError> {
        if let Some(repo) = self.repo {
            repo.catalog().add_io_stats(rows)?;
        }
        Ok(())
    }

    /// Waits for a set's commit (if still running), then records the set.
    fn settle(&self, c: Committing, out: &mut ChannelOutcome) -> Result<(), EngineError> {
        let Committing {
            handle,
            mut rows,
            outcome,
        } = c;
        if let Some(h) = handle {
            // What the channel still waits for the commit is an output wait like any other.
            let waited = std::time::Instant::now();
            let mut piece = h
                .join()
                .map_err(|_| EngineError::Internal("a piece's commit thread panicked".into()))??;
            piece.output.record_final_wait(waited.elapsed());
            rows.push(piece.output_row(self.channel, outcome.set_no, outcome.piece_no));
        }
        self.label(&mut rows);
        self.store(&rows)?;
        out.sets.push(outcome);
        Ok(())
    }
}

/// When a channel started, on the clock and on its thread's CPU.
struct ChannelClock {
    started: i64,
    cpu0: std::time::Duration,
    cpu_wait0: std::time::Duration,
}

impl ChannelClock {
    /// The channel's AGGREGATE row: everything it read, its engine, throttling and CPU.
    fn aggregate(
        &self,
        channel: u32,
        total: &IoCounters,
        engine: &dyn IoEngine,
        throttle: &Throttle,
        device: &Option<String>,
    ) -> IoStatRow {
        let mut agg = stat_row(
            "AGGREGATE",
            channel,
            None,
            total,
            self.started,
            now_micros(),
            (0, 0),
        );
        agg.ring_submissions = engine.ring_submissions();
        agg.io_mode = engine.mode().to_string();
        agg.throttle_time = throttle.slept().as_micros() as u64;
        agg.cpu_time = (crate::tuning::thread_cpu_time() - self.cpu0).as_micros() as u64;
        agg.cpu_wait_time =
            (crate::tuning::thread_cpu_wait().saturating_sub(self.cpu_wait0)).as_micros() as u64;
        agg.device = device.clone();
        agg
    }
}

/// A set read and written whose piece may still be committing on its own thread.
struct Committing<'s> {
    handle: Option<
        std::thread::ScopedJoinHandle<'s, Result<crate::pipeline::WrittenPiece, EngineError>>,
    >,
    rows: Vec<IoStatRow>,
    outcome: SetOutcome,
}

#[allow(clippy::too_many_arguments)]
fn backup_set(
    sh: &ChannelShared,
    repo: Option<&Repository>,
    engine: &mut dyn IoEngine,
    throttle: &mut Throttle,
    w: &Worker,
    unit: Unit,
    stats: &mut Vec<IoStatRow>,
    total: &mut IoCounters,
    spare: &mut Vec<crate::io::AlignedBuf>,
) -> Result<Option<(SetOutcome, Option<Uncommitted>)>, EngineError> {
    let set = unit.set;
    let channel = w.no;
    let mut run = SetRun::open(sh, repo, channel, unit, stats, total)?;
    let tracked = run.read_tracked(w)?;
    let inputs: Vec<InputFile> = set
        .files
        .iter()
        .enumerate()
        .filter(|(slot, _)| !tracked.iter().any(|t| t.slot == *slot as u32))
        .map(|(slot, &i)| InputFile {
            slot: slot as u32,
            index: i,
            path: sh.path_of(i),
            size_hint: sh.files[i].size,
            range: unit.range,
            alt: sh.relation_source.is_some() && sh.files[i].relfile.is_some(),
        })
        .collect();
    let mut mux = InputMux::new(engine, run.plan, run.files_at_once, inputs, throttle, spare)
        .reads(sh.io.reads)
        .adaptive(sh.read_way)
        .sources(sh.source, sh.relation_source);
    loop {
        w.check()?;
        if window_ended(sh)? {
            return Ok(None);
        }
        let ev = mux.next_event().map_err(|e| {
            let message = match sh.output {
                Some(_) => format!("channel {channel}, backup set {}: {e}", set.set_no),
                None => format!("validate {}: {e}", sh.source.describe()),
            };
            EngineError::Failed {
                kind: crate::error::ErrorKind::of_io(&e),
                message,
            }
        })?;
        match ev {
            None => break,
            Some(ev) => run.take(ev)?,
        }
    }
    mux.recycle(spare);
    run.finish()
}

/// One set (or section) as its channel reads and writes it: the settings it was given, the
/// piece being written, and what each of its files came to.
struct SetRun<'s, 'a> {
    sh: &'s ChannelShared<'a>,
    unit: Unit<'s>,
    channel: u32,
    piece_path: String,
    written_as: String,
    tuner: Option<&'a crate::tune::Tuner>,
    /// The device of the set's first file, as the tuner tells devices apart (0: unknown).
    device: u64,
    tuned: Option<crate::tune::SetTune>,
    plan: BufferPlan,
    files_at_once: u32,
    /// When the set started, on the clock and on the thread's and the process's CPU.
    started: (std::time::Instant, u64, std::time::Duration),
    writer: SetOut,
    /// Each file's CRC, page verdicts and pages checked so far, by its slot in the set.
    state: Vec<(u32, PageVerdicts, u64)>,
    done: Vec<FileOutcome>,
    set_input: IoCounters,
    meter: Option<&'a crate::window::Meter>,
    /// The piece's bytes already counted in `meter`.
    written_before: u64,
    stats: &'s mut Vec<IoStatRow>,
    total: &'s mut IoCounters,
}

impl<'s, 'a> SetRun<'s, 'a> {
    /// Takes the set's settings (the tuner's, when it runs) and opens its piece.
    fn open(
        sh: &'s ChannelShared<'a>,
        repo: Option<&Repository>,
        channel: u32,
        unit: Unit<'s>,
        stats: &'s mut Vec<IoStatRow>,
        total: &'s mut IoCounters,
    ) -> Result<Self, EngineError> {
        let set = unit.set;
        let piece_path = recman_catalog::layout::piece(&sh.backup_dir, set.set_no, unit.piece_no);
        let tuner = sh.live.and_then(|l| l.tuner.as_ref());
        let device = match (tuner, set.files.first()) {
            (Some(_), Some(&i)) => {
                use std::os::unix::fs::MetadataExt;
                std::fs::metadata(sh.path_of(i))
                    .map(|m| m.dev())
                    .unwrap_or(0)
            }
            _ => 0,
        };
        let tuned = tuner.map(|t| t.for_set(device, set.mux, sh.io));
        let (plan, files_at_once, compression) = match tuned {
            Some(u) => (
                u.plan,
                u.files.min(set.files.len().max(1) as u32),
                u.compression,
            ),
            None => (
                BufferPlan::for_mux(set.mux, sh.io),
                set.mux,
                sh.header.compression,
            ),
        };
        let (set_started, cpu_before) =
            (std::time::Instant::now(), crate::tune::thread_cpu_micros());
        let process_cpu_before = crate::tuning::process_cpu_time();
        let header = piece_header(sh, unit, compression);
        let written_as = match sh.format {
            Some(f) => f.expand(&crate::piece_format::PieceVars {
                backup_id: &header.backup_id,
                db_name: &header.db_name,
                system_identifier: header.system_identifier,
                set_no: set.set_no,
                piece_no: unit.piece_no,
                created_unix: header.created_unix,
            })?,
            None => piece_path.clone(),
        };
        let writer = match &sh.output {
            Some(media) => SetOut::Piece(Box::new(SetWriter::create(
                media.as_ref(),
                repo.map(|r| r.location()).unwrap_or_default(),
                &written_as,
                &header,
                OutputShape::of(sh.io),
            )?)),
            None => SetOut::Null,
        };
        Ok(SetRun {
            sh,
            unit,
            channel,
            piece_path,
            written_as,
            tuner,
            device,
            tuned,
            plan,
            files_at_once,
            started: (set_started, cpu_before, process_cpu_before),
            writer,
            state: vec![(0, PageVerdicts::default(), 0); set.files.len()],
            done: Vec::new(),
            set_input: IoCounters::default(),
            meter: sh.live.map(|l| l.meter(channel)),
            written_before: 0,
            stats,
            total,
        })
    }

    /// Files change tracking answers for are read block by block first; the rest are
    /// multiplexed as always. Returns the files read so.
    fn read_tracked(
        &mut self,
        w: &Worker,
    ) -> Result<Vec<crate::tracked_read::TrackedFile>, EngineError> {
        let (sh, unit, channel, set) = (self.sh, self.unit, self.channel, self.unit.set);
        let tracked: Vec<crate::tracked_read::TrackedFile> = match sh.tracking {
            Some(t) => set
                .files
                .iter()
                .enumerate()
                .filter_map(|(slot, &i)| {
                    crate::tracked_read::plan_for(sh, t, i).map(|runs| {
                        crate::tracked_read::TrackedFile {
                            slot: slot as u32,
                            index: i,
                            runs,
                        }
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        for tf in &tracked {
            w.check()?;
            let t = sh.tracking.expect("tracked files come with tracking");
            let mut counters = crate::io::IoCounters::default();
            let (mut fo, opened) = crate::tracked_read::read_file(
                sh,
                t,
                &mut self.writer,
                tf,
                unit.range,
                &mut counters,
            )?;
            fo.set_no = set.set_no;
            fo.piece_no = unit.piece_no;
            let mut row = stat_row(
                "INPUT",
                channel,
                Some(sh.files[tf.index].rel.clone()),
                &counters,
                opened,
                now_micros(),
                (0, 0),
            );
            row.set_no = Some(set.set_no);
            row.piece_no = Some(unit.piece_no);
            row.device = sh.source_of(tf.index).agent_url();
            self.stats.push(row);
            self.total.add(&counters);
            self.done.push(fo);
        }
        Ok(tracked)
    }

    /// Takes one event of the multiplexed reads: a chunk to check and write, or a file's end.
    fn take(&mut self, ev: Event) -> Result<(), EngineError> {
        let (sh, unit, channel, set) = (self.sh, self.unit, self.channel, self.unit.set);
        match ev {
            Event::Chunk {
                slot,
                index,
                offset,
                data,
                file,
            } => self.chunk(slot, index, offset, data, file)?,
            Event::End {
                slot,
                index,
                end,
                counters,
                opened,
                closed,
                direct,
            } => {
                let (crc, verdicts, pages) = std::mem::take(&mut self.state[slot as usize]);
                self.writer.end_file(slot, end, crc)?;
                let buf = (self.plan.size as u64, self.plan.per_file as u64);
                let mut row = stat_row(
                    "INPUT",
                    channel,
                    Some(sh.files[index].rel.clone()),
                    &counters,
                    opened,
                    closed,
                    buf,
                );
                row.set_no = Some(set.set_no);
                row.piece_no = Some(unit.piece_no);
                row.device = sh.source_of(index).agent_url();
                row.read_mode = Some(if direct { "direct" } else { "buffered" }.into());
                self.stats.push(row);
                self.total.add(&counters);
                self.set_input.add(&counters);
                self.done.push(FileOutcome {
                    index,
                    set_no: set.set_no,
                    section: unit.range,
                    piece_no: unit.piece_no,
                    incremental: sh.filtered(index),
                    size: end,
                    crc32c: crc,
                    verdicts,
                    pages,
                    vanished: false,
                });
            }
            // Dropped by the server after we listed it; WAL replay removes it again.
            Event::Vanished { slot, index } => {
                self.writer.end_file(slot, 0, 0)?;
                self.done.push(FileOutcome {
                    index,
                    set_no: set.set_no,
                    section: unit.range,
                    piece_no: unit.piece_no,
                    incremental: sh.filtered(index),
                    size: 0,
                    crc32c: 0,
                    verdicts: PageVerdicts::default(),
                    pages: 0,
                    vanished: true,
                });
            }
        }
        Ok(())
    }

    /// One chunk of a file: its pages checked, then written whole, or only its blocks changed
    /// since the parent.
    fn chunk(
        &mut self,
        slot: u32,
        index: usize,
        offset: u64,
        data: &mut [u8],
        file: &crate::source::SourceFile,
    ) -> Result<(), EngineError> {
        let sh = self.sh;
        let writer = &mut self.writer;
        let sf = &sh.files[index];
        let (crc, verdicts, pages) = &mut self.state[slot as usize];
        if let Some(rf) = &sf.relfile {
            let rules = sh.page_rules(rf);
            check_chunk(Some(file), &rules, offset, data, verdicts)
                .map_err(|e| EngineError::io("re-read", sh.path_of(index), e))?;
            *pages += (data.len() / recman_page::BLCKSZ) as u64;
        }
        match sh.increment.filter(|_| sh.filtered(index)) {
            Some(inc) => {
                for (at, len) in crate::incremental::changed_runs(data, inc.parent_start_lsn) {
                    let run = &data[at..at + len];
                    *crc = crc32c::crc32c_append(*crc, run);
                    writer.chunk(slot, offset + at as u64, run)?;
                }
            }
            None => {
                let c = crc32c::crc32c(data);
                *crc = recman_format::crc32c_combine(*crc, c, data.len() as u64);
                writer.chunk_with_crc(slot, offset, data, c)?;
            }
        }
        sh.progress.advance(data.len() as u64);
        if let Some(m) = self.meter {
            use std::sync::atomic::Ordering::Relaxed;
            m.read.fetch_add(data.len() as u64, Relaxed);
            let now = writer.bytes_written();
            m.written
                .fetch_add(now.saturating_sub(self.written_before), Relaxed);
            self.written_before = now;
        }
        Ok(())
    }

    /// Ends the set's writes and lets the tuner learn from it.
    fn finish(self) -> Result<Option<(SetOutcome, Option<Uncommitted>)>, EngineError> {
        let (sh, unit, channel, set) = (self.sh, self.unit, self.channel, self.unit.set);
        let (set_started, cpu_before, process_cpu_before) = self.started;
        // The piece's commit is the caller's (see run_channel); what the tuner learns from is the
        // set's reads and writes.
        let staged = match self.writer {
            SetOut::Piece(w) => Some(w.finish_writes()?),
            SetOut::Null => None,
        };
        let set_output = staged.as_ref().map(|u| u.piece().output.clone());
        let (size, crc32c, raw_bytes) = staged.as_ref().map_or((0, 0, 0), |u| {
            (u.piece().size, u.piece().crc32c, u.piece().raw_bytes)
        });
        if let (Some(t), Some(live), Some(used)) = (self.tuner, sh.live, self.tuned) {
            t.learn(
                live,
                &used,
                &crate::tune::SetMeasure {
                    channel,
                    device: self.device,
                    input: &self.set_input,
                    output: set_output.as_ref(),
                    elapsed_us: set_started.elapsed().as_micros() as u64,
                    cpu_us: crate::tune::thread_cpu_micros().saturating_sub(cpu_before),
                    process_cpu_us: crate::tuning::process_cpu_time()
                        .saturating_sub(process_cpu_before)
                        .as_micros() as u64,
                },
            );
        }
        if let Some(m) = self.meter {
            m.written.fetch_add(
                size.saturating_sub(self.written_before),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        Ok(Some((
            SetOutcome {
                set_no: set.set_no,
                piece_no: unit.piece_no,
                channel,
                piece_path: self.piece_path,
                written_as: self.written_as,
                size,
                crc32c,
                raw_bytes,
                files: self.done,
            },
            staged,
        )))
    }
}

/// The header of a unit's piece: the backup's, with the set's numbers, codec and files.
fn piece_header(
    sh: &ChannelShared,
    unit: Unit,
    compression: recman_format::Compression,
) -> PieceHeader {
    let set = unit.set;
    let mut header = sh.header.clone();
    header.compression = compression;
    header.set_no = set.set_no;
    header.piece_no = unit.piece_no;
    header.files = set
        .files
        .iter()
        .enumerate()
        .map(|(slot, &i)| SetFile {
            index: slot as u32,
            path: sh.files[i].rel.clone(),
        })
        .collect();
    header
}

/// Whether the backup's DURATION window has ended: Ok(true) stops the channel when PARTIAL
/// keeps what is finished, otherwise the backup fails.
fn window_ended(sh: &ChannelShared) -> Result<bool, EngineError> {
    let Some(live) = sh.live.filter(|l| l.past_deadline()) else {
        return Ok(false);
    };
    let w = live.window.expect("a deadline comes from a window");
    if w.partial {
        live.cut_short
            .store(true, std::sync::atomic::Ordering::Relaxed);
        return Ok(true);
    }
    Err(EngineError::Deadline {
        backup_id: sh.header.backup_id.to_string(),
        window: w.text(),
    })
}
