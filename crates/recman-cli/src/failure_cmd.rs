//! `recman check` and `recman failure list|advise|repair` (LIST, ADVISE and REPAIR FAILURE):
//! how their outcomes are printed, and REPAIR, which runs the advised script through the
//! language exactly as `recman run -f` does, then checks again.

use crate::cli::Global;
use crate::list::time;
use anyhow::{Context as _, Result, bail};
use recman_catalog::FailureRecord;
use recman_command::failures::FailureOutcome;
use recman_command::failures::advice::Advice;
use recman_command::slo::SloRow;
use std::path::PathBuf;

fn header() {
    println!(
        "{:>7} {:<8} {:<6} {:<19} {:<16} Summary",
        "Failure", "Priority", "Status", "Time Detected", "Kind"
    );
}

fn row(f: &FailureRecord) {
    println!(
        "{:>7} {:<8} {:<6} {:<19} {:<16} {}",
        f.id,
        f.priority,
        f.status,
        time(Some(f.first_seen)),
        f.kind,
        f.message
    );
}

fn skipped(notes: &[String]) {
    for n in notes {
        eprintln!("recman: note: {n}");
    }
}

fn json(v: serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("\"{e}\""))
    );
}

fn print_advice(a: &Advice) {
    let f = &a.failure;
    println!(
        "failure {} ({} {}, {}): {}",
        f.id, f.priority, f.status, f.kind, f.message
    );
    for m in &a.manual {
        println!("  manual: {m}");
    }
    match &a.automatic {
        Ok(st) => println!("  automatic: {}", st.join(" ")),
        Err(why) => println!("  automatic: none: {why}"),
    }
}

pub fn print(o: FailureOutcome) {
    match o {
        FailureOutcome::Checked {
            db,
            open,
            changes,
            skipped: notes,
            json: true,
        } => {
            skipped(&notes);
            json(serde_json::json!({
                "database": db, "open": open,
                "opened": changes.opened, "closed": changes.closed,
            }))
        }
        FailureOutcome::Checked {
            db,
            open,
            changes,
            skipped: notes,
            json: false,
        } => {
            skipped(&notes);
            for id in &changes.closed {
                println!("failure {id} closed: the check no longer finds it");
            }
            if open.is_empty() {
                println!("no open failures for database {db}");
                return;
            }
            header();
            open.iter().for_each(row);
        }
        FailureOutcome::Listed {
            failures,
            skipped: notes,
            json: true,
            advice,
            ..
        } => {
            skipped(&notes);
            json(serde_json::json!({ "failures": failures, "advice": advice }))
        }
        FailureOutcome::Listed {
            db,
            failures,
            advice,
            skipped: notes,
            detail,
            json: false,
        } => {
            skipped(&notes);
            if failures.is_empty() {
                println!("no failures for database {db}");
                return;
            }
            header();
            failures.iter().for_each(row);
            if detail {
                for f in failures.iter().filter(|f| f.status == "CLOSED") {
                    println!(
                        "failure {} first seen {}, last seen {}, closed {}",
                        f.id,
                        time(Some(f.first_seen)),
                        time(Some(f.last_seen)),
                        time(f.closed_at)
                    );
                }
                println!();
                advice.iter().for_each(print_advice);
            }
        }
        FailureOutcome::Advised {
            db,
            advice,
            script,
            json: true,
        } => json(serde_json::json!({ "database": db, "advice": advice, "script": script })),
        FailureOutcome::Advised {
            db,
            advice,
            script,
            json: false,
        } => {
            if advice.is_empty() {
                println!("no open failures for database {db}: nothing to advise");
                return;
            }
            advice.iter().for_each(print_advice);
            match script {
                Some(p) => println!("repair script: {}", p.display()),
                None => println!("no automatic repair: no script written"),
            }
        }
    }
}

fn seconds(v: Option<f64>) -> String {
    v.map(|s| format!("{s:.1}s"))
        .unwrap_or_else(|| "unknown".into())
}

fn verdict(met: Option<bool>, target: Option<f64>) -> String {
    match (met, target) {
        (_, None) => "no target".into(),
        (Some(true), Some(t)) => format!("met (target {t:.0}s)"),
        (Some(false), Some(t)) => format!("NOT MET (target {t:.0}s)"),
        (None, Some(t)) => format!("not measured (target {t:.0}s)"),
    }
}

/// REPORT SLO: one block per database, each measure beside its target.
pub fn print_slo(rows: &[SloRow], as_json: bool) {
    if as_json {
        return json(serde_json::json!(rows));
    }
    for r in rows {
        let bytes = r
            .rpo_bytes
            .map(|b| format!("{b} bytes"))
            .unwrap_or_else(|| "bytes unknown".into());
        println!("database {}", r.database);
        println!(
            "  rpo ({}): {}, {bytes}: {}",
            r.rpo_source,
            seconds(r.rpo_seconds),
            verdict(r.rpo_met, r.rpo_target_seconds)
        );
        let drill = r
            .rto_drill
            .map(|d| format!(" (drill {d})"))
            .unwrap_or_default();
        println!(
            "  rto (last passed drill){drill}: {}: {}",
            seconds(r.rto_seconds),
            verdict(r.rto_met, r.rto_target_seconds)
        );
        // An unknown prediction's basis says "unknown" and why.
        let predicted = match r.predicted_seconds {
            Some(s) => format!("{s:.1}s ({})", r.predicted_basis),
            None => r.predicted_basis.clone(),
        };
        println!(
            "  predicted restore: {predicted}: {}",
            verdict(r.predicted_met, r.rto_target_seconds)
        );
        for n in &r.notes {
            println!("  note: {n}");
        }
    }
}

/// REPAIR FAILURE: refuses what has no automatic repair (saying why); PREVIEW prints the
/// script and touches nothing; else writes the script, runs it, and checks again.
pub fn repair(g: &Global, preview: bool, script: Option<PathBuf>) -> Result<()> {
    let ctx = crate::commands::context(g)?;
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
    let code = crate::script::run(g, Some(path.clone()), None)
        .with_context(|| format!("the repair script {} failed", path.display()))?;
    if code != std::process::ExitCode::SUCCESS {
        bail!("the repair script {} did not succeed", path.display());
    }
    let (checked, _) = recman_command::failures::check_now(&ctx, &env)?;
    skipped(&checked.skipped);
    for a in &advice {
        let id = a.failure.id;
        // The script's own commands may have closed it already (a drill records its
        // result), so the catalog says, not this check's changes.
        let now = ctx.repo.catalog().failure(id)?;
        if now.is_some_and(|f| f.status == "CLOSED") {
            println!("failure {id} closed: repaired");
        } else if a.automatic.is_ok() {
            println!(
                "failure {id} is still open after the repair; hint: recman failure list --detail {id}"
            );
        }
    }
    Ok(())
}
