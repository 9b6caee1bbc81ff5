//! REPORT, DELETE, CROSSCHECK and CATALOG START WITH, printed in RMAN's layouts.

use crate::cli::Global;
use crate::commands::context;
use crate::list::time;
use anyhow::{Result, bail};
use recman_catalog::{BackupRecord, BackupStatus, MediaStatus, Repository};
use recman_command::{CatalogWhat, CrosscheckWhat, DeleteWhat, PolicyOverride, ReportWhat};
use recman_engine::retention::{MICROS_PER_DAY, obsolete_in_catalog};
use recman_engine::{Context, Obsolete, RetentionPolicy};
use std::io::{BufRead, IsTerminal, Write};

fn now() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

fn policy_for(g: &Global, o: &PolicyOverride) -> Result<RetentionPolicy> {
    Ok(match (o.redundancy, o.recovery_window) {
        (Some(n), _) => format!("redundancy {n}").parse()?,
        (None, Some(d)) => format!("recovery-window {d}").parse()?,
        (None, None) => super::settings::retention_policy(g)?,
    })
}

/// Asks before deleting; refuses without a terminal to ask on.
pub(super) fn confirm(noprompt: bool, what: &str) -> Result<bool> {
    if noprompt {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        bail!(
            "refusing to delete {what} without confirmation: standard input is not a terminal; hint: pass --noprompt to delete without asking"
        );
    }
    print!("Do you really want to delete the above objects (enter YES or NO)? ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim().eq_ignore_ascii_case("yes"))
}

/// The obsolete objects with what the report prints about them.
struct Found {
    policy: RetentionPolicy,
    obs: Obsolete,
    backups: Vec<BackupRecord>,
    wal: Vec<(String, String, i64)>,
}

fn find_obsolete(ctx: &Context, policy: RetentionPolicy) -> Result<Found> {
    let (obs, backups, wal) = obsolete_in_catalog(&ctx.repo, ctx.db.id, policy, now())?;
    let backups = backups
        .into_iter()
        .filter(|b| obs.backups.contains(&b.id))
        .collect();
    let wal = wal
        .into_iter()
        .filter(|(w, _)| obs.wal.binary_search(&w.name).is_ok())
        .map(|(w, _)| (w.name, w.path, w.archived_at))
        .collect();
    Ok(Found {
        policy,
        obs,
        backups,
        wal,
    })
}

fn print_obsolete(ctx: &Context, f: &Found, heading: &str) -> Result<()> {
    println!("recman retention policy will be applied to the command");
    println!("recman retention policy is set to {}", f.policy);
    if f.backups.is_empty() && f.wal.is_empty() {
        println!("no obsolete backups found");
        return Ok(());
    }
    println!("{heading}");
    println!(
        "{:<20} {:<26} {:<19} Filename/Handle",
        "Type", "Key", "Completion Time"
    );
    println!(
        "{} {} {} {}",
        "-".repeat(20),
        "-".repeat(26),
        "-".repeat(19),
        "-".repeat(20)
    );
    for b in &f.backups {
        println!(
            "{:<20} {:<26} {:<19}",
            "Backup Set",
            b.id,
            time(b.stop_time)
        );
        for (p, _) in ctx.repo.catalog().piece_states(&b.id)? {
            println!(
                "{:<20} {:<26} {:<19} {}",
                "  Backup Piece",
                format!("{}/{}/{}", b.id, p.set_no, p.piece_no),
                time(b.stop_time),
                p.path
            );
        }
    }
    for (name, path, at) in &f.wal {
        println!(
            "{:<20} {:<26} {:<19} {}",
            "Archive Log",
            name,
            time(Some(*at)),
            path
        );
    }
    Ok(())
}

fn obsolete_json(f: &Found) -> serde_json::Value {
    serde_json::json!({
        "policy": f.policy.to_string(),
        "backups": f.backups.iter().map(|b| &b.id).collect::<Vec<_>>(),
        "archivelogs": f.wal.iter().map(|(n, _, _)| n).collect::<Vec<_>>(),
        "kept_backups": f.obs.kept,
    })
}

pub fn report(g: &Global, what: ReportWhat) -> Result<()> {
    // These two ask the server only, so they need neither repository nor registration.
    match what {
        ReportWhat::Schema { json } => {
            return crate::report_schema::report_schema(g.target.as_deref(), json);
        }
        ReportWhat::Unrecoverable { json } => {
            return crate::report_schema::report_unrecoverable(g.target.as_deref(), json);
        }
        _ => {}
    }
    let ctx = context(g)?;
    match what {
        ReportWhat::Schema { .. } | ReportWhat::Unrecoverable { .. } => {
            unreachable!("answered above")
        }
        ReportWhat::Io {
            which,
            json,
            all,
            plot,
            html,
        } => {
            let files = crate::report_plot::Files {
                plot: plot.as_deref(),
                html: html.as_deref(),
            };
            crate::report_io::report_io(&ctx, which.as_deref(), json, all, files)?
        }
        ReportWhat::Obsolete { policy, json } => {
            let f = find_obsolete(&ctx, policy_for(g, &policy)?)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&obsolete_json(&f))?);
            } else {
                print_obsolete(&ctx, &f, "Report of obsolete backups and copies")?;
            }
        }
        ReportWhat::NeedBackup {
            redundancy,
            days,
            drill_days,
        } => {
            if let Some(d) = drill_days {
                let recs = ctx.repo.catalog().drills(ctx.db.id)?;
                println!("Report of restore drills older than {d} days");
                if let Some(line) = crate::drill_cmd::drill_need(&recs, d, now()) {
                    println!("{:<8} {line}", ctx.db.name);
                }
                if redundancy.is_none() && days.is_none() {
                    return Ok(());
                }
            }
            let avail: Vec<BackupRecord> = ctx
                .repo
                .catalog()
                .backups(ctx.db.id)?
                .into_iter()
                .filter(|b| b.status == BackupStatus::Available)
                .collect();
            let name = if ctx.db.pgdata.is_empty() {
                "database".to_string()
            } else {
                ctx.db.pgdata.clone()
            };
            if let Some(d) = days {
                println!(
                    "Report of files whose recovery needs more than {d} days of archived logs"
                );
                println!("File     Days  Name");
                println!("-------- ----- --------------------");
                let newest = avail.iter().filter_map(|b| b.stop_time).max();
                let need = newest.map(|t| (now() - t) as f64 / MICROS_PER_DAY as f64);
                if need.is_none_or(|n| n > d) {
                    let shown = need
                        .map(|n| format!("{n:.1}"))
                        .unwrap_or_else(|| "-".into());
                    println!("{:<8} {:<5} {name}", ctx.db.name, shown);
                }
            } else {
                let r = match redundancy {
                    Some(r) => r,
                    None => match super::settings::retention_policy(g)? {
                        RetentionPolicy::Redundancy(r) => r,
                        _ => 1,
                    },
                };
                println!("Report of files with less than {r} redundant backups");
                println!("File     #bkps Name");
                println!("-------- ----- --------------------");
                let n = avail.iter().filter(|b| b.backup_type == "FULL").count();
                if n < r as usize {
                    println!("{:<8} {:<5} {name}", ctx.db.name, n);
                }
            }
        }
    }
    Ok(())
}

pub(super) fn say_deleted(r: &recman_engine::DeleteReport) {
    if r.resumed > 0 {
        println!(
            "finished {} deletion(s) an interrupted command had begun",
            r.resumed
        );
    }
    for id in &r.backups {
        println!("deleted backup set\nbackup set key={id}");
    }
    for w in &r.wal {
        println!("deleted archived log\narchived log file name={w}");
    }
    println!("Deleted {} objects", r.backups.len() + r.wal.len());
}

pub fn delete(g: &Global, what: DeleteWhat) -> Result<()> {
    let ctx = context(g)?;
    let _lock = ctx.repo.lock("delete")?;
    let cat = ctx.repo.catalog();
    match what {
        DeleteWhat::Obsolete { policy, noprompt } => {
            let resumed = recman_engine::retention::finish_pending(&ctx.repo)?;
            let f = find_obsolete(&ctx, policy_for(g, &policy)?)?;
            print_obsolete(
                &ctx,
                &f,
                "Deleting the following obsolete backups and copies:",
            )?;
            if f.backups.is_empty() && f.wal.is_empty() || !confirm(noprompt, "obsolete backups")? {
                return Ok(());
            }
            let wal: Vec<(String, String)> = f
                .wal
                .iter()
                .map(|(n, p, _)| (n.clone(), p.clone()))
                .collect();
            let mut r = recman_engine::retention::delete_objects(
                &ctx.repo,
                ctx.db.id,
                &ctx.db.name,
                &f.obs.backups,
                &wal,
            )?;
            r.resumed += resumed;
            say_deleted(&r);
        }
        DeleteWhat::Backup { which, noprompt } => {
            let mut chosen: Vec<BackupRecord> = match cat.backup(&which)? {
                Some(b) if b.db_id == ctx.db.id => vec![b],
                _ => cat.backup_by_tag(ctx.db.id, &which)?,
            };
            if chosen.is_empty() {
                bail!(
                    "no backup of database {} has id or tag {which:?}; hint: `recman list backup` shows them",
                    ctx.db.name
                );
            }
            if let Some(b) = chosen.iter().find(|b| b.status == BackupStatus::Running) {
                bail!("backup {} is still running; hint: wait for it to end", b.id);
            }
            chosen.sort_by(|a, b| a.id.cmp(&b.id));
            println!("List of Backup Sets to delete");
            for b in &chosen {
                println!(
                    "{:<26} {:<24} {:<9} {}",
                    b.id,
                    b.tag,
                    b.status.as_str(),
                    time(b.stop_time)
                );
            }
            if !confirm(noprompt, "backups")? {
                return Ok(());
            }
            let ids: Vec<String> = chosen.into_iter().map(|b| b.id).collect();
            let r = recman_engine::retention::delete_objects(
                &ctx.repo,
                ctx.db.id,
                &ctx.db.name,
                &ids,
                &[],
            )?;
            say_deleted(&r);
        }
        DeleteWhat::Expired { noprompt } => {
            recman_engine::retention::finish_pending(&ctx.repo)?;
            let backups: Vec<String> = cat
                .backups(ctx.db.id)?
                .into_iter()
                .filter(|b| b.status == BackupStatus::Expired)
                .map(|b| b.id)
                .collect();
            let wal: Vec<String> = cat
                .wal_states(ctx.db.id)?
                .into_iter()
                .filter(|(_, s)| *s == MediaStatus::Expired)
                .map(|(w, _)| w.name)
                .collect();
            if backups.is_empty() && wal.is_empty() {
                println!("no expired backups or archived logs found");
                return Ok(());
            }
            for b in &backups {
                println!("Backup Set   {b}  EXPIRED");
            }
            for w in &wal {
                println!("Archive Log  {w}  EXPIRED");
            }
            if !confirm(noprompt, "expired records")? {
                return Ok(());
            }
            let (nb, nw) = cat.delete_expired_records(ctx.db.id, &backups, &wal)?;
            println!(
                "deleted the records of {nb} backup(s) and {nw} archived log(s); no media were touched"
            );
            println!("Deleted {} objects", nb + nw);
        }
        DeleteWhat::Archivelog {
            which: _,
            backed_up,
            noprompt,
        } => {
            recman_engine::retention::finish_pending(&ctx.repo)?;
            if let Some(n) = backed_up {
                return super::archivelog::delete_backed_up(&ctx, n, noprompt);
            }
            // WAL no AVAILABLE backup needs: as if every available backup were kept.
            let keep_all = RetentionPolicy::Redundancy(u32::MAX);
            let f = find_obsolete(&ctx, keep_all)?;
            if f.wal.is_empty() {
                println!("no archived logs found that no available backup needs");
                return Ok(());
            }
            for (n, p, at) in &f.wal {
                println!(
                    "{:<20} {:<26} {:<19} {}",
                    "Archive Log",
                    n,
                    time(Some(*at)),
                    p
                );
            }
            if !confirm(noprompt, "archived logs")? {
                return Ok(());
            }
            let wal: Vec<(String, String)> = f
                .wal
                .iter()
                .map(|(n, p, _)| (n.clone(), p.clone()))
                .collect();
            let r = recman_engine::retention::delete_objects(
                &ctx.repo,
                ctx.db.id,
                &ctx.db.name,
                &[],
                &wal,
            )?;
            say_deleted(&r);
        }
    }
    Ok(())
}

pub fn crosscheck(g: &Global, what: CrosscheckWhat) -> Result<()> {
    let ctx = context(g)?;
    let _lock = ctx.repo.lock("crosscheck")?;
    let mut n = 0;
    let say = |s: &str, st: MediaStatus, path: &str, why: &Option<String>| {
        println!("crosschecked {s}: found to be '{st}'");
        match why {
            Some(w) => println!("{s} handle={path} ({w})"),
            None => println!("{s} handle={path}"),
        }
    };
    match what {
        CrosscheckWhat::Backup { verify } => {
            for b in recman_engine::crosscheck_backups(&ctx.repo, &ctx.db, verify)? {
                for p in &b.pieces {
                    say("backup piece", p.status, &p.path, &p.reason);
                    n += 1;
                }
                println!("backup {} is {}", b.backup_id, b.status);
            }
        }
        CrosscheckWhat::Archivelog { verify, .. } => {
            for w in recman_engine::crosscheck_wal(&ctx.repo, &ctx.db, verify)? {
                say("archived log", w.status, &w.path, &w.reason);
                n += 1;
            }
        }
    }
    println!("Crosschecked {n} objects");
    Ok(())
}

pub fn catalog(g: &Global, what: CatalogWhat) -> Result<()> {
    let CatalogWhat::StartWith { path } = what;
    let (repo, created) = match crate::device_cmds::repo_spec(g)? {
        // A shared catalog is the server's to keep: it is never recreated here.
        crate::device_cmds::RepoSpec::Disk(_) if g.catalog.is_some() => {
            (crate::commands::open_repo(g)?, false)
        }
        crate::device_cmds::RepoSpec::Disk(root) => Repository::open_recreating_catalog(&root)?,
        // A remote repository's catalog is a cache: opening rebuilds a missing one.
        crate::device_cmds::RepoSpec::Remote(_) => (crate::commands::open_repo(g)?, false),
    };
    let _lock = repo.lock("catalog start-with")?;
    let start = match path {
        Some(p) => start_prefix(&repo, &p)?,
        None => String::new(),
    };
    if created {
        println!(
            "catalog {} was missing or damaged: created a new one",
            repo.catalog().path().display()
        );
    }
    println!(
        "searching for all files that match the pattern {}/{start}*",
        repo.location()
    );
    let r = recman_engine::rebuild_catalog(&repo, &start)?;
    for d in &r.databases_registered {
        println!("registered database {d} from the repository's manifests");
    }
    for b in &r.backups_added {
        println!("cataloged backup {b}");
    }
    println!(
        "cataloged {} backup(s) and {} archived log(s); {} backup(s) and {} archived log(s) were already in the catalog",
        r.backups_added.len(),
        r.wal_added,
        r.backups_known,
        r.wal_known
    );
    for (p, why) in &r.skipped {
        eprintln!("recman: warning: could not catalog {p}: {why}");
    }
    if !r.skipped.is_empty() {
        bail!(
            "{} file(s) could not be cataloged; hint: see the warnings above, then run crosscheck",
            r.skipped.len()
        );
    }
    Ok(())
}

/// The object-name prefix a START WITH path means: a path inside a disk repository, or a
/// name prefix relative to the repository (the only form a remote repository takes).
fn start_prefix(repo: &Repository, p: &std::path::Path) -> Result<String> {
    if repo.is_remote() || !p.is_absolute() && !p.exists() {
        return Ok(p.to_string_lossy().trim_start_matches('/').to_string());
    }
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    match abs.strip_prefix(repo.root()) {
        Ok(rel) => Ok(rel.to_string_lossy().into_owned()),
        Err(_) => anyhow::bail!(
            "{} is not inside repository {}; hint: give a directory of the repository, or the repository itself",
            abs.display(),
            repo.location()
        ),
    }
}
