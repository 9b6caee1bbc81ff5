//! The fleet page (issue 43): one read-only HTML page of every database a repository's
//! catalog holds: its health, open failures, last backups, RPO and RTO beside the targets,
//! drill history and the throughput of recent backups. [`collect`] reads the catalog (no
//! check runs, nothing is written: the page shows what `recman check` and the commands last
//! recorded); [`html::render`] turns that into the page, a pure function. `recman report fleet
//! --html FILE` writes it to a file, `recman server --page-listen` serves it afresh at each
//! request.

pub mod html;

use crate::slo::{SloRow, Targets};
use recman_catalog::{BackupRecord, DbRecord, DrillRecord, FailureRecord, IoSample, Repository};
use recman_engine::{Context, EngineError};

/// How many of each database's newest backups the page lists.
pub const BACKUPS_SHOWN: usize = 5;
/// How many of each database's newest drills the page lists.
pub const DRILLS_SHOWN: usize = 10;
/// How many of the newest backups get a throughput plot (each plot is a few KiB of SVG).
pub const PLOTS_SHOWN: usize = 3;

/// What the page shows, read from one catalog at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetPage {
    /// The repository, as users name it (its directory or URL).
    pub repository: String,
    /// When the catalog was read (unix microseconds).
    pub generated_at: i64,
    pub targets: Targets,
    pub databases: Vec<DbPage>,
}

/// One database's part of the page.
#[derive(Clone, Debug, PartialEq)]
pub struct DbPage {
    pub db: DbRecord,
    /// The open failures, as LIST FAILURE shows them (most urgent first).
    pub failures: Vec<FailureRecord>,
    /// The newest backups, newest first.
    pub backups: Vec<BackupRecord>,
    pub slo: SloRow,
    /// The newest drills, newest first.
    pub drills: Vec<DrillRecord>,
    /// (backup id, its per-second samples) for the newest backups that recorded samples.
    pub plots: Vec<(String, Vec<IoSample>)>,
}

impl DbPage {
    /// The database's health in one word: the worst open failure's priority, else OK.
    pub fn health(&self) -> &'static str {
        ["CRITICAL", "HIGH", "LOW"]
            .into_iter()
            .find(|p| self.failures.iter().any(|f| f.priority == *p))
            .unwrap_or("OK")
    }
}

/// Reads every database's part of the page from `repo` at `now`; `file` is the config file's
/// settings layer (for the RPO and RTO targets, as REPORT SLO resolves them).
pub fn collect(
    repo: Repository,
    now: i64,
    file: &[(&'static str, String)],
) -> Result<FleetPage, EngineError> {
    let all = crate::settings::resolve_all(&repo, file)?;
    let target = |n: &str| crate::settings::duration_micros(n, &crate::settings::setting(&all, n));
    let targets = Targets {
        rpo: target("rpo-target")?,
        rto: target("rto-target")?,
    };
    let repository = repo.location().to_string();
    let dbs = repo.catalog().databases()?;
    // measure() wants a Context, which owns the repository: it is handed from one database's
    // context to the next rather than opened again (an encrypted repository's open is slow).
    let mut repo = repo;
    let mut databases = Vec::with_capacity(dbs.len());
    for db in dbs {
        let ctx = Context {
            repo,
            db,
            pgdata: None,
            conninfo: None,
            tls: None,
        };
        databases.push(database(&ctx, targets, now)?);
        repo = ctx.repo;
    }
    Ok(FleetPage {
        repository,
        generated_at: now,
        targets,
        databases,
    })
}

/// CRITICAL before HIGH before LOW (and anything else last).
fn rank(priority: &str) -> u8 {
    match priority {
        "CRITICAL" => 0,
        "HIGH" => 1,
        "LOW" => 2,
        _ => 3,
    }
}

fn database(ctx: &Context, targets: Targets, now: i64) -> Result<DbPage, EngineError> {
    let cat = ctx.repo.catalog();
    let mut failures = cat.failures(ctx.db.id, false)?;
    failures.sort_by_key(|f| (rank(&f.priority), f.id));
    let mut backups = cat.backups(ctx.db.id)?;
    backups.sort_by_key(|b| std::cmp::Reverse(b.start_time));
    let mut plots = Vec::new();
    for b in backups.iter().take(PLOTS_SHOWN) {
        let samples = cat.io_samples(&b.id)?;
        if !samples.is_empty() {
            plots.push((b.id.clone(), samples));
        }
    }
    backups.truncate(BACKUPS_SHOWN);
    let mut drills = cat.drills(ctx.db.id)?;
    drills.reverse();
    drills.truncate(DRILLS_SHOWN);
    let slo = crate::slo::measure(ctx, targets, now, true)?;
    Ok(DbPage {
        db: ctx.db.clone(),
        failures,
        backups,
        slo,
        drills,
        plots,
    })
}
