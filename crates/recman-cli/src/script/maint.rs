//! CONNECT, SQL, foreign statements, and the catalog statements (CONFIGURE, SHOW, LIST, REPORT,
//! CROSSCHECK, DELETE, CATALOG) lowered to recman's subcommands.

use super::refuse::{self, unsupported};
use super::{Flow, Session, note};
use anyhow::{Result, anyhow, bail};
use recman_lang::*;
use std::path::PathBuf;

pub(crate) fn connect(s: &mut Session, to: ConnectTo, string: Option<&str>) -> Result<()> {
    match (to, string) {
        (ConnectTo::Target, None | Some("/")) => {
            note(
                &s.g,
                "CONNECT TARGET: using the default target (--target, PG* variables, or the local socket)",
            );
        }
        (ConnectTo::Target, Some(c)) => {
            crate::input::warn_password("CONNECT TARGET", c);
            s.g.target = Some(c.to_string());
        }
        (ConnectTo::Catalog, Some(p)) if p.starts_with('/') || p.starts_with('.') => {
            s.g.repo = Some(PathBuf::from(p));
        }
        (ConnectTo::Catalog, _) => bail!(
            "CONNECT CATALOG: recman's catalog lives in the repository directory, not in a database service; hint: CONNECT CATALOG '/path/to/repository' (or --repo)"
        ),
        (ConnectTo::Auxiliary, _) => bail!("{}", refuse::AUXILIARY),
    }
    Ok(())
}

/// Oracle statements that ask for a WAL switch, which PostgreSQL spells pg_switch_wal().
fn is_log_switch(sql: &str) -> bool {
    let norm: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let norm: Vec<&str> = norm.iter().map(String::as_str).collect();
    matches!(
        norm.as_slice(),
        ["alter", "system", "archive", "log", "current"] | ["alter", "system", "switch", "logfile"]
    )
}

/// SQL '…' runs on the target and prints the rows it returns, one per line, `|` between columns.
pub(crate) fn sql(s: &Session, text: &str) -> Result<()> {
    let text = if is_log_switch(text) {
        note(
            &s.g,
            &format!("SQL '{text}': PostgreSQL switches WAL with pg_switch_wal(); running that"),
        );
        "select pg_switch_wal()"
    } else {
        text
    };
    let target = recman_pg::resolve_conninfo(s.g.target.as_deref())?;
    let mut session = recman_pg::Session::connect(&target)?;
    let rows = session
        .simple_query(text)
        .map_err(|e| anyhow!("SQL '{text}' failed on the target: {e}"))?;
    if !s.g.quiet {
        for r in rows {
            let cols: Vec<String> = r.into_iter().map(|c| c.unwrap_or_default()).collect();
            println!("{}", cols.join("|"));
        }
    }
    Ok(())
}

pub(crate) fn foreign(s: &Session, verb: &str, words: &[Word]) -> Result<Flow> {
    let plain: Vec<String> = words
        .iter()
        .map(|w| match w {
            Word::Bare(b) => b.clone(),
            Word::Quoted(q) => q.clone(),
        })
        .collect();
    if verb == "ALTER" && is_log_switch(&format!("alter {}", plain.join(" "))) {
        sql(s, &format!("alter {}", plain.join(" ")))?;
        return Ok(Flow::Continue);
    }
    bail!("{}", refuse::foreign(verb, &plain))
}

fn v(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// CONFIGURE, SHOW, LIST, REPORT, CROSSCHECK, DELETE and CATALOG.
pub(crate) fn lower(s: &Session, st: &Statement) -> Result<Vec<Vec<String>>> {
    let one = |a: Vec<String>| Ok(vec![a]);
    match st {
        Statement::Configure(c) => super::configure::configure(s, c),
        Statement::Show(words) => {
            if words != &["ALL".to_string()] {
                note(
                    &s.g,
                    &format!("SHOW {}: recman shows every setting", words.join(" ")),
                );
            }
            one(v(&["show", "all"]))
        }
        Statement::List(l) => one(list(l)?),
        Statement::Report(r) => one(match r {
            Report::Obsolete(rule) => {
                let mut a = v(&["report", "obsolete"]);
                policy(rule.as_ref(), &mut a)?;
                a
            }
            Report::NeedBackup { rule, object } => {
                if !matches!(object, None | Some(OfObject::Database)) {
                    bail!(
                        "REPORT NEED BACKUP of a part: PostgreSQL backs up and restores whole clusters; hint: REPORT NEED BACKUP"
                    );
                }
                let mut a = v(&["report", "need-backup"]);
                match rule {
                    None => {}
                    Some(Retention2::Redundancy(n)) => {
                        a.extend(v(&["--redundancy", &n.to_string()]))
                    }
                    Some(Retention2::Days(n)) => a.extend(v(&["--days", &n.to_string()])),
                    Some(other) => bail!(
                        "{}",
                        unsupported(
                            &format!("REPORT NEED BACKUP {other}"),
                            "REDUNDANCY n or DAYS n"
                        )
                    ),
                }
                a
            }
            Report::Schema => v(&["report", "schema"]),
            Report::Unrecoverable => v(&["report", "unrecoverable"]),
        }),
        Statement::Crosscheck(c) => {
            no_qualifiers(&c.qualifiers, "CROSSCHECK")?;
            one(match &c.object {
                MaintObject::Backup(None) => v(&["crosscheck", "backup"]),
                MaintObject::Archivelog(a) if a.range == ArchRange::All && a.like.is_none() => {
                    v(&["crosscheck", "archivelog", "all"])
                }
                other => bail!(
                    "{}",
                    unsupported(
                        &format!("CROSSCHECK {other}"),
                        "CROSSCHECK BACKUP or CROSSCHECK ARCHIVELOG ALL"
                    )
                ),
            })
        }
        Statement::Delete(d) => delete(s, d),
        Statement::Catalog(CatalogCmd::StartWith { prefix, noprompt }) => {
            if *noprompt {
                note(&s.g, "CATALOG … NOPROMPT: catalog start-with never prompts");
            }
            one(v(&["catalog", "start-with", prefix]))
        }
        Statement::Catalog(other) => bail!(
            "{}",
            unsupported(
                &format!("CATALOG {other}"),
                "CATALOG START WITH '/path' finds every manifest and WAL file under a path"
            )
        ),
        other => bail!("internal: {other} reached the catalog statements"),
    }
}

fn no_qualifiers(q: &[Qualifier], what: &str) -> Result<()> {
    for x in q {
        if !matches!(x, Qualifier::DeviceType(Device::Disk)) {
            bail!(
                "{}",
                unsupported(&format!("{what} … {x}"), &format!("{what} without it"))
            );
        }
    }
    Ok(())
}

fn policy(rule: Option<&Retention2>, a: &mut Vec<String>) -> Result<()> {
    match rule {
        None => {}
        Some(Retention2::Redundancy(n)) => a.extend(v(&["--redundancy", &n.to_string()])),
        Some(Retention2::WindowDays(n)) => a.extend(v(&["--recovery-window", &n.to_string()])),
        Some(other) => bail!(
            "{}",
            unsupported(
                &other.to_string(),
                "REDUNDANCY n or RECOVERY WINDOW OF n DAYS"
            )
        ),
    }
    Ok(())
}

fn list(l: &List) -> Result<Vec<String>> {
    Ok(match l {
        List::Objects {
            expired: false,
            object,
            summary,
            by_file,
            qualifiers,
        } if qualifiers.is_empty() => {
            let mut a = match object {
                MaintObject::Backup(None | Some(OfObject::Database)) => v(&["list", "backup"]),
                MaintObject::Archivelog(x) if x.range == ArchRange::All && x.like.is_none() => {
                    v(&["list", "archivelog", "all"])
                }
                MaintObject::Copy(_) => v(&["list", "copy"]),
                other => bail!(
                    "{}",
                    unsupported(
                        &format!("LIST {other}"),
                        "LIST BACKUP, LIST BACKUP SUMMARY, LIST ARCHIVELOG ALL"
                    )
                ),
            };
            if *summary {
                a.push("--summary".into());
            }
            if *by_file {
                a.push("--by-file".into());
            }
            a
        }
        List::Incarnation => v(&["list", "incarnation"]),
        other => bail!(
            "{}",
            unsupported(
                &format!("LIST {other}"),
                "LIST BACKUP, LIST ARCHIVELOG ALL, LIST INCARNATION"
            )
        ),
    })
}

fn delete(s: &Session, d: &Delete) -> Result<Vec<Vec<String>>> {
    if d.force {
        note(
            &s.g,
            "DELETE FORCE: recman removes media first, then records; FORCE adds nothing",
        );
    }
    let mut a = match &d.what {
        DeleteWhat::Obsolete(rule) => {
            no_qualifiers(&d.qualifiers, "DELETE OBSOLETE")?;
            let mut a = v(&["delete", "obsolete"]);
            policy(rule.as_ref(), &mut a)?;
            a
        }
        DeleteWhat::Expired(MaintObject::Backup(None) | MaintObject::Archivelog(_)) => {
            no_qualifiers(&d.qualifiers, "DELETE EXPIRED")?;
            v(&["delete", "expired"])
        }
        DeleteWhat::Object(MaintObject::Backupset(keys)) if keys.len() == 1 => {
            no_qualifiers(&d.qualifiers, "DELETE BACKUPSET")?;
            v(&["delete", "backup", &keys[0].to_string()])
        }
        DeleteWhat::Object(MaintObject::Archivelog(x))
            if x.range == ArchRange::All && x.like.is_none() =>
        {
            let mut a = v(&["delete", "archivelog", "all"]);
            for q in &d.qualifiers {
                match q {
                    Qualifier::BackedUp {
                        times,
                        device: Device::Disk,
                    } => a.extend(v(&["--backed-up", &times.to_string()])),
                    other => bail!(
                        "{}",
                        unsupported(
                            &format!("DELETE ARCHIVELOG ALL {other}"),
                            "DELETE ARCHIVELOG ALL [BACKED UP n TIMES TO DISK]"
                        )
                    ),
                }
            }
            a
        }
        other => bail!(
            "{}",
            unsupported(
                &format!("DELETE {}", print_what(other)),
                "DELETE OBSOLETE, DELETE EXPIRED BACKUP, DELETE BACKUPSET n, DELETE ARCHIVELOG ALL"
            )
        ),
    };
    if d.noprompt {
        a.push("--noprompt".into());
    }
    Ok(vec![a])
}

fn print_what(w: &DeleteWhat) -> String {
    match w {
        DeleteWhat::Obsolete(_) => "OBSOLETE".into(),
        DeleteWhat::Expired(o) => format!("EXPIRED {o}"),
        DeleteWhat::Object(o) => o.to_string(),
    }
}
