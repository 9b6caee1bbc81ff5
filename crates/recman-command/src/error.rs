//! Why a command fails: [`ExecError`], the one error `execute` and every command of this
//! crate return, and [`EnvError`], what the front end's environment answers when it cannot
//! give what a command asked for.

use crate::options::OptionError;
use recman_engine::EngineError;
use std::path::PathBuf;

/// An error of the front end's environment (reading the config file, opening the catalog).
pub type EnvError = Box<dyn std::error::Error + Send + Sync>;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Engine(Box<EngineError>),
    #[error(transparent)]
    Options(#[from] OptionError),
    #[error(transparent)]
    Env(EnvError),
    #[error("--json prints a plan or a validation; hint: add --preview or --validate")]
    JsonWithoutPlan,
    /// A drill failed; the printer has shown why and the catalog has it.
    #[error("drill failed: {0}; hint: `recman list drill` shows every drill and its checks")]
    DrillFailed(String),
    #[error("validate database needs --pgdata DIR (or RECMAN_PGDATA)")]
    NeedsPgdata,
    /// The newest calibration's stored body does not parse.
    #[error("calibration {id} in the catalog is not readable; hint: run `recman calibrate` again")]
    BadCalibration {
        id: i64,
        #[source]
        source: serde_json::Error,
    },
    /// CATALOG START WITH could not catalog some files; the printer has shown each.
    #[error(
        "{0} file(s) could not be cataloged; hint: see the warnings above, then run crosscheck"
    )]
    NotCataloged(usize),
    /// `check` found failures a scheduler should see; the printer has listed them.
    #[error(
        "{count} failure(s) of priority HIGH or CRITICAL are open (the worst {worst}); hint: `recman failure advise` gives their repairs"
    )]
    FailuresOpen { count: usize, worst: String },
    #[error("cannot write the repair script {}: {source}; hint: give another place with --script FILE", path.display())]
    ScriptWrite {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A validation found damage; the printer has listed each block.
    #[error("{count} corrupt block(s) found in {place}; hint: {hint}")]
    Corrupt {
        count: usize,
        place: String,
        hint: &'static str,
    },
}

impl From<EngineError> for ExecError {
    fn from(e: EngineError) -> Self {
        ExecError::Engine(Box::new(e))
    }
}

/// An environment's answer as a command's error.
pub(crate) fn env<T>(r: Result<T, EnvError>) -> Result<T, ExecError> {
    r.map_err(ExecError::Env)
}
