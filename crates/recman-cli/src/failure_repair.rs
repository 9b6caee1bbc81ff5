//! REPAIR FAILURE (`recman failure repair`): runs the advised script through the language
//! exactly as `recman run -f` does, then checks again.

use crate::cli::Global;
use crate::dispatch::Execute;
use anyhow::{Context as _, Result, bail};
use std::path::PathBuf;

/// REPAIR FAILURE: refuses what has no automatic repair (saying why); PREVIEW prints the
/// script and touches nothing; else writes the script, runs it, and checks again.
pub fn repair(g: &Global, preview: bool, script: Option<PathBuf>, execute: Execute) -> Result<()> {
    let ctx = crate::open::context(g)?;
    let bar = crate::progress::Bar::with_mode(g.quiet, g.verbose, g.progress);
    let env = crate::front::CliEnv { g, bar: &bar };
    let (advice, text) = recman_command::failures::repair_plan(&ctx, &env, !preview)?;
    if advice.is_empty() {
        println!(
            "no open failures for database {}: nothing to repair",
            ctx.db.name
        );
        return Ok(());
    }
    for a in &advice {
        if let Err(why) = &a.automatic {
            println!(
                "failure {} ({}, {}) is not repaired automatically: {why}",
                a.failure.id, a.failure.priority, a.failure.kind
            );
        }
    }
    let Some(text) = text else {
        bail!(
            "no open failure of database {} can be repaired automatically; hint: LIST FAILURE DETAIL (recman failure list --detail) gives the manual repairs",
            ctx.db.name
        );
    };
    if preview {
        print!("{text}");
        return Ok(());
    }
    let now = recman_command::metrics::now_micros();
    let path = match script {
        Some(p) => p,
        None => recman_command::failures::default_script_path(&env, &ctx.db.name, now)?,
    };
    recman_command::failures::write_script(&path, &text)?;
    println!("repair script: {}", path.display());
    let code = crate::script::run(g, Some(path.clone()), None, execute)
        .with_context(|| format!("the repair script {} failed", path.display()))?;
    if code != std::process::ExitCode::SUCCESS {
        bail!("the repair script {} did not succeed", path.display());
    }
    let (checked, _) = recman_command::failures::check_now(&ctx, &env)?;
    crate::failure_cmd::skipped(&checked.skipped);
    for a in &advice {
        let id = a.failure.id;
        // The script's own commands may have closed it already (a drill records its
        // result), so the catalog says, not this check's changes.
        if recman_command::failures::is_closed(&ctx, id)? {
            println!("failure {id} closed: repaired");
        } else if a.automatic.is_ok() {
            println!(
                "failure {id} is still open after the repair; hint: recman failure list --detail {id}"
            );
        }
    }
    Ok(())
}
