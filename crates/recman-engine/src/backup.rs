//! BACKUP DATABASE: an online full backup of a running cluster through N channels.

mod checks;
mod entries;
mod failed;
mod optimize;
pub(crate) mod since;
pub(crate) mod standby;

use crate::backup_types::PARTIAL;
use crate::pagecheck::describe_corrupt;
use checks::{check_target, wait_for_wal};
use entries::{LazyEntries, file_entry};
pub(crate) use failed::explain_failed;

use crate::channel::run_channel;
use crate::channel_shared::Unit;
use crate::channel_shared::{ChannelShared, FileOutcome};
use crate::context::Context;
use crate::error::EngineError;
use crate::io::{BufferPlan, IoSettings};
use crate::plan::{PlanSettings, plan};
use crate::progress::Progress;
use crate::util::{backup_dir, hostname, now_micros, rfc3339};
use recman_catalog::IoStatRow;
use recman_catalog::{BackupRecord, BackupStatus, CorruptBlock, PieceRecord};
use recman_format::manifest::*;
use recman_format::{Compression, PieceHeader};
use recman_pg::{Lsn, Session, WalName, wal_segments_between};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct BackupOptions {
    pub channels: u32,
    pub filesperset: u32,
    pub maxopenfiles: u32,
    pub compression: Compression,
    pub tag: Option<String>,
    /// Corrupt blocks tolerated per file (RMAN's MAXCORRUPT); more fails the backup.
    pub maxcorrupt: u32,
    /// How long to wait for the WAL the backup needs to reach the repository.
    pub archive_timeout: Duration,
    pub io: IoSettings,
    /// RMAN's SECTION SIZE: larger files are split into sections written as separate pieces.
    pub section_size: Option<u64>,
    /// RMAN's INCREMENTAL LEVEL 0 or 1; None is a full backup that no level 1 builds on.
    pub incremental_level: Option<u8>,
    /// A level 1 against the last level 0 instead of the last level 0 or 1.
    pub cumulative: bool,
    /// RMAN's BACKUP AS COPY: also keep the backup as a plain data directory (an image copy).
    pub as_copy: bool,
    /// RMAN's FOR RECOVER OF COPY: a level 1 relative to the image copy named by the tag.
    pub for_recover_of_copy: bool,
    /// The device type the pieces go to (RMAN's DEVICE TYPE); None: the repository itself.
    /// The manifest always goes to the repository, which stays the record of every backup.
    pub device: Option<String>,
    /// A streaming standby of the target (conninfo) whose data directory the channels read
    /// relation files from; the backup still starts and stops on the primary.
    pub standby: Option<String>,
    /// The agent serving that standby's data directory (issue 19): the standby may then run
    /// on another host.
    pub standby_agent: Option<String>,
    /// RMAN's BACKUP OPTIMIZATION: a full or level 0 leaves out files identical to their
    /// version in the newest complete full backup, which becomes its parent.
    pub optimization: bool,
    /// FORMAT with a location: the pieces are written in its directory under its names.
    pub format: Option<crate::piece_format::PieceFormat>,
    /// RMAN's DURATION: a window for the backup and what to minimize in it.
    pub window: Option<crate::window::Window>,
    /// RMAN's NOT BACKED UP SINCE TIME (Unix microseconds): files held by a backup started
    /// since then go as their changed pages only (see `backup/since.rs`).
    pub not_backed_up_since: Option<i64>,
    /// `--tune auto`: adapt read sizes, queue depth and the zstd level between sets.
    pub tune_auto: bool,
    /// The settings `--tune auto` took from advise before the first set, for the backup's
    /// tuning events.
    pub tune_notes: Vec<crate::tune::TuneNote>,
    /// `--tune auto` with a calibration: advise's predicted aggregate read rate, bytes/s.
    /// With it the backup knows whether its sets would last long enough to learn from.
    pub tune_expected_rate: Option<f64>,
    /// RMAN's CHECK LOGICAL: heap and B-tree pages are checked inside too; a page that fails
    /// counts against MAXCORRUPT like a checksum failure.
    pub check_logical: bool,
    /// RMAN's MAXSETSIZE: no backup set holds more bytes than this.
    pub maxsetsize: Option<u64>,
    /// RMAN's MAXPIECESIZE: no piece holds more bytes of files than this; a larger file is
    /// backed up in sections.
    pub max_piece_size: Option<u64>,
}

impl Default for BackupOptions {
    fn default() -> Self {
        BackupOptions {
            channels: 1,
            filesperset: 64,
            maxopenfiles: 8,
            compression: Compression::None,
            tag: None,
            maxcorrupt: 0,
            archive_timeout: Duration::from_secs(120),
            io: IoSettings::default(),
            section_size: None,
            incremental_level: None,
            cumulative: false,
            as_copy: false,
            for_recover_of_copy: false,
            device: None,
            standby: None,
            standby_agent: None,
            optimization: false,
            format: None,
            window: None,
            not_backed_up_since: None,
            tune_auto: false,
            tune_notes: Vec::new(),
            tune_expected_rate: None,
            check_logical: false,
            maxsetsize: None,
            max_piece_size: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct BackupReport {
    pub record: BackupRecord,
    /// Bytes per second from command start to end (the Sun benchmark's "total" speed).
    pub total_rate: f64,
    /// Bytes per second while data moved (its "sustained" speed).
    pub sustained_rate: f64,
    pub memory_budget: u64,
    pub sets: usize,
    pub corrupt: Vec<CorruptBlock>,
    pub elapsed: Duration,
}

pub fn backup_database(
    ctx: &Context,
    opts: &BackupOptions,
    progress: &dyn Progress,
) -> Result<BackupReport, EngineError> {
    let t0 = Instant::now();
    opts.io.validate()?;
    if opts.channels == 0 || opts.filesperset == 0 || opts.maxopenfiles == 0 {
        return Err(crate::refusal::Input::AtLeastOne {
            options: "--channels, --filesperset and --maxopenfiles",
        }
        .into());
    }
    // The manifest is written last: a missing or wrong MAC key must stop the backup before it
    // reads anything, not after.
    ctx.repo.mac_key()?;
    let source = crate::source::of_context(ctx, "backup")?;
    let source = source.as_ref();
    let facts = source.facts()?;
    let mut session = crate::source::server_session(ctx, source)?;
    check_target(ctx, source, &facts, &session)?;
    let _lock = ctx.repo.lock("backup database")?;
    let cat = ctx.repo.catalog();
    fail_interrupted(ctx, progress)?;
    let history = crate::tracking_path::current_history(ctx, source, &mut session)?;
    let ((level, increment, notice), make_copy) = copy_or_parent(ctx, opts, &history)?;
    if let Some(n) = notice {
        progress.notice(&n);
    }
    let inc = IncrementChoice {
        level,
        increment: increment.as_ref(),
        cumulative: opts.cumulative && level == Some(1),
    };

    let mut rec = start_record(ctx, opts, &mut session, level)?;
    cat.insert_backup(&rec)?;
    let dir = backup_dir(&ctx.db.name, &rec.id);
    let result = run(
        ctx,
        opts,
        t0,
        &inc,
        progress,
        &mut session,
        &mut rec,
        source,
        &dir,
    );
    match result {
        Ok(r) => {
            if let Some(tag) = &make_copy {
                progress.notice(&format!("making image copy {tag} from backup {}", rec.id));
                crate::copy::make_copy(ctx, tag, &rec.id, progress)?;
            }
            let elapsed = t0.elapsed();
            let total_rate = rec.db_bytes as f64 / elapsed.as_secs_f64().max(1e-6);
            Ok(BackupReport {
                record: rec,
                sets: r.sets,
                corrupt: r.corrupt,
                elapsed,
                total_rate,
                sustained_rate: r.sustained_rate,
                memory_budget: r.memory_budget,
            })
        }
        Err(e) => Err(clean_failed(ctx, opts, &mut session, &mut rec, &dir, e)),
    }
}

/// Under the lock no other backup can be running: a RUNNING one was interrupted, and is marked
/// FAILED with its pieces removed.
fn fail_interrupted(ctx: &Context, progress: &dyn Progress) -> Result<(), EngineError> {
    for id in ctx.repo.catalog().fail_running_backups(
        ctx.db.id,
        "interrupted: the process running it ended before it completed",
    )? {
        let _ = ctx.repo.remove_prefix(&backup_dir(&ctx.db.name, &id));
        let _ = crate::pieces::remove_copies_of_backup(&ctx.repo, &backup_dir(&ctx.db.name, &id));
        progress.message(&format!(
            "marked interrupted backup {id} FAILED and removed its pieces"
        ));
    }
    Ok(())
}

/// Names the backup (its id and tag), starts it on the server and returns its RUNNING record.
fn start_record(
    ctx: &Context,
    opts: &BackupOptions,
    session: &mut Session,
    level: Option<u8>,
) -> Result<BackupRecord, EngineError> {
    let cat = ctx.repo.catalog();
    let started = chrono::Utc::now();
    let stamp = started.format("%Y%m%dT%H%M%S").to_string();
    let id = format!("B{stamp}{:03}", started.timestamp_subsec_millis());
    let tag = match &opts.tag {
        Some(t) => t.to_uppercase(),
        // RMAN's default tag has one-second resolution; two backups in one second must still
        // be told apart by tag, so a taken default gets a suffix.
        None => {
            let base = format!("TAG{stamp}");
            let mut tag = base.clone();
            let mut n = 1;
            while !cat.backup_by_tag(ctx.db.id, &tag)?.is_empty() {
                n += 1;
                tag = format!("{base}_{n}");
            }
            tag
        }
    };
    let start = session.backup_start(&format!("recman {id}"))?;
    let seg = session.wal_segment_size;
    Ok(BackupRecord {
        id: id.clone(),
        db_id: ctx.db.id,
        tag: tag.clone(),
        backup_type: match level {
            None => "FULL",
            Some(0) => "LEVEL0",
            Some(_) => "LEVEL1",
        }
        .into(),
        status: BackupStatus::Running,
        start_lsn: start.lsn.0,
        stop_lsn: None,
        timeline: start.timeline,
        start_wal: WalName::containing(start.timeline, start.lsn, seg).to_string(),
        stop_wal: None,
        start_time: started.timestamp_micros(),
        stop_time: None,
        stop_next_xid: None,
        db_bytes: 0,
        written_bytes: 0,
        file_count: 0,
        channels: opts.channels,
        compression: opts.compression.to_string(),
        filesperset: opts.filesperset,
        maxopenfiles: opts.maxopenfiles,
        pid: std::process::id(),
        host: hostname(),
        error: None,
    })
}

/// Ends a failed backup: on the server (unless the failure came after the stop), in the
/// catalog, and in every place its pieces went; returns the error explained.
fn clean_failed(
    ctx: &Context,
    opts: &BackupOptions,
    session: &mut Session,
    rec: &mut BackupRecord,
    dir: &str,
    e: EngineError,
) -> EngineError {
    let cat = ctx.repo.catalog();
    // End the backup on the server too (PostgreSQL would when the session closes, but
    // a stopped recman says so itself), unless the failure came after the stop.
    if rec.stop_lsn.is_none() {
        let _ = session.backup_stop();
    }
    rec.status = BackupStatus::Failed;
    rec.error = Some(e.to_string());
    rec.stop_time = Some(now_micros());
    let _ = cat.update_backup(rec);
    // Nothing of a failed backup may be mistaken for a usable one later.
    let _ = ctx.repo.remove_prefix(dir);
    if let Some(d) = &opts.device
        && let Ok(m) = crate::devices::media_for(&ctx.repo, d)
        && let Ok(objects) = m.list(&format!("{dir}/"))
    {
        for o in objects {
            let _ = m.remove(&o.name);
        }
    }
    let _ = crate::pieces::remove_copies_of_backup(&ctx.repo, dir);
    explain_failed(e, rec, dir)
}

/// Level, parent, notice, and the image copy to make afterwards: `--as-copy` makes a level 0
/// and materializes it; `--for-recover-of-copy` builds a level 1 on the copy's state (or, with no
/// copy yet, makes the copy, as RMAN's rolling-copy script expects on its first run).
fn copy_or_parent(
    ctx: &Context,
    opts: &BackupOptions,
    history: &[crate::tracking_path::Span],
) -> Result<(crate::incremental::ParentChoice, Option<String>), EngineError> {
    if let Some(t) = opts.not_backed_up_since
        && !opts.as_copy
        && !opts.for_recover_of_copy
    {
        return Ok((since::choose(ctx, t)?, None));
    }
    if !opts.as_copy && !opts.for_recover_of_copy {
        let (l, i, n) = crate::incremental::choose_parent(
            ctx,
            opts.incremental_level,
            opts.cumulative,
            history,
        )?;
        return Ok(((l, i, n), None));
    }
    let tag = opts
        .tag
        .clone()
        .map(|t| t.to_uppercase())
        .ok_or_else(|| EngineError::from(crate::refusal::Backups::CopyNeedsTag))?;
    if opts.as_copy {
        if crate::copy::load_copy(ctx, &tag)?.is_some() {
            return Err(crate::refusal::Backups::CopyExists { tag }.into());
        }
        return Ok(((Some(0), None, None), Some(tag)));
    }
    if opts.incremental_level != Some(1) {
        return Err(crate::refusal::Backups::RecoverOfCopyNeedsLevel1.into());
    }
    match crate::copy::copy_increment(ctx, &tag)? {
        Some(inc) => Ok(((Some(1), Some(inc), None), None)),
        None => Ok((
            (
                Some(0),
                None,
                Some(format!(
                    "no image copy {tag} yet: taking a level 0 and making the copy"
                )),
            ),
            Some(tag),
        )),
    }
}

/// The level a backup got and what it is relative to.
struct IncrementChoice<'a> {
    level: Option<u8>,
    increment: Option<&'a crate::incremental::Increment>,
    cumulative: bool,
}

struct RunOutcome {
    sets: usize,
    corrupt: Vec<CorruptBlock>,
    sustained_rate: f64,
    memory_budget: u64,
}

type RunResult = Result<RunOutcome, EngineError>;

/// What the steps of one run share: the caller's values, fixed while it runs.
struct Job<'a> {
    ctx: &'a Context,
    opts: &'a BackupOptions,
    inc: &'a IncrementChoice<'a>,
    progress: &'a dyn Progress,
    source: &'a dyn crate::source::DataSource,
}

/// How the files are laid out in sets, and what `--tune auto` changed for that.
struct Layout {
    plan: crate::plan::Plan,
    /// Why the sets stay as planned when they would be too short to learn from.
    short_sets: Option<crate::tune::TuneNote>,
    learn_layout: bool,
    filesperset: u32,
    section_size: Option<u64>,
}

/// What the run read before its channels started, for the manifest at its end.
struct Scanned {
    scan: crate::scan::Scan,
    unchanged: Option<optimize::Unchanged>,
    tablespaces: Vec<recman_pg::Tablespace>,
}

/// What the run learned at its end: the server's answer to the stop, what the backup read, and
/// the corrupt blocks it found.
struct End {
    stop: recman_pg::BackupStop,
    read: ManifestRead,
    corrupt: Vec<CorruptBlock>,
}

/// The pieces the channels wrote, in set and piece order, as the catalog and the manifest
/// record them.
struct Tally<'s> {
    pieces: Vec<PieceRecord>,
    sets: Vec<ManifestSet>,
    /// Each scanned file's outcomes, by its index in the scan.
    by_index: Vec<Vec<&'s FileOutcome>>,
}

#[allow(clippy::too_many_arguments)]
fn run(
    ctx: &Context,
    opts: &BackupOptions,
    t0: Instant,
    inc: &IncrementChoice,
    progress: &dyn Progress,
    session: &mut Session,
    rec: &mut BackupRecord,
    source: &dyn crate::source::DataSource,
    dir: &str,
) -> RunResult {
    let job = Job {
        ctx,
        opts,
        inc,
        progress,
        source,
    };
    let scanned = job.scan(session)?;
    let scan = &scanned.scan;
    let layout = job.lay_out(scan, rec)?;
    let memory_budget = job.announce_budget(&layout.plan);
    progress.start("backup", scan.total_bytes());
    let live = job.live(t0, scan, &layout);
    let queue = Mutex::new(
        Unit::all(&layout.plan.sets)
            .into_iter()
            .collect::<VecDeque<_>>(),
    );
    let (output, device) = job.open_output()?;
    let standby_source = job.standby(rec)?;
    let tracking = job.tracking(session, rec)?;
    let read_way = crate::adapt::Adaptive::default();
    let shared = ChannelShared {
        repo: Some(ctx.repo.handle()),
        output: Some(output),
        files: &scan.files,
        source,
        relation_source: standby_source.as_deref(),
        header: job.piece_header(rec),
        backup_dir: dir.to_string(),
        checksums: session.checksums_enabled,
        logical: opts.check_logical,
        start_lsn: Some(rec.start_lsn),
        progress,
        io: &opts.io,
        increment: inc.increment,
        tracking: tracking.as_ref(),
        queue: &queue,
        format: opts.format.as_ref(),
        live: Some(&live),
        read_way: &read_way,
    };
    let outcomes = run_channels(&shared, &live, opts.channels);
    progress.finish();
    if read_way.used() {
        progress.message(&read_way.read_summary());
    }
    let (sets, stats) = job.gather(outcomes?, &layout.plan, &live, rec)?;
    let sustained_rate = sustained_rate(&stats);
    let read = crate::backup_reads::record(ctx, &rec.id, &stats, tracking.as_ref(), progress)?;
    let stop = session.backup_stop()?;
    rec.stop_lsn = Some(stop.lsn.0);
    rec.timeline = stop.timeline;
    rec.stop_next_xid = Some(stop.next_xid);
    let seg = session.wal_segment_size;
    let needed = wal_segments_between(stop.timeline, Lsn(rec.start_lsn), stop.lsn, seg);
    rec.stop_wal = needed.last().map(|w| w.to_string());
    let corrupt = job.check_corrupt(scan, &sets, session, rec)?;
    wait_for_wal(ctx, session, &needed, opts.archive_timeout)?;

    // Manifest last: its presence marks a complete backup in the repository.
    let Tally {
        pieces,
        sets: msets,
        by_index,
    } = job.tally(&sets, scan.files.len(), device.as_ref(), rec)?;
    total(rec, &scanned, &by_index, &pieces);
    let end = End {
        stop,
        read,
        corrupt,
    };
    let manifest = job.manifest(rec, session, &scanned, &by_index, msets, &end);
    // Streamed into the file: a manifest of a million files is never one string in memory.
    let mpath = format!("{dir}/manifest.json");
    let mut mf = ctx.repo.create_atomic(&mpath)?;
    crate::manifest_io::write(&ctx.repo, &mut mf, &manifest, &mpath)?;
    mf.commit()?;
    rec.status = BackupStatus::Available;
    ctx.repo
        .catalog()
        .complete_backup(rec, &pieces, &end.corrupt)?;
    ctx.repo.catalog().add_io_stats(&stats)?;
    let (samples, events) = live.take(&rec.id);
    ctx.repo.catalog().add_io_samples(&samples)?;
    ctx.repo.catalog().add_tuning_events(&events)?;
    Ok(RunOutcome {
        sets: sets.len(),
        corrupt: end.corrupt,
        sustained_rate,
        memory_budget,
    })
}

impl Job<'_> {
    /// Lists the files (less those BACKUP OPTIMIZATION leaves out) and the tablespaces.
    fn scan(&self, session: &mut Session) -> Result<Scanned, EngineError> {
        let mut scan = self.source.scan()?;
        let unchanged = self.take_unchanged(&mut scan)?;
        let tablespaces = session.tablespaces()?;
        Ok(Scanned {
            scan,
            unchanged,
            tablespaces,
        })
    }

    /// BACKUP OPTIMIZATION: takes the files unchanged since the reference backup out of the scan.
    fn take_unchanged(
        &self,
        scan: &mut crate::scan::Scan,
    ) -> Result<Option<optimize::Unchanged>, EngineError> {
        let opts = self.opts;
        let unchanged = if opts.optimization
            && self.inc.increment.is_none()
            && !opts.as_copy
            && !opts.for_recover_of_copy
        {
            optimize::take_unchanged(self.ctx, self.source, scan)?
        } else {
            None
        };
        if let Some(u) = &unchanged {
            self.progress.notice(&format!(
                "backup optimization: {} file(s), {} bytes, unchanged since backup {}, are not written again",
                u.entries.len(),
                u.bytes,
                u.reference
            ));
        }
        Ok(unchanged)
    }

    /// Plans the sets (with what `--tune auto` needs to learn between them) and says the plan.
    fn lay_out(
        &self,
        scan: &crate::scan::Scan,
        rec: &mut BackupRecord,
    ) -> Result<Layout, EngineError> {
        let (opts, progress) = (self.opts, self.progress);
        let sizes: Vec<u64> = scan.files.iter().map(|f| f.size).collect();
        // Known before anything is written, so a failed backup can say what it needed.
        rec.db_bytes = sizes.iter().sum();
        // Auto tuning learns between sets: each channel gets at least 8 of them, unless the
        // prediction says those sets would be too short for the tuner to read anything from.
        let short_sets = opts
            .tune_auto
            .then(|| crate::tune::short_sets(rec.db_bytes, opts.tune_expected_rate))
            .flatten();
        if let Some(n) = &short_sets {
            progress.notice(&n.reason);
        }
        let learn_layout = opts.tune_auto && short_sets.is_none();
        let filesperset = if learn_layout {
            let per = (sizes.len() / (opts.channels as usize * crate::tune::LEARNING_SETS as usize))
                .max(1) as u32;
            opts.filesperset.min(per)
        } else {
            opts.filesperset
        };
        // ... and a file larger than a set's share is cut into sections, so that the first set
        // (the plan starts with the largest files) is not the whole backup before anything is
        // learned.
        let section_size = match opts.section_size {
            None if learn_layout => auto_section(&sizes, opts.channels),
            given => given,
        };
        let settings = PlanSettings {
            channels: opts.channels,
            filesperset,
            maxopenfiles: opts.maxopenfiles,
            section_size,
        };
        let mut the_plan = plan(&sizes, settings);
        if let Some(max) = opts.maxsetsize {
            crate::plan_cap::cap_sets(&mut the_plan, &sizes, max).map_err(|(f, size)| {
                EngineError::from(crate::refusal::Backups::FileOverMaxSetSize {
                    file: scan.files[f].rel.to_string(),
                    size,
                    max,
                })
            })?;
        }
        if let Some(max) = opts.max_piece_size {
            crate::plan_cap::cap_pieces(&mut the_plan, &sizes, max).map_err(|(f, size)| {
                EngineError::from(crate::refusal::Backups::FileOverMaxPieceSize {
                    file: scan.files[f].rel.to_string(),
                    size,
                    max,
                })
            })?;
        }
        progress.message(&format!(
            "backup {} of database {}: {} files, {} bytes, {} sets over {} channel(s), {} files per set",
            rec.id, self.ctx.db.name, scan.files.len(), scan.total_bytes(), the_plan.sets.len(), opts.channels, the_plan.files_per_set
        ));
        Ok(Layout {
            plan: the_plan,
            short_sets,
            learn_layout,
            filesperset,
            section_size,
        })
    }

    /// The memory the channels' buffers take, said before they take it.
    fn announce_budget(&self, the_plan: &crate::plan::Plan) -> u64 {
        let opts = self.opts;
        let memory_budget: u64 = {
            let mux = the_plan.sets.iter().map(|s| s.mux).max().unwrap_or(1);
            opts.io.channel_budget(mux) * opts.channels as u64
        };
        let bp = BufferPlan::for_mux(
            the_plan.sets.iter().map(|s| s.mux).max().unwrap_or(1),
            &opts.io,
        );
        self.progress.notice(&format!(
            "memory budget {} MiB: {} channel(s) x ({} open files x {} input buffers x {} KiB + {} output buffers x {} KiB + compression and write buffers), i/o mode {}",
            memory_budget >> 20,
            opts.channels,
            the_plan.sets.iter().map(|s| s.mux).max().unwrap_or(1),
            bp.per_file,
            bp.size >> 10,
            opts.io.output_buffers,
            opts.io.blksize >> 10,
            opts.io.mode
        ));
        memory_budget
    }

    /// The run's live state (DURATION window, tuner, samples), with the tuning it starts from
    /// recorded as its first events.
    fn live(&self, t0: Instant, scan: &crate::scan::Scan, layout: &Layout) -> crate::window::Live {
        let opts = self.opts;
        // Sets too short to learn from are too short to judge a change by as well: at scale 100
        // unthrottled the tuner's sets of 0.2-0.4 s read at 550-960 MB/s by their contents alone,
        // and its changes made the backup 7 % slower than advise's plan left as it was.
        let live = crate::window::Live::new(opts.channels, opts.window, t0, scan.total_bytes())
            .with_tuner(
                layout
                    .learn_layout
                    .then(|| crate::tune::Tuner::new(opts.compression)),
            );
        for n in opts.tune_notes.iter().chain(&layout.short_sets) {
            live.event(
                None,
                &n.setting,
                n.old.clone(),
                n.new.clone(),
                n.reason.clone(),
            );
        }
        if let (None, Some(sec)) = (opts.section_size, layout.section_size) {
            live.event(
                None,
                "section_size",
                None,
                sec.to_string(),
                "tune auto: files larger than a set's share are read in sections, so that settings can change within them".into(),
            );
        }
        if layout.learn_layout && layout.filesperset != opts.filesperset {
            live.event(
                None,
                "filesperset",
                Some(opts.filesperset.to_string()),
                layout.filesperset.to_string(),
                "tune auto: at least 8 sets per channel, so that settings can change between sets"
                    .into(),
            );
        }
        if let Some(w) = &opts.window {
            self.progress.notice(&format!(
                "DURATION {}{} MINIMIZE {}",
                w.text(),
                if w.partial { " PARTIAL" } else { "" },
                match w.minimize {
                    crate::window::Minimize::Time => "TIME",
                    crate::window::Minimize::Load => "LOAD",
                }
            ));
        }
        live
    }

    /// Where the pieces go: a FORMAT directory, another device type, or the repository; with
    /// the device type to record for them (None: the repository).
    fn open_output(
        &self,
    ) -> Result<(std::sync::Arc<dyn recman_media::Media>, Option<String>), EngineError> {
        let ctx = self.ctx;
        let (output, device) = match (&self.opts.device, &self.opts.format) {
            (Some(d), Some(_)) if d != crate::devices::repository_device(&ctx.repo) => {
                return Err(crate::refusal::Input::FormatWithDevice {
                    device: d.to_string(),
                }
                .into());
            }
            (_, Some(f)) => {
                std::fs::create_dir_all(&f.dir).map_err(|e| {
                    EngineError::from(crate::refusal::Input::FormatDir {
                        dir: f.dir.display().to_string(),
                        why: e.to_string(),
                    })
                })?;
                (
                    crate::devices::media_for(&ctx.repo, &f.device())?,
                    Some(f.device()),
                )
            }
            (Some(d), None) if d != crate::devices::repository_device(&ctx.repo) => {
                (crate::devices::media_for(&ctx.repo, d)?, Some(d.clone()))
            }
            _ => (std::sync::Arc::clone(ctx.repo.media()), None),
        };
        if let Some(d) = &device {
            self.progress.notice(&format!(
                "channels write to device type {d}: {}",
                output.describe()
            ));
        }
        Ok((output, device))
    }

    /// The standby whose data directory the channels read relation files from, if any.
    fn standby(
        &self,
        rec: &BackupRecord,
    ) -> Result<Option<Box<dyn crate::source::DataSource>>, EngineError> {
        let opts = self.opts;
        Ok(match (&opts.standby, &opts.standby_agent) {
            (None, None) => None,
            (conninfo, agent) => Some(standby::prepare(
                self.ctx,
                conninfo.as_deref(),
                agent.as_deref(),
                Lsn(rec.start_lsn),
                opts.archive_timeout,
                self.progress,
            )?),
        })
    }

    /// The header every piece of this backup starts from; each set fills in its own numbers.
    fn piece_header(&self, rec: &BackupRecord) -> PieceHeader {
        PieceHeader {
            backup_id: rec.id.clone(),
            db_name: self.ctx.db.name.clone(),
            system_identifier: self.ctx.db.system_identifier,
            set_no: 0,
            piece_no: 0,
            compression: self.opts.compression,
            created_unix: rec.start_time / 1_000_000,
            mac: None,
            files: Vec::new(),
        }
    }

    /// Change tracking for an incremental: which pages changed since its parent.
    fn tracking(
        &self,
        session: &Session,
        rec: &BackupRecord,
    ) -> Result<Option<crate::tracking::Tracking>, EngineError> {
        Ok(match self.inc.increment {
            Some(i) => crate::tracking::load(
                self.ctx,
                self.source,
                i,
                rec.start_lsn,
                rec.timeline,
                session.wal_segment_size,
                self.progress,
            )?,
            None => None,
        })
    }

    /// The channels' sets and I/O statistics; a run its DURATION window cut short keeps only
    /// whole files, as a PARTIAL backup.
    fn gather(
        &self,
        outcomes: Vec<crate::channel::ChannelOutcome>,
        the_plan: &crate::plan::Plan,
        live: &crate::window::Live,
        rec: &mut BackupRecord,
    ) -> Result<(Vec<crate::channel::SetOutcome>, Vec<IoStatRow>), EngineError> {
        let progress = self.progress;
        let mut sets = Vec::new();
        let mut stats: Vec<IoStatRow> = Vec::new();
        for v in outcomes {
            if let Some(n) = &v.notice {
                progress.notice(n);
            }
            sets.extend(v.sets);
            stats.extend(v.stats);
        }
        let partial = live.cut_short.load(std::sync::atomic::Ordering::Relaxed);
        if partial {
            keep_whole_files(&the_plan.sets, &mut sets);
            if sets.iter().all(|s| s.files.is_empty()) {
                return Err(crate::refusal::Backups::NothingInWindow {
                    backup_id: rec.id.clone(),
                    window: self.opts.window.map(|w| w.text()).unwrap_or_default(),
                }
                .into());
            }
            rec.backup_type = PARTIAL.into();
            let files: usize = sets.iter().map(|s| s.files.len()).sum();
            progress.notice(&format!(
                "DURATION window ended: backup {} keeps the {} file(s) of the {} set(s) finished as a PARTIAL backup; hint: complete it with `recman backup database --not-backed-up-since '{}'`",
                rec.id,
                files,
                sets.len(),
                rfc3339(rec.start_time)
            ));
        }
        for r in &mut stats {
            r.job_id = rec.id.clone();
            r.job_type = "BACKUP".into();
            r.backup_id = Some(rec.id.clone());
        }
        Ok((sets, stats))
    }

    /// Corruption: resolves the relations' names, then applies MAXCORRUPT per file.
    fn check_corrupt(
        &self,
        scan: &crate::scan::Scan,
        sets: &[crate::channel::SetOutcome],
        session: &mut Session,
        rec: &BackupRecord,
    ) -> Result<Vec<CorruptBlock>, EngineError> {
        let opts = self.opts;
        let mut corrupt = Vec::new();
        let mut over_limit = Vec::new();
        for so in sets {
            for fo in &so.files {
                if fo.verdicts.corrupt.is_empty() {
                    continue;
                }
                let f = &scan.files[fo.index];
                let relation = f
                    .relfile
                    .as_ref()
                    .and_then(|r| session.relation_name(r.db_oid, r.tablespace_oid, r.relfilenode));
                if fo.verdicts.corrupt.len() as u32 > opts.maxcorrupt {
                    over_limit.push(format!("{} ({} corrupt)", f.rel, fo.verdicts.corrupt.len()));
                }
                for (block, fault) in &fo.verdicts.corrupt {
                    corrupt.push(CorruptBlock {
                        backup_id: rec.id.clone(),
                        path: f.rel.clone(),
                        block: *block,
                        kind: fault.kind().to_string(),
                        relation: relation.clone(),
                        detail: fault.to_string(),
                    });
                }
            }
        }
        if !over_limit.is_empty() {
            let list: Vec<String> = corrupt.iter().map(describe_corrupt).collect();
            return Err(EngineError::remedy(
                crate::error::ErrorKind::Corrupt,
                format!(
                    "backup {} failed: exceeded the limit of {} corrupt block(s) per file in {}; corrupt blocks: {}",
                    rec.id,
                    opts.maxcorrupt,
                    crate::util::cut_list(&over_limit, ", "),
                    crate::util::cut_list(&list, "; ")
                ),
                crate::action::Hint::new()
                    .text("repair the relation, or ")
                    .act(crate::action::Action::AcceptCorruptBlocks),
            ));
        }
        Ok(corrupt)
    }

    /// The pieces in set and piece order: their catalog rows and manifest sets, each file's
    /// outcomes by its index; a piece on another device type gets its copy recorded first.
    fn tally<'s>(
        &self,
        sets: &'s [crate::channel::SetOutcome],
        files: usize,
        device: Option<&String>,
        rec: &BackupRecord,
    ) -> Result<Tally<'s>, EngineError> {
        let mut pieces = Vec::new();
        let mut msets: Vec<ManifestSet> = Vec::new();
        let mut by_index: Vec<Vec<&FileOutcome>> = vec![Vec::new(); files];
        let mut ordered: Vec<&crate::channel::SetOutcome> = sets.iter().collect();
        ordered.sort_by_key(|s| (s.set_no, s.piece_no));
        for so in ordered {
            for fo in &so.files {
                by_index[fo.index].push(fo);
            }
            if let Some(d) = device {
                // Before the manifest: the backup must not become AVAILABLE with pieces that
                // restore cannot find.
                self.ctx
                    .repo
                    .catalog()
                    .add_copy(&recman_catalog::CopyRecord {
                        object: so.piece_path.clone(),
                        device: d.clone(),
                        name: so.written_as.clone(),
                        size: so.size,
                        crc32c: so.crc32c,
                        primary: true,
                        created: now_micros(),
                    })?;
            }
            pieces.push(PieceRecord {
                backup_id: rec.id.clone(),
                set_no: so.set_no,
                piece_no: so.piece_no,
                channel: so.channel,
                path: so.piece_path.clone(),
                size: so.size,
                crc32c: so.crc32c,
                file_count: so.files.len() as u32,
                raw_bytes: so.raw_bytes,
            });
            let piece = ManifestPiece {
                piece_no: so.piece_no,
                path: so.piece_path.clone(),
                size: so.size,
                crc32c: so.crc32c,
                device: device.cloned(),
            };
            match msets.last_mut() {
                Some(m) if m.set_no == so.set_no => m.pieces.push(piece),
                _ => msets.push(ManifestSet {
                    set_no: so.set_no,
                    channel: so.channel,
                    pieces: vec![piece],
                }),
            }
        }
        Ok(Tally {
            pieces,
            sets: msets,
            by_index,
        })
    }

    /// The manifest of the finished backup; its entries are serialized as it is written.
    fn manifest<'m>(
        &self,
        rec: &BackupRecord,
        session: &Session,
        scanned: &'m Scanned,
        by_index: &'m [Vec<&'m FileOutcome>],
        msets: Vec<ManifestSet>,
        end: &End,
    ) -> BackupManifestOf<LazyEntries<'m>> {
        let (ctx, inc) = (self.ctx, self.inc);
        let (scan, unchanged, stop) = (&scanned.scan, &scanned.unchanged, &end.stop);
        let entries = LazyEntries {
            dirs: &scan.entries,
            files: &scan.files,
            outs: by_index,
            unchanged: unchanged
                .as_ref()
                .map(|u| u.entries.as_slice())
                .unwrap_or_default(),
        };
        BackupManifestOf {
            format: MANIFEST_FORMAT.into(),
            version: MANIFEST_VERSION,
            backup_id: rec.id.clone(),
            db_name: ctx.db.name.clone(),
            system_identifier: ctx.db.system_identifier,
            pg_version: session.version_num,
            tag: rec.tag.clone(),
            backup_type: rec.backup_type.clone(),
            start_lsn: Lsn(rec.start_lsn).to_string(),
            stop_lsn: stop.lsn.to_string(),
            timeline: rec.timeline,
            start_wal: rec.start_wal.clone(),
            stop_wal: rec.stop_wal.clone().unwrap_or_default(),
            start_time: rfc3339(rec.start_time),
            stop_time: rfc3339(rec.stop_time.unwrap_or_default()),
            stop_next_xid: stop.next_xid,
            wal_segment_size: session.wal_segment_size,
            compression: rec.compression.clone(),
            channels: rec.channels,
            filesperset: rec.filesperset,
            maxopenfiles: rec.maxopenfiles,
            checksums_enabled: session.checksums_enabled,
            incremental_level: inc.level,
            cumulative: inc.cumulative,
            parent: inc
                .increment
                .map(|i| i.parent_id.clone())
                .or_else(|| unchanged.as_ref().map(|u| u.reference.clone())),
            parent_start_lsn: inc
                .increment
                .map(|i| Lsn(i.parent_start_lsn).to_string())
                .or_else(|| {
                    unchanged
                        .as_ref()
                        .map(|u| Lsn(u.reference_start_lsn).to_string())
                }),
            backup_label: stop.backup_label.clone(),
            tablespace_map: stop.tablespace_map.clone(),
            read: Some(end.read),
            origin: None,
            tablespaces: scanned
                .tablespaces
                .iter()
                .map(|t| ManifestTablespace {
                    oid: t.oid,
                    name: t.name.clone(),
                    location: t.location.clone(),
                })
                .collect(),
            entries,
            sets: msets,
            corrupt_blocks: end
                .corrupt
                .iter()
                .map(|c| ManifestCorruptBlock {
                    path: c.path.clone(),
                    block: c.block,
                    kind: c.kind.clone(),
                    relation: c.relation.clone(),
                    detail: c.detail.clone(),
                })
                .collect(),
        }
    }
}

/// Runs the channels over the shared queue, with the live monitor sampling beside them.
fn run_channels(
    shared: &ChannelShared,
    live: &crate::window::Live,
    channels: u32,
) -> Result<Vec<crate::channel::ChannelOutcome>, EngineError> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let monitor = s.spawn(|| live.monitor(&stop));
        let r =
            crate::pipeline::pool::each(channels as usize, "backup", |w| run_channel(shared, w));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // The monitor naps between samples; wake it so the backup does not wait out a nap.
        monitor.thread().unpark();
        let _ = monitor.join();
        r
    })
}

/// Bytes per second while data moved: from the first channel's open to the last one's close.
fn sustained_rate(stats: &[IoStatRow]) -> f64 {
    let agg = stats.iter().filter(|r| r.kind == "AGGREGATE");
    let open = agg.clone().map(|r| r.open_time).min().unwrap_or(0);
    let close = agg.clone().map(|r| r.close_time).max().unwrap_or(0);
    let bytes: u64 = agg.map(|r| r.bytes).sum();
    bytes as f64 * 1e6 / (close - open).max(1) as f64
}

/// The record's totals of the finished backup: what the manifest says it holds and wrote.
fn total(
    rec: &mut BackupRecord,
    scanned: &Scanned,
    by_index: &[Vec<&FileOutcome>],
    pieces: &[PieceRecord],
) {
    let scan = &scanned.scan;
    let unchanged = scanned.unchanged.as_ref();
    let db_bytes: u64 = (0..scan.files.len())
        .filter_map(|i| file_entry(&scan.files[i], &by_index[i]))
        .map(|e| e.size.unwrap_or(0))
        .sum();
    let extra = unchanged.map(|u| u.entries.len()).unwrap_or_default();
    rec.db_bytes = db_bytes + unchanged.map(|u| u.bytes).unwrap_or(0);
    rec.written_bytes = pieces.iter().map(|p| p.size).sum();
    rec.file_count = (scan.files.len() + extra) as u64;
    rec.stop_time = Some(now_micros());
}
/// A PARTIAL backup keeps only whole files: a file split in sections keeps none of them unless
/// every section's piece was finished.
fn keep_whole_files(planned: &[crate::plan::PlannedSet], sets: &mut [crate::channel::SetOutcome]) {
    use std::collections::HashMap;
    let mut pieces: HashMap<usize, usize> = HashMap::new();
    for so in sets.iter() {
        for fo in so.files.iter().filter(|f| f.section.is_some()) {
            *pieces.entry(fo.index).or_default() += 1;
        }
    }
    let wanted: HashMap<u32, usize> = planned
        .iter()
        .map(|p| (p.set_no, p.sections.len()))
        .collect();
    for so in sets.iter_mut() {
        let need = wanted.get(&so.set_no).copied().unwrap_or(0);
        so.files
            .retain(|f| f.section.is_none() || pieces.get(&f.index).copied() == Some(need));
    }
}

/// The SECTION SIZE auto tuning gives a backup given none: an eighth of a channel's share,
/// in whole MiB and at most 256 sections a file; None when no file is that large.
fn auto_section(sizes: &[u64], channels: u32) -> Option<u64> {
    const MIB: u64 = 1 << 20;
    let total: u64 = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let share = total / (channels.max(1) as u64 * crate::tune::LEARNING_SETS);
    let section = share
        .max(largest.div_ceil(256))
        .max(8 * MIB)
        .next_multiple_of(MIB);
    (largest > section).then_some(section)
}

#[cfg(test)]
mod auto_section_tests {
    use super::auto_section;
    const MIB: u64 = 1 << 20;

    #[test]
    fn a_dominant_file_is_cut_and_small_files_are_not() {
        // 320 MiB in one file and 64 MiB in small ones, one channel: an eighth of 384 MiB.
        let mut sizes = vec![320 * MIB];
        sizes.extend(std::iter::repeat_n(MIB, 64));
        assert_eq!(auto_section(&sizes, 1), Some(48 * MIB));
        // At most 256 sections a file: 64 channels' eighth (2 GiB) would cut 1 TiB in 512.
        assert_eq!(auto_section(&[1024 * 1024 * MIB], 64), Some(4096 * MIB));
        // Nothing larger than the section: no sections.
        assert_eq!(auto_section(&[4 * MIB; 100], 1), None);
    }
}
