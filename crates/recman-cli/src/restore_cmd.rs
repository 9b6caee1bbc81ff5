//! How `restore database --preview` (the plan) and `--validate` (the reading of everything
//! the plan names) are printed; the shared executor runs them from the engine's one plan.

use crate::cli::Global;
use crate::display::size;
use recman_command::model::{PlannedCopy, RestorePlan, RestoreValidateReport};

fn presence(c: &PlannedCopy) -> &'static str {
    match c.present {
        Some(true) => "present",
        Some(false) => "MISSING",
        None if c.note.is_some() => "unreachable",
        None => "not looked at",
    }
}

/// The plan as a DBA reads it: printed even with --quiet, as it is the command's answer.
pub(crate) fn print_plan(p: &RestorePlan) {
    let from = match &p.image_copy {
        Some(t) => format!("image copy {t}"),
        None => format!("backup {} (tag {})", p.backup_id, p.tag),
    };
    println!("restore plan: {from}, recovering to {}", p.target);
    if let Some(c) = p
        .backups
        .iter()
        .flat_map(|b| b.pieces.iter().flat_map(|x| x.copies.iter()))
        .find(|c| c.device == "repository")
    {
        println!("repository: {}", c.media);
    }
    println!("backups (oldest first):");
    for b in &p.backups {
        let level = b
            .incremental_level
            .map(|l| format!(" level {l}"))
            .unwrap_or_default();
        println!(
            "  {} {}{level} tag {}: start {} stop {} timeline {}, stopped {}; {} piece(s), {}",
            b.id,
            b.backup_type,
            b.tag,
            b.start_lsn,
            b.stop_lsn,
            b.timeline,
            b.stop_time,
            b.pieces.len(),
            size(b.bytes)
        );
        if let Some(o) = &b.origin {
            println!("    imported: its files are read from {o}");
        }
        for piece in &b.pieces {
            let copies: Vec<String> = piece
                .copies
                .iter()
                .map(|c| {
                    let on = if c.media.is_empty() || c.device == "repository" {
                        c.device.clone()
                    } else {
                        format!("{} ({})", c.device, c.media)
                    };
                    format!("{on}: {}", presence(c))
                })
                .collect();
            println!(
                "    {} {}: {}",
                piece.path,
                size(piece.size),
                copies.join("; ")
            );
        }
    }
    let w = &p.wal;
    println!(
        "wal: timeline {}, {} to {}: {} segment(s), {}; needed for consistency through {}; the range ends at {}",
        w.timeline,
        w.first,
        w.last,
        w.segments.len(),
        size(w.bytes),
        w.required_through,
        w.end
    );
    // Runs of segments read from the same kind of source, one line each.
    let mut runs: Vec<(String, String, &str)> = Vec::new();
    for s in &w.segments {
        let from = s
            .sources
            .iter()
            .find(|x| x.present() == Some(true))
            .map(|x| x.kind())
            .unwrap_or("MISSING");
        match runs.last_mut() {
            Some((_, last, f)) if *f == from => *last = s.name.clone(),
            _ => runs.push((s.name.clone(), s.name.clone(), from)),
        }
    }
    for (a, b, from) in runs {
        if a == b {
            println!("  {a}: {from}");
        } else {
            println!("  {a} .. {b}: {from}");
        }
    }
    if w.gaps.is_empty() {
        println!("  gaps: none");
    } else {
        println!("  gaps: {}", w.gaps.join(", "));
    }
    for n in p.notes.iter().chain(&w.notes) {
        println!("note: {n}");
    }
    println!(
        "to read: {} of pieces and {} of WAL; restored size {}",
        size(p.piece_bytes),
        size(w.bytes),
        size(p.restored_bytes)
    );
    match (p.estimate.seconds, p.estimate.bytes_per_second) {
        (Some(s), Some(r)) => println!(
            "estimated duration: {s:.1}s at {:.1} MB/s ({})",
            r as f64 / 1e6,
            p.estimate.basis
        ),
        _ => println!("estimated duration: {}", p.estimate.basis),
    }
    match &p.refusal {
        Some(why) => println!("restore would refuse: {why}"),
        None => println!("nothing was written (preview)"),
    }
}

pub(crate) fn print_validation(g: &Global, r: &RestoreValidateReport) {
    if g.quiet {
        return;
    }
    println!(
        "validated the restore of backup {} (tag {}): {} piece(s) and {} WAL segment(s), {} in {:.1}s; every chunk and file checksum matched; nothing was written",
        r.backup_id,
        r.tag,
        r.pieces.len(),
        r.segments.len(),
        size(r.bytes),
        r.elapsed.as_secs_f64()
    );
    for p in r
        .pieces
        .iter()
        .filter(|p| !p.from.starts_with("repository") && !p.from.starts_with("image copy"))
    {
        println!("  {} read from {}", p.name, p.from);
    }
}
