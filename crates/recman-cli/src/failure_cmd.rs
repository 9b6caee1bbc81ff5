//! `recman check`, `recman failure list|advise|repair` (LIST, ADVISE and REPAIR FAILURE) and
//! `report slo`: how their outcomes are printed.

use crate::display::time;
use recman_command::failures::FailureOutcome;
use recman_command::failures::advice::Advice;
use recman_command::model::FailureRecord;
use recman_command::slo::SloRow;

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

pub(crate) fn skipped(notes: &[String]) {
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
