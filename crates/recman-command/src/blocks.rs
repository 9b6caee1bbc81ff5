//! Block media recovery's commands: `recover block` / `recover corruption-list`, and the
//! corruption list `validate database` leaves in the catalog for them.

use crate::env::Env;
use crate::error::ExecError;
use crate::failures::kind::Kind::CorruptBlocks;
use crate::outcome::{Outcome, Printer};
use recman_engine::ValidateDatabaseReport;
use recman_engine::blockrecover::{BlockRecoverOptions, BlockRef, recover_blocks};
use std::path::{Path, PathBuf};

pub(crate) fn recover_block(
    blocks: &[String],
    corruption_list: bool,
    auxiliary_dir: Option<PathBuf>,
    e: &dyn Env,
    p: &mut dyn Printer,
) -> Result<(), ExecError> {
    let blocks = blocks
        .iter()
        .map(|b| BlockRef::parse(b))
        .collect::<Result<Vec<_>, _>>()?;
    let ctx = e.context().map_err(ExecError::Env)?;
    let (cwd, exe, args) = e.restore_invocation(&ctx.repo).map_err(ExecError::Env)?;
    let opts = BlockRecoverOptions {
        blocks,
        corruption_list,
        auxiliary_dir: auxiliary_dir.map(|d| if d.is_relative() { cwd.join(d) } else { d }),
        recman_exe: exe,
        restore_command_args: args,
    };
    let report = recover_blocks(&ctx, &opts, e.progress())?;
    crate::failures::learn(&ctx, e, &[CorruptBlocks]);
    p.outcome(Outcome::BlocksRecovered(report));
    Ok(())
}

/// Keeps what a `validate database` found as the registered cluster's corruption list (what
/// `recover corruption-list` repairs), when a repository is at hand and `pgdata` is that
/// cluster's; validation without a repository records nothing.
pub(crate) fn record_validation(e: &dyn Env, pgdata: &Path, report: &ValidateDatabaseReport) {
    let Ok(ctx) = e.context() else { return };
    match recman_engine::blockrecover::record_corruption(&ctx, pgdata, &report.corrupt.blocks) {
        Ok(_) => crate::failures::learn(&ctx, e, &[CorruptBlocks]),
        Err(err) => e.progress().notice(&format!(
            "could not record the corrupt blocks in the catalog: {err}"
        )),
    }
}
