//! CONNECT, SQL, foreign statements, and the catalog statements (CONFIGURE, SHOW, LIST, REPORT,
//! CROSSCHECK, DELETE, CATALOG) lowered to the command model.

use super::refuse::{self, unsupported};
use super::session::{Flow, Session, note};
use anyhow::{Result, anyhow, bail};
use recman_command as m;
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
            let conninfo = super::service::alias(c);
            if conninfo != c.trim() {
                note(
                    &s.g,
                    &format!(
                        "CONNECT TARGET {}: the net service name is the service '{}' of pg_service.conf",
                        recman_command::model::redact_conninfo(c),
                        conninfo.trim_start_matches("service=")
                    ),
                );
            }
            s.g.target = Some(conninfo);
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
    let rows = recman_command::target_sql::run(s.g.target.as_deref(), text)?;
    if !s.g.quiet {
        for cols in rows {
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
    if verb == "DRILL" {
        s.exec(super::drill::drill(words)?)?;
        return Ok(Flow::Continue);
    }
    if verb == "DUPLICATE"
        && let Some(c) = super::drill::duplicate(words)?
    {
        s.exec(c)?;
        return Ok(Flow::Continue);
    }
    if verb == "CHANGE"
        && let Some(c) = super::change::lower(&plain)?
    {
        s.exec(c)?;
        return Ok(Flow::Continue);
    }
    if let Some(c) = super::failure::lower(verb, &plain)? {
        s.exec(c)?;
        return Ok(Flow::Continue);
    }
    bail!("{}", refuse::foreign(verb, &plain))
}

/// CONFIGURE, SHOW, LIST, REPORT, CROSSCHECK, DELETE and CATALOG.
pub(crate) fn lower(s: &Session, st: &Statement) -> Result<Vec<m::Command>> {
    let one = |c: m::Command| Ok(vec![c]);
    match st {
        Statement::Configure(c) => super::configure::configure(s, c),
        Statement::Show(words) => {
            if words != &["ALL".to_string()] {
                note(
                    &s.g,
                    &format!("SHOW {}: recman shows every setting", words.join(" ")),
                );
            }
            one(m::Command::Show(m::ShowWhat::All {
                json: false,
                rman: true,
            }))
        }
        Statement::List(l) => one(list(l)?),
        Statement::Report(r) => one(m::Command::Report(match r {
            Report::Obsolete(rule) => m::ReportWhat::Obsolete {
                policy: policy(rule.as_ref())?,
                json: false,
            },
            Report::NeedBackup { rule, object } => {
                if !matches!(object, None | Some(OfObject::Database)) {
                    bail!(
                        "REPORT NEED BACKUP of a part: PostgreSQL backs up and restores whole clusters; hint: REPORT NEED BACKUP"
                    );
                }
                let (mut redundancy, mut days) = (None, None);
                match rule {
                    None => {}
                    Some(Retention2::Redundancy(n)) => redundancy = Some(count(*n, "REDUNDANCY")?),
                    Some(Retention2::Days(n)) => days = Some(*n as f64),
                    Some(other) => bail!(
                        "{}",
                        unsupported(
                            &format!("REPORT NEED BACKUP {other}"),
                            "REDUNDANCY n or DAYS n"
                        )
                    ),
                }
                m::ReportWhat::NeedBackup {
                    redundancy,
                    days,
                    drill_days: None,
                }
            }
            Report::Schema => m::ReportWhat::Schema { json: false },
            Report::Unrecoverable => m::ReportWhat::Unrecoverable { json: false },
            Report::Slo => m::ReportWhat::Slo { json: false },
            Report::Costs => m::ReportWhat::Costs { json: false },
        })),
        Statement::Crosscheck(c) => {
            no_qualifiers(&c.qualifiers, "CROSSCHECK")?;
            one(m::Command::Crosscheck(match &c.object {
                MaintObject::Backup(None) => m::CrosscheckWhat::Backup { verify: false },
                MaintObject::Archivelog(a) if a.range == ArchRange::All && a.like.is_none() => {
                    m::CrosscheckWhat::Archivelog {
                        which: Some("all".into()),
                        verify: false,
                    }
                }
                other => bail!(
                    "{}",
                    unsupported(
                        &format!("CROSSCHECK {other}"),
                        "CROSSCHECK BACKUP or CROSSCHECK ARCHIVELOG ALL"
                    )
                ),
            }))
        }
        Statement::Delete(d) => delete(s, d),
        Statement::Catalog(CatalogCmd::StartWith { prefix, noprompt }) => {
            if *noprompt {
                note(&s.g, "CATALOG … NOPROMPT: catalog start-with never prompts");
            }
            one(m::Command::Catalog(m::CatalogWhat::StartWith {
                path: Some(PathBuf::from(prefix)),
            }))
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

/// A count of the language (a u64) as the command's u32; beyond it is out of every range.
fn count(n: u64, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        anyhow!("{what} {n} is out of range; hint: docs/commands.md gives each option's range")
    })
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

fn policy(rule: Option<&Retention2>) -> Result<m::PolicyOverride> {
    let mut p = m::PolicyOverride::default();
    match rule {
        None => {}
        Some(Retention2::Redundancy(n)) => p.redundancy = Some(count(*n, "REDUNDANCY")?),
        Some(Retention2::WindowDays(n)) => p.recovery_window = Some(*n as f64),
        Some(other) => bail!(
            "{}",
            unsupported(
                &other.to_string(),
                "REDUNDANCY n or RECOVERY WINDOW OF n DAYS"
            )
        ),
    }
    Ok(p)
}

fn list(l: &List) -> Result<m::Command> {
    Ok(match l {
        List::Objects {
            expired: false,
            object,
            summary,
            by_file,
            qualifiers,
        } if qualifiers.is_empty() => {
            let c = match object {
                MaintObject::Backup(None | Some(OfObject::Database)) => m::Command::ListBackup {
                    json: false,
                    summary: *summary,
                    by_file: *by_file,
                },
                MaintObject::Archivelog(x) if x.range == ArchRange::All && x.like.is_none() => {
                    m::Command::ListArchivelog { json: false }
                }
                MaintObject::Copy(_) => m::Command::ListCopy { json: false },
                other => bail!(
                    "{}",
                    unsupported(
                        &format!("LIST {other}"),
                        "LIST BACKUP, LIST BACKUP SUMMARY, LIST ARCHIVELOG ALL"
                    )
                ),
            };
            if (*summary || *by_file) && !matches!(c, m::Command::ListBackup { .. }) {
                bail!(
                    "{}",
                    unsupported(
                        &format!("LIST {object} SUMMARY / BY FILE"),
                        "LIST BACKUP SUMMARY or LIST BACKUP BY FILE"
                    )
                );
            }
            c
        }
        List::Incarnation => m::Command::ListIncarnation { json: false },
        List::Failure { all, ids, detail } => {
            m::Command::Failure(m::FailureWhat::List(m::failures::FailureList {
                all: *all,
                ids: ids
                    .iter()
                    .map(|n| i64::try_from(*n))
                    .collect::<Result<_, _>>()
                    .map_err(|_| anyhow!("LIST FAILURE: a failure number is out of range; hint: LIST FAILURE ALL shows the numbers"))?,
                detail: *detail,
                json: false,
            }))
        }
        other => bail!(
            "{}",
            unsupported(
                &format!("LIST {other}"),
                "LIST BACKUP, LIST ARCHIVELOG ALL, LIST INCARNATION"
            )
        ),
    })
}

fn delete(s: &Session, d: &Delete) -> Result<Vec<m::Command>> {
    if d.force {
        note(
            &s.g,
            "DELETE FORCE: recman removes media first, then records; FORCE adds nothing",
        );
    }
    let noprompt = d.noprompt;
    let what = match &d.what {
        DeleteWhat::Obsolete(rule) => {
            no_qualifiers(&d.qualifiers, "DELETE OBSOLETE")?;
            m::DeleteWhat::Obsolete {
                policy: policy(rule.as_ref())?,
                noprompt,
            }
        }
        DeleteWhat::Expired(MaintObject::Backup(None) | MaintObject::Archivelog(_)) => {
            no_qualifiers(&d.qualifiers, "DELETE EXPIRED")?;
            m::DeleteWhat::Expired { noprompt }
        }
        DeleteWhat::Object(MaintObject::Backupset(keys)) if keys.len() == 1 => {
            no_qualifiers(&d.qualifiers, "DELETE BACKUPSET")?;
            m::DeleteWhat::Backup {
                which: keys[0].to_string(),
                noprompt,
            }
        }
        DeleteWhat::Object(MaintObject::Archivelog(x))
            if x.range == ArchRange::All && x.like.is_none() =>
        {
            let mut backed_up = None;
            for q in &d.qualifiers {
                match q {
                    Qualifier::BackedUp {
                        times,
                        device: Device::Disk,
                    } => backed_up = Some(count(*times, "BACKED UP")?),
                    other => bail!(
                        "{}",
                        unsupported(
                            &format!("DELETE ARCHIVELOG ALL {other}"),
                            "DELETE ARCHIVELOG ALL [BACKED UP n TIMES TO DISK]"
                        )
                    ),
                }
            }
            m::DeleteWhat::Archivelog {
                which: "all".into(),
                backed_up,
                noprompt,
            }
        }
        other => bail!(
            "{}",
            unsupported(
                &format!("DELETE {}", print_what(other)),
                "DELETE OBSOLETE, DELETE EXPIRED BACKUP, DELETE BACKUPSET n, DELETE ARCHIVELOG ALL"
            )
        ),
    };
    Ok(vec![m::Command::Delete(what)])
}

fn print_what(w: &DeleteWhat) -> String {
    match w {
        DeleteWhat::Obsolete(_) => "OBSOLETE".into(),
        DeleteWhat::Expired(o) => format!("EXPIRED {o}"),
        DeleteWhat::Object(o) => o.to_string(),
    }
}
