//! `restore database`: the restore itself, its plan (`--preview`) and the reading of
//! everything that plan names (`--validate`); all three start from the engine's one plan.

use crate::cli::{Global, RestoreArgs};
use crate::list::size;
use crate::progress::Bar;
use anyhow::{Result, anyhow, bail};
use recman_engine::{PlannedCopy, RecoveryTarget, RestorePlan, RestoreValidateReport};
use std::path::PathBuf;

pub(crate) fn restore_database(g: &Global, a: RestoreArgs, bar: &Bar) -> Result<()> {
    let say = |s: &str| {
        if !g.quiet {
            println!("{s}");
        }
    };
    if a.json && !a.preview && !a.validate {
        bail!("--json prints a plan or a validation; hint: add --preview or --validate");
    }
    let ctx = crate::commands::context(g)?;
    let target = if let Some(t) = &a.until_time {
        RecoveryTarget::parse_time(t)?
    } else if let Some(l) = &a.until_lsn {
        RecoveryTarget::parse_lsn(l)?
    } else if let Some(x) = &a.until_xid {
        RecoveryTarget::parse_xid(x)?
    } else {
        RecoveryTarget::Latest
    };
    let mut map = Vec::new();
    for m in &a.tablespace_map {
        let (old, new) = m.split_once('=').ok_or_else(|| anyhow!("--tablespace-map {m:?} is not OLD=NEW; hint: e.g. --tablespace-map /data/ts1=/restore/ts1"))?;
        map.push((old.to_string(), PathBuf::from(new)));
    }
    // A preview or a validation writes nothing, so it needs no directory.
    let to = match &a.to {
        Some(t) => crate::commands::absolute(t)?,
        None => PathBuf::new(),
    };
    let opts = recman_engine::RestoreOptions {
        to,
        target,
        from_tag: a.from_tag,
        channels: a.channels,
        tablespace_map: map,
        timeline: a.timeline,
        preserve_archive_mode: a.archive_mode == "preserve",
        from_copy: a.from_copy,
        switch_to_copy: a.switch_to_copy,
        recman_exe: std::env::current_exe()?,
        restore_command_args: crate::device_cmds::passed_on_args(g, &ctx.repo)?,
        allow_wal_gap: a.allow_wal_gap,
        force: a.force,
    };
    if a.preview {
        let plan = recman_engine::plan_restore(&ctx, &opts)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&plan)?);
        } else {
            print_plan(&plan);
        }
        return Ok(());
    }
    if a.validate {
        let (_, r) = recman_engine::validate_restore(&ctx, &opts, bar)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print_validation(g, &r);
        }
        return Ok(());
    }
    let r = recman_engine::restore_database(&ctx, &opts, bar)?;
    say(&format!(
        "restored backup {} (tag {}) to {}: {} files, {} in {:.1}s",
        r.backup_id,
        r.tag,
        r.to.display(),
        r.files,
        size(r.bytes),
        r.elapsed.as_secs_f64()
    ));
    say(&format!(
        "recovery target: {}; settings written to postgresql.auto.conf:",
        opts.target
    ));
    for s in &r.recovery_settings {
        say(&format!("  {s}"));
    }
    say("start PostgreSQL on it to recover and open it (pg_ctl -D DIR start)");
    Ok(())
}

fn presence(c: &PlannedCopy) -> &'static str {
    match c.present {
        Some(true) => "present",
        Some(false) => "MISSING",
        None if c.note.is_some() => "unreachable",
        None => "not looked at",
    }
}

/// The plan as a DBA reads it: printed even with --quiet, as it is the command's answer.
fn print_plan(p: &RestorePlan) {
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

fn print_validation(g: &Global, r: &RestoreValidateReport) {
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
