//! What a command gives back to the front end: each result as an [`Outcome`], handed to the
//! front end's [`Printer`] in the order the work happens, and at the end whether it ran at all
//! ([`Executed`]). The commands of this crate report their own families' types through
//! [`Say`]; the [`Printer`] takes each of them as its [`Outcome`].

use crate::command::Command;
use crate::configure::{ConfigChange, ShownSettings};
use crate::costs::CostRow;
use crate::failures::FailureOutcome;
use crate::listing::ListOutcome;
use crate::maint::MaintOutcome;
use crate::metrics::Gauge;
use crate::repo_cmds::RepoOutcome;
use crate::say::Say;
use crate::schema::{SchemaReport, Unlogged};
use crate::slo::SloRow;
use crate::tuning::TuningOutcome;
use recman_catalog::{BackupRecord, DbRecord};
use recman_engine::{
    ArchivelogReport, BackupReport, CopyReport, RestorePlan, RestoreReport, RestoreValidateReport,
    ValidateBackupReport, ValidateDatabaseReport,
};
use std::path::PathBuf;

/// One result of a command, in the order they happen.
#[derive(Debug)]
pub enum Outcome {
    BackupChanged {
        ids: Vec<String>,
    },
    RestorePointCreated {
        name: String,
        lsn: String,
    },
    Registered {
        db: DbRecord,
        repository: String,
    },
    /// PLUS ARCHIVELOG's first step: the current WAL segment was archived.
    ArchivedCurrent {
        upto: String,
    },
    ArchivelogBackedUp(ArchivelogReport),
    BackedUp {
        report: BackupReport,
        maxcorrupt: u32,
    },
    /// Second-tier copies (BACKUP BACKUPSET, BACKUP RECOVERY AREA) on `device`; `with_wal`
    /// when the archived WAL was copied too.
    Copied {
        report: CopyReport,
        device: String,
        with_wal: bool,
    },
    SyntheticFull(BackupRecord),
    Restored {
        report: RestoreReport,
        target: String,
    },
    /// A drill ran (passed or failed) and was recorded.
    Drilled(Box<recman_engine::drill::DrillReport>),
    /// DUPLICATE DATABASE wrote a standby or a clone.
    Duplicated(Box<recman_engine::duplicate::DuplicateReport>),
    /// RESTORE … PREVIEW: what a restore would read; nothing was written.
    RestorePlan {
        plan: Box<RestorePlan>,
        json: bool,
    },
    /// RESTORE … VALIDATE: everything the plan names was read and verified.
    RestoreValidated {
        report: RestoreValidateReport,
        json: bool,
    },
    ValidatedBackup(ValidateBackupReport),
    ValidatedDatabase {
        pgdata: PathBuf,
        report: ValidateDatabaseReport,
    },
    CopyRecovered {
        tag: String,
        applied: Vec<String>,
    },
    TableRecovered(Box<recman_engine::recover_table::RecoverTableReport>),
    /// RECOVER … BLOCK / CORRUPTION LIST: the blocks written back.
    BlocksRecovered(recman_engine::blockrecover::BlockRecoverReport),
    ControlfileBackedUp(recman_engine::controlfile::ControlfileReport),
    /// The catalog was restored into `repository`; the one it replaced, if any, is `aside`.
    ControlfileRestored {
        repository: PathBuf,
        aside: Option<PathBuf>,
    },
    /// One change CONFIGURE stored.
    Configured(ConfigChange),
    /// SHOW ALL.
    Shown(ShownSettings),
    /// REPORT OBSOLETE / NEED BACKUP, DELETE, CROSSCHECK, CATALOG.
    Maint(MaintOutcome),
    /// CREATE CATALOG, KEY.
    Repo(RepoOutcome),
    /// LIST BACKUP / ARCHIVELOG / INCARNATION / COPY.
    List(ListOutcome),
    /// CALIBRATE, ADVISE, LIST CALIBRATION, LIST DRILL.
    Tuning(TuningOutcome),
    /// REPORT SCHEMA.
    Schema {
        report: SchemaReport,
        json: bool,
    },
    /// REPORT UNRECOVERABLE: the unlogged relations.
    Unrecoverable {
        rows: Vec<Unlogged>,
        json: bool,
    },
    /// METRICS: every gauge, in the order read.
    Metrics(Vec<Gauge>),
    /// CHECK, LIST FAILURE, ADVISE FAILURE.
    Failures(FailureOutcome),
    /// REPORT SLO: each database's measured RPO and RTO beside the targets.
    Slo {
        rows: Vec<SloRow>,
        json: bool,
    },
    /// REPORT COSTS: requests and bytes per backup and per day of archiving.
    Costs {
        rows: Vec<CostRow>,
        json: bool,
    },
}

/// How the front end shows outcomes.
///
/// The contract: `outcome` is called once for each result, in the order the work happens,
/// and before the command goes on (a DELETE's list is shown before `Env::confirm` asks); it
/// cannot fail, and how the result is shown (text, JSON, not at all) is the front end's
/// choice.
pub trait Printer {
    fn outcome(&mut self, o: Outcome);
}

/// Whether `execute` ran the command or leaves it to the front end.
#[derive(Debug, PartialEq)]
pub enum Executed {
    Done,
    FrontEnd(Box<Command>),
}

/// The front end's printer takes every family's results, each as its outcome.
impl<T: Into<Outcome>> Say<T> for dyn Printer + '_ {
    fn say(&mut self, what: T) {
        self.outcome(what.into());
    }
}

impl From<ConfigChange> for Outcome {
    fn from(c: ConfigChange) -> Self {
        Outcome::Configured(c)
    }
}

impl From<ShownSettings> for Outcome {
    fn from(s: ShownSettings) -> Self {
        Outcome::Shown(s)
    }
}

impl From<MaintOutcome> for Outcome {
    fn from(m: MaintOutcome) -> Self {
        Outcome::Maint(m)
    }
}

impl From<RepoOutcome> for Outcome {
    fn from(r: RepoOutcome) -> Self {
        Outcome::Repo(r)
    }
}

impl From<ListOutcome> for Outcome {
    fn from(l: ListOutcome) -> Self {
        Outcome::List(l)
    }
}

impl From<TuningOutcome> for Outcome {
    fn from(t: TuningOutcome) -> Self {
        Outcome::Tuning(t)
    }
}

impl From<FailureOutcome> for Outcome {
    fn from(f: FailureOutcome) -> Self {
        Outcome::Failures(f)
    }
}
