//! RESTORE DATABASE / CONTROLFILE, RECOVER TABLE / COPY / BLOCK, DRILL and DUPLICATE
//! DATABASE: the commands that read backups back into a data directory (or the catalog), each
//! through the engine's restore.

use crate::command::{Command, Drill, DuplicateDatabase, RecoverTable, RestoreDatabase};
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::options;
use crate::outcome::{Executed, Outcome, Printer};
use recman_engine::EngineError;

/// Runs `c` when it is one of this family's; any other command comes back as
/// [`Executed::FrontEnd`], for the next family to try.
pub(crate) fn run(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::RestoreDatabase(r) => restore_database(&r, e, p)?,
        Command::RestoreControlfile { from } => {
            let Some(root) = e.repository_root() else {
                return Err(ExecError::Env(
                    "restore controlfile needs --repo DIR (a disk repository); hint: recman --repo DIR restore controlfile --from PIECE".into(),
                ));
            };
            let aside = recman_engine::controlfile::restore_controlfile(&from, &root)?;
            p.outcome(Outcome::ControlfileRestored {
                repository: root,
                aside,
            });
        }
        Command::RecoverTable(t) => recover_table(&t, e, p)?,
        Command::RecoverCopy { tag, until_time } => {
            let ctx = env(e.context())?;
            let until = options::until_micros(until_time.as_deref())?;
            let applied = recman_engine::copy::recover_copy(&ctx, &tag, until, e.progress())?;
            p.outcome(Outcome::CopyRecovered { tag, applied });
        }
        Command::RecoverBlock {
            blocks,
            corruption_list,
            auxiliary_dir,
        } => crate::blocks::recover_block(&blocks, corruption_list, auxiliary_dir, e, p)?,
        Command::Drill(d) => drill(&d, e, p)?,
        Command::DuplicateDatabase(d) => duplicate(&d, e, p)?,
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// RESTORE DATABASE, or with PREVIEW / VALIDATE its plan or the reading of what it names.
fn restore_database(
    r: &RestoreDatabase,
    e: &dyn Env,
    p: &mut dyn Printer,
) -> Result<(), ExecError> {
    if r.json && !r.preview && !r.validate {
        return Err(ExecError::JsonWithoutPlan);
    }
    let ctx = env(e.context())?;
    let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
    let mut opts = r.options(&cwd, exe, args)?;
    if let Some(name) = &r.until_restore_point {
        let lsn = recman_engine::restore_point::restore_point_lsn(&ctx, name)?;
        opts.target = recman_engine::RecoveryTarget::Name {
            name: name.clone(),
            lsn,
        };
    }
    if r.preview {
        let plan = recman_engine::plan_restore(&ctx, &opts)?;
        p.outcome(Outcome::RestorePlan {
            plan: Box::new(plan),
            json: r.json,
        });
        return Ok(());
    }
    if r.validate {
        let (_, report) = recman_engine::validate_restore(&ctx, &opts, e.progress())?;
        p.outcome(Outcome::RestoreValidated {
            report,
            json: r.json,
        });
        return Ok(());
    }
    let selection = if r.include_db.is_empty() {
        recman_engine::Selection::Whole
    } else {
        recman_engine::Selection::Databases(r.include_db.clone())
    };
    let through = env(e.restore_through(&ctx))?.unwrap_or_else(recman_engine::Through::local);
    let (report, partial) =
        recman_engine::restore_database_on(&ctx, &opts, &selection, &through, e.progress())?;
    if !partial.excluded.is_empty() {
        let names: Vec<String> = partial
            .excluded
            .iter()
            .map(|(n, oid)| format!("{n} (oid {oid})"))
            .collect();
        e.progress().notice(&format!(
            "left out database(s) {}: their directories were not restored, so PostgreSQL refuses connections to them; drop them (DROP DATABASE) once the cluster has recovered, then remove ignore_invalid_pages = on from postgresql.auto.conf (it lets recovery pass their missing pages, and would hide real damage later)",
            names.join(", ")
        ));
    }
    p.outcome(Outcome::Restored {
        report,
        target: opts.target.to_string(),
    });
    Ok(())
}

/// RECOVER TABLE: a past state of one table, through an auxiliary instance.
fn recover_table(t: &RecoverTable, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
    let mut r = RestoreDatabase::into(None);
    r.until_time = t.until_time.clone();
    r.until_lsn = t.until_lsn.clone();
    r.until_xid = t.until_xid.clone();
    r.channels = t.channels.max(1);
    let restore = r.options(&cwd, exe, args)?;
    let (schema, table) = recman_engine::recover_table::split_name(&t.table);
    let auxiliary_dir = match &t.auxiliary_dir {
        Some(d) => options::absolute(&cwd, d),
        None => std::env::temp_dir().join(format!("recman-aux-{}", std::process::id())),
    };
    let opts = recman_engine::recover_table::RecoverTableOptions {
        restore,
        schema,
        table,
        database: t.database.clone().unwrap_or_else(|| "postgres".into()),
        remap: t.remap_table.clone(),
        dump: t.dump.as_deref().map(|d| options::absolute(&cwd, d)),
        auxiliary_dir,
    };
    let report = recman_engine::recover_table::recover_table(&ctx, &opts, e.progress())?;
    p.outcome(Outcome::TableRecovered(Box::new(report)));
    Ok(())
}

/// DRILL: a restore that is started, checked, recorded and removed; fails when the drill did.
fn drill(d: &Drill, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
    let opts = recman_engine::drill::DrillOptions {
        restore: d.restore.options(&cwd, exe, args)?,
        dir: d.dir.as_deref().map(|p| options::absolute(&cwd, p)),
        checks: d.check_sql.clone(),
        keep: d.keep,
        recovery_timeout: recman_engine::auxiliary::DEFAULT_RECOVERY_TIMEOUT,
    };
    let report = recman_engine::drill::drill(&ctx, &opts, e.progress())?;
    crate::failures::learn(&ctx, e, &[crate::failures::kind::Kind::DrillFailed]);
    let failed = report.record.error.clone();
    p.outcome(Outcome::Drilled(Box::new(report)));
    if let Some(why) = failed {
        return Err(ExecError::DrillFailed(why));
    }
    Ok(())
}

/// DUPLICATE DATABASE: a standby or a clone restored into `--to`.
fn duplicate(d: &DuplicateDatabase, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    let ctx = env(e.context())?;
    let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
    if d.restore.to.is_none() {
        return Err(EngineError::Invalid(
            "duplicate database needs the new cluster's directory; hint: add --to DIR".into(),
        )
        .into());
    }
    let standby = if d.for_standby {
        Some(recman_engine::duplicate::StandbyOptions {
            primary_conninfo: d.primary_conninfo.clone().unwrap_or_default(),
            slot: d.slot.clone(),
        })
    } else {
        if d.primary_conninfo.is_some() || d.slot.is_some() {
            return Err(EngineError::Invalid(
                "--primary-conninfo and --slot configure a standby; hint: add --for-standby".into(),
            )
            .into());
        }
        None
    };
    let opts = recman_engine::duplicate::DuplicateOptions {
        restore: d.restore.options(&cwd, exe, args)?,
        standby,
        port: d.port,
    };
    let report = recman_engine::duplicate::duplicate(&ctx, &opts, e.progress())?;
    p.outcome(Outcome::Duplicated(Box::new(report)));
    Ok(())
}
