//! RMAN's Data Recovery Advisor for recman: `recman check` and LIST FAILURE run the checks
//! ([`checks`]) and record what they find in the catalog; ADVISE FAILURE gives each open
//! failure its repair options and writes the automatic ones as a script ([`advice`]); REPAIR
//! FAILURE, which runs that script through the language, is the front end's (it owns `run`).

pub mod advice;
mod archiver;
pub mod checks;
mod finding;
pub mod kind;
mod limits;
mod targets;

pub use crate::command::FailureList;
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::say::Say;
use advice::Advice;
use finding::{CheckInputs, Checked};
use recman_catalog::{FailureChanges, FailureRecord};
use recman_engine::{Context, EngineError};
use std::path::{Path, PathBuf};

/// What the failure commands report.
#[derive(Debug)]
pub enum FailureOutcome {
    /// `check`: what is open now, and what this check opened and closed.
    Checked {
        db: String,
        open: Vec<FailureRecord>,
        changes: FailureChanges,
        skipped: Vec<String>,
        json: bool,
    },
    /// LIST FAILURE.
    Listed {
        db: String,
        failures: Vec<FailureRecord>,
        /// With DETAIL: each open failure's advice.
        advice: Vec<Advice>,
        skipped: Vec<String>,
        detail: bool,
        json: bool,
    },
    /// ADVISE FAILURE: the options, and where the script was written (None: nothing could
    /// be repaired automatically, so no script).
    Advised {
        db: String,
        advice: Vec<Advice>,
        script: Option<PathBuf>,
        json: bool,
    },
}

const HOUR: i64 = 3_600_000_000;

/// The policy and targets the checks measure against, as the settings say now.
fn inputs(ctx: &Context, e: &dyn Env, now: i64) -> Result<CheckInputs, ExecError> {
    use crate::settings::{duration_micros, setting, size_bytes};
    let file = env(e.config_file_settings())?;
    let all = crate::settings::resolve_all(&ctx.repo, &file)?;
    let duration = |n: &str| duration_micros(n, &setting(&all, n));
    let size = |n: &str| size_bytes(n, &setting(&all, n));
    Ok(CheckInputs {
        policy: setting(&all, "retention-policy").parse()?,
        imported: crate::settings::imported_of(&all),
        rpo_target: duration("rpo-target")?,
        rto_target: duration("rto-target")?,
        drill_interval: duration("drill-interval")?,
        slot_limit: size("slot-retention-limit")?.unwrap_or(1 << 30),
        repo_min_free: size("repository-min-free")?,
        repo_root: e.repository_root(),
        lock_limit: duration("repository-lock-limit")?.unwrap_or(24 * HOUR),
        certificates: e.tls().map(|t| vec![t.cert, t.ca]).unwrap_or_default(),
        certificate_warning: duration("certificate-expiry-warning")?.unwrap_or(30 * 24 * HOUR),
        backup_window: duration("backup-window")?,
        now,
    })
}

/// Runs the checks without recording anything.
pub fn look(ctx: &Context, e: &dyn Env) -> Result<Checked, ExecError> {
    let i = inputs(ctx, e, crate::clock::now_micros())?;
    Ok(checks::run_checks(ctx, &i)?)
}

/// Runs the checks and records what they found: failures opened, refreshed and closed.
pub fn check_now(ctx: &Context, e: &dyn Env) -> Result<(Checked, FailureChanges), ExecError> {
    let now = crate::clock::now_micros();
    let checked = checks::run_checks(ctx, &inputs(ctx, e, now)?)?;
    let found: Vec<_> = checked.findings.iter().map(|f| f.found()).collect();
    let ran: Vec<&str> = checked.ran.iter().map(|k| k.as_str()).collect();
    let changes = ctx
        .repo
        .catalog()
        .record_failures(ctx.db.id, &ran, &found, now)
        .map_err(EngineError::from)?;
    Ok((checked, changes))
}

/// After a command that learned about `kinds` (crosscheck: pieces, validate database:
/// blocks, drill: drills), records what the catalog-only checks of those kinds find now, so
/// that LIST FAILURE and the metrics show it before the next full check. A failure to record
/// is a notice: the command itself has succeeded.
pub fn learn(ctx: &Context, e: &dyn Env, kinds: &[kind::Kind]) {
    let now = crate::clock::now_micros();
    let recorded = inputs(ctx, e, now).and_then(|i| {
        let checked = checks::run_catalog_checks(ctx, &i, kinds)?;
        let found: Vec<_> = checked.findings.iter().map(|f| f.found()).collect();
        let ran: Vec<&str> = checked.ran.iter().map(|k| k.as_str()).collect();
        ctx.repo
            .catalog()
            .record_failures(ctx.db.id, &ran, &found, now)
            .map_err(|x| ExecError::from(EngineError::from(x)))
    });
    if let Err(err) = recorded {
        e.progress().notice(&format!(
            "the failures this command found were not recorded ({err}); hint: recman check records them"
        ));
    }
}

fn open_failures(ctx: &Context) -> Result<Vec<FailureRecord>, ExecError> {
    Ok(ctx
        .repo
        .catalog()
        .failures(ctx.db.id, false)
        .map_err(EngineError::from)?)
}

/// Whether failure `id` is closed now, as the catalog says: a repair's own commands may have
/// closed it (a drill records its result) whatever a later check found.
pub fn is_closed(ctx: &Context, id: i64) -> Result<bool, ExecError> {
    let now = ctx.repo.catalog().failure(id).map_err(EngineError::from)?;
    Ok(now.is_some_and(|f| f.status == "CLOSED"))
}

/// `recman check`: fails when a CRITICAL or HIGH failure is open, so that a scheduler sees it.
pub fn check(
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<FailureOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let (checked, changes) = check_now(&ctx, e)?;
    let open = open_failures(&ctx)?;
    let serious: Vec<&FailureRecord> = open.iter().filter(|f| f.priority != "LOW").collect();
    let worst = if serious.iter().any(|f| f.priority == "CRITICAL") {
        "CRITICAL"
    } else {
        "HIGH"
    };
    let count = serious.len();
    p.say(FailureOutcome::Checked {
        db: ctx.db.name.clone(),
        open,
        changes,
        skipped: checked.skipped,
        json,
    });
    if count > 0 {
        return Err(ExecError::FailuresOpen {
            count,
            worst: worst.into(),
        });
    }
    Ok(())
}

/// LIST FAILURE: the checks run first, so the list is of now.
pub fn list(
    l: &FailureList,
    e: &dyn Env,
    p: &mut (impl Say<FailureOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let (checked, _) = check_now(&ctx, e)?;
    let cat = ctx.repo.catalog();
    let mut failures = cat
        .failures(ctx.db.id, l.all || !l.ids.is_empty())
        .map_err(EngineError::from)?;
    if !l.ids.is_empty() {
        for id in &l.ids {
            if !failures.iter().any(|f| f.id == *id) {
                return Err(EngineError::NotFound(format!(
                    "failure {id} is not a failure of database {}; hint: LIST FAILURE ALL shows every id",
                    ctx.db.name
                ))
                .into());
            }
        }
        failures.retain(|f| l.ids.contains(&f.id));
    }
    let advice = if l.detail {
        advise_all(&ctx, &checked, &failures)
    } else {
        Vec::new()
    };
    p.say(FailureOutcome::Listed {
        db: ctx.db.name.clone(),
        failures,
        advice,
        skipped: checked.skipped,
        detail: l.detail,
        json: l.json,
    });
    Ok(())
}

/// The advice for each open failure among `failures`.
pub fn advise_all(ctx: &Context, checked: &Checked, failures: &[FailureRecord]) -> Vec<Advice> {
    failures
        .iter()
        .filter(|f| f.status == "OPEN")
        .map(|f| {
            let finding = checked
                .findings
                .iter()
                .find(|x| x.kind.as_str() == f.kind && x.object == f.object);
            advice::advise_one(ctx, checked, f, finding)
        })
        .collect()
}

/// The open failures `ids` names (all when empty), refusing an id that is not open.
fn chosen(ctx: &Context, ids: &[i64]) -> Result<Vec<FailureRecord>, ExecError> {
    let mut open = open_failures(ctx)?;
    for id in ids {
        if !open.iter().any(|f| f.id == *id) {
            return Err(EngineError::NotFound(format!(
                "failure {id} is not open for database {}; hint: LIST FAILURE shows the open ones",
                ctx.db.name
            ))
            .into());
        }
    }
    if !ids.is_empty() {
        open.retain(|f| ids.contains(&f.id));
    }
    Ok(open)
}

/// ADVISE FAILURE: checks, then the options of each open failure, and the script of the
/// automatic ones written to `script` (or into the repository's `repair/` directory).
pub fn advise(
    ids: &[i64],
    script: Option<&Path>,
    json: bool,
    e: &dyn Env,
    p: &mut (impl Say<FailureOutcome> + ?Sized),
) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let (checked, _) = check_now(&ctx, e)?;
    let advice = advise_all(&ctx, &checked, &chosen(&ctx, ids)?);
    let now = crate::clock::now_micros();
    let path = match advice::script(&ctx.db.name, &advice, now) {
        Some(text) => {
            let path = match script {
                Some(p) => p.to_path_buf(),
                None => default_script_path(e, &ctx.db.name, now)?,
            };
            write_script(&path, &text)?;
            Some(path)
        }
        None => None,
    };
    p.say(FailureOutcome::Advised {
        db: ctx.db.name.clone(),
        advice,
        script: path,
        json,
    });
    Ok(())
}

/// What REPAIR FAILURE would run: the advice for the chosen open failures and its script.
/// With `record` the checks' findings are recorded first (REPAIR); without (PREVIEW) nothing
/// is written anywhere, and only failures still found count.
pub fn repair_plan(
    ctx: &Context,
    e: &dyn Env,
    record: bool,
) -> Result<(Vec<Advice>, Option<String>), ExecError> {
    let checked = if record {
        check_now(ctx, e)?.0
    } else {
        look(ctx, e)?
    };
    let still: Vec<FailureRecord> = chosen(ctx, &[])?
        .into_iter()
        .filter(|f| {
            let ran = checked.ran.iter().any(|k| k.as_str() == f.kind);
            !ran || checked
                .findings
                .iter()
                .any(|x| x.kind.as_str() == f.kind && x.object == f.object)
        })
        .collect();
    let advice = advise_all(ctx, &checked, &still);
    let text = advice::script(&ctx.db.name, &advice, crate::clock::now_micros());
    Ok((advice, text))
}

/// `<repository>/repair/repair_<db>_<time>.rcv` for a repository on this host's disk.
pub fn default_script_path(e: &dyn Env, db: &str, now: i64) -> Result<PathBuf, ExecError> {
    let Some(root) = e.repository_root() else {
        return Err(ExecError::Env(
            "the repository is not a directory on this host, so the repair script has no default place; hint: recman failure advise --script FILE".into(),
        ));
    };
    let t = chrono::DateTime::from_timestamp_micros(now)
        .map(|t| t.format("%Y%m%dT%H%M%S%6f").to_string())
        .unwrap_or_else(|| now.to_string());
    Ok(root.join("repair").join(format!("repair_{db}_{t}.rcv")))
}

/// Writes the script whole or not at all, private like the rest of the repository.
pub fn write_script(path: &Path, text: &str) -> Result<(), ExecError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let fail = |source| ExecError::ScriptWrite {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(dir)
            .map_err(fail)?;
    }
    let tmp = path.with_extension("rcv.tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o640)
        .open(&tmp)
        .map_err(fail)?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}
