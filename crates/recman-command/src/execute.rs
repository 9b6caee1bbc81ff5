//! The interpreter both front ends share: [`execute`] runs a [`Command`] against the engine
//! and hands each result to the front end's [`Printer`] as a typed [`Outcome`], in the order
//! the work happens (PLUS ARCHIVELOG reports its archived-log backups around the database
//! backup). What only a front end knows — the configuration file, the catalog's settings as
//! precedence layers, the progress display, the executable that restore_command calls —
//! comes through [`Env`].
//!
//! This module only dispatches: each family of commands runs in its own module (backups in
//! `backup.rs`, restores in `restore.rs`, CONFIGURE and SHOW in [`crate::configure`], REPORT
//! OBSOLETE / NEED BACKUP, DELETE, CROSSCHECK and CATALOG in [`crate::maint`] and `delete.rs`,
//! LIST in [`crate::listing`], CALIBRATE and ADVISE in [`crate::tuning`], ...). The commands
//! still left to the CLI get [`Executed::FrontEnd`] back: REPORT IO (its facts come from
//! [`crate::report_io::gather`]; the CLI writes its plot files), the WAL commands PostgreSQL
//! calls, and what only a front end has (RUN, COMPLETIONS, MAN).

use crate::catalog::ReportWhat;
use crate::command::{Command, FailureWhat};
use crate::listing::BackupForm;
use crate::{
    backup, configure, costs, delete, failures, listing, maint, metrics, records, repo_cmds,
    restore, schema, slo, tuning, validate,
};

// What this module defined before the front end's vocabulary got modules of its own keeps
// its path here.
pub use crate::env::Env;
pub use crate::error::{EnvError, ExecError};
pub use crate::outcome::{Executed, Outcome, Printer};

/// One family's runner: it runs the commands of its family and hands any other back as
/// [`Executed::FrontEnd`].
type Family = fn(Command, &dyn Env, &mut dyn Printer) -> Result<Executed, ExecError>;

/// Every family, each asked in turn; no two run the same command.
const FAMILIES: [Family; 9] = [
    records::run,
    backup::run,
    restore::run,
    validate::run,
    settings_and_keys,
    reports,
    maintenance,
    listings,
    failure_checks,
];

/// Runs `c` (already checked: see [`Command::check`]).
pub fn execute(mut c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    for run in FAMILIES {
        match run(c, e, p)? {
            Executed::FrontEnd(other) => c = *other,
            done => return Ok(done),
        }
    }
    Ok(Executed::FrontEnd(Box::new(c)))
}

/// CONFIGURE, SHOW, CREATE CATALOG and KEY.
fn settings_and_keys(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::Configure(what) => configure::configure(what, e, p)?,
        Command::Show(what) => configure::show(what, e, p)?,
        Command::CreateCatalog { encrypt, immutable } => {
            repo_cmds::create_catalog(encrypt, immutable, e, p)?
        }
        Command::Key(what) => repo_cmds::key(what, e, p)?,
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// The REPORTs this crate runs, and METRICS.
fn reports(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::Report(ReportWhat::Schema { json }) => {
            let report = schema::report_schema(e)?;
            p.outcome(Outcome::Schema { report, json });
        }
        Command::Report(ReportWhat::Unrecoverable { json }) => {
            let rows = schema::report_unrecoverable(e)?;
            p.outcome(Outcome::Unrecoverable { rows, json });
        }
        Command::Report(ReportWhat::Slo { json }) => {
            let rows = slo::report_slo(e)?;
            p.outcome(Outcome::Slo { rows, json });
        }
        Command::Report(ReportWhat::Costs { json }) => {
            let rows = costs::report_costs(e)?;
            p.outcome(Outcome::Costs { rows, json });
        }
        Command::Report(what @ (ReportWhat::Obsolete { .. } | ReportWhat::NeedBackup { .. })) => {
            maint::report(what, e, p)?
        }
        Command::Metrics => p.outcome(Outcome::Metrics(metrics::metrics(e)?)),
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// DELETE, CROSSCHECK and CATALOG.
fn maintenance(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::Delete(what) => delete::delete(what, e, p)?,
        Command::Crosscheck(what) => maint::crosscheck(what, e, p)?,
        Command::Catalog(what) => maint::catalog(what, e, p)?,
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// LIST BACKUP / ARCHIVELOG / INCARNATION / COPY / CALIBRATION / DRILL, CALIBRATE and ADVISE.
fn listings(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::ListBackup {
            json,
            summary,
            by_file,
        } => {
            let form = if json {
                BackupForm::Json
            } else if summary {
                BackupForm::Summary
            } else if by_file {
                BackupForm::ByFile
            } else {
                BackupForm::Detailed
            };
            listing::list_backup(form, e, p)?
        }
        Command::ListArchivelog { json } => listing::list_archivelog(json, e, p)?,
        Command::ListIncarnation { json } => listing::list_incarnation(json, e, p)?,
        Command::ListCopy { json } => listing::list_copy(json, e, p)?,
        Command::Calibrate { json } => tuning::calibrate(json, e, p)?,
        Command::Advise {
            window,
            json,
            apply,
        } => tuning::advise(window.as_deref(), json, apply, e, p)?,
        Command::ListCalibration { json } => tuning::list_calibration(json, e, p)?,
        Command::ListDrill { json } => tuning::list_drill(json, e, p)?,
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// CHECK, LIST FAILURE and ADVISE FAILURE (REPAIR FAILURE is the front end's).
fn failure_checks(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::Check { json } => failures::check(json, e, p)?,
        Command::Failure(FailureWhat::List(l)) => failures::list(&l, e, p)?,
        Command::Failure(FailureWhat::Advise { ids, script, json }) => {
            failures::advise(&ids, script.as_deref(), json, e, p)?
        }
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Env;
    use crate::error::EnvError;
    use recman_catalog::Repository;
    use recman_engine::{Context, Progress};
    use std::path::PathBuf;

    /// An environment with no repository: every lookup fails, naming itself.
    struct NoRepo;

    impl Env for NoRepo {
        fn context(&self) -> Result<Context, EnvError> {
            Err("no repository here".into())
        }
        fn repository(&self) -> Result<Repository, EnvError> {
            Err("no repository here".into())
        }
        fn pgdata(&self) -> Option<PathBuf> {
            None
        }
        fn target(&self) -> Option<String> {
            None
        }
        fn restore_invocation(
            &self,
            _: &Repository,
        ) -> Result<(PathBuf, PathBuf, Vec<String>), EnvError> {
            unreachable!("no repository")
        }
        fn progress(&self) -> &dyn Progress {
            &recman_engine::NoProgress
        }
    }

    #[derive(Default)]
    struct Collect(Vec<String>);

    impl Printer for Collect {
        fn outcome(&mut self, o: Outcome) {
            self.0.push(format!("{o:?}"));
        }
    }

    #[test]
    fn front_end_commands_come_back_and_env_errors_pass_through() {
        let mut p = Collect::default();
        let list = Command::Man;
        assert_eq!(
            execute(list.clone(), &NoRepo, &mut p).unwrap(),
            Executed::FrontEnd(Box::new(list))
        );
        // A listing is the library's work now: it needs the repository like a backup does.
        for c in [
            Command::BackupDatabase(Box::default()),
            Command::ListCopy { json: true },
        ] {
            let e = execute(c, &NoRepo, &mut p).unwrap_err();
            assert!(
                matches!(e, ExecError::Env(_)) && e.to_string() == "no repository here",
                "{e}"
            );
        }
        assert!(p.0.is_empty(), "nothing ran, nothing to print: {:?}", p.0);
    }
}
