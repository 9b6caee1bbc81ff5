//! The client side of the fleet (docs/fleet.md): archive-push and archive-get through the
//! repository host's server (`--repo-host`), and a restore written through the database
//! host's agent.

use crate::cli::Global;
use crate::fleet_args::TlsArgs;
use anyhow::{Result, anyhow};
use recman_command::model::Through;
use std::path::Path;
use std::process::ExitCode;

/// The database named by --db; without it the repository host picks the one this host's
/// certificate may archive for, and refuses (naming them) when there are several.
fn db_name(g: &Global) -> Option<&str> {
    g.db.as_deref()
}

/// archive-push %p through the repository host: the segment is durably archived there when
/// this returns.
pub fn push(g: &Global, path: &Path, url: &str, tls: &TlsArgs) -> Result<()> {
    let db = db_name(g);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            anyhow!(
                "{} is not a WAL file path; hint: archive_command passes %p",
                path.display()
            )
        })?;
    let data =
        std::fs::read(path).map_err(|e| anyhow!("cannot read WAL file {}: {e}", path.display()))?;
    let tls = tls.files("archive-push --repo-host")?;
    let already = recman_command::fleet::push_wal(url, &tls, db, &name, data)?;
    if g.verbose {
        let how = if already {
            "was already archived"
        } else {
            "archived"
        };
        println!("wal file {name} {how} on the repository host {url}");
    }
    Ok(())
}

/// archive-get %f %p through the repository host; exit 1 when it is not archived.
pub fn get(g: &Global, name: &str, dest: &Path, url: &str, tls: &TlsArgs) -> Result<ExitCode> {
    let db = db_name(g);
    let tls = tls.files("archive-get --repo-host")?;
    let Some(data) = recman_command::fleet::get_wal(url, &tls, db, name)? else {
        if g.verbose {
            eprintln!("recman: wal file {name} is not archived on the repository host {url}");
        }
        return Ok(ExitCode::from(1));
    };
    // PostgreSQL may read the file as soon as it exists: write aside, then rename.
    let tmp = dest.with_extension("recman-tmp");
    let r = std::fs::write(&tmp, &data).and_then(|()| std::fs::rename(&tmp, dest));
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow!("cannot write {}: {e}", dest.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--agent local`: restore on this host, also for a database registered with an agent.
pub const LOCAL_AGENT: &str = "local";

/// A restore of `db` written through the agent at `url`; its restore_command is the one the
/// agent gives (archive-get through the repository host), else the usual one.
pub fn through_agent(url: &str, tls: &TlsArgs, db: &str) -> Result<Through> {
    let tls = tls.files("a restore through an agent")?;
    let through = recman_command::fleet::restore_through_agent(url, &tls, db)?;
    if through.restore_command.is_none() {
        // Warned, not refused: a repository on storage both hosts mount is reachable from
        // the database host by the same path.
        eprintln!(
            "recman: warning: the agent at {url} was started without --repo-host, so the restored cluster's restore_command runs archive-get on the database host against this host's repository path; unless the database host reaches that path, recovery fails there (permission denied, or no such file); hint: restart the agent with `recman server --restore-dir DIR --repo-host URL`"
        );
    }
    Ok(through)
}

/// Runs the fleet's forms of commands: `server`, and archive-push / archive-get with
/// `--repo-host`; None for every other command.
pub fn intercept(g: &Global, command: &recman_command::Command) -> Result<Option<ExitCode>> {
    use recman_command::Command as C;
    match command {
        C::Server {
            listen,
            allow,
            restore_dir,
            repo_host,
            metrics_listen,
            page_listen,
            page_token,
            page_allow,
            receive,
        } => {
            if g.pgdata.is_none() && restore_dir.is_empty() && g.repo.is_some() {
                if let Some(addr) = page_listen {
                    crate::fleet_page::spawn(g, addr, page_allow, page_token.as_deref())?;
                }
                crate::receive_cmd::spawn_for_server(g, receive)?;
                crate::repo_host::serve(g, listen, allow, metrics_listen.as_deref())?;
            } else if let Some(r) = receive.first() {
                anyhow::bail!(
                    "--receive {r}: the WAL receiver writes into the repository, which the repository host's server holds, not a database host's agent; hint: give it to `recman --repo R server` on the repository host"
                );
            } else if let Some(m) = metrics_listen {
                anyhow::bail!(
                    "--metrics-listen {m}: metrics come from the catalog, which the repository host's server holds, not a database host's agent; hint: give it to `recman --repo R server` on the repository host"
                );
            } else if let Some(p) = page_listen {
                anyhow::bail!(
                    "--page-listen {p}: the fleet page comes from the catalog, which the repository host's server holds, not a database host's agent; hint: give it to `recman --repo R server` on the repository host"
                );
            } else {
                let restore = recman_command::fleet::RestoreAgent::new(
                    restore_dir,
                    repo_host.as_deref(),
                    TlsArgs::of(g).args(),
                );
                crate::server_cmd::serve_with(g, listen, allow, restore)?;
            }
            Ok(Some(ExitCode::SUCCESS))
        }
        C::ArchivePush(p) => match &p.repo_host {
            Some(url) => push(g, &p.path, url, &TlsArgs::of(g)).map(|()| Some(ExitCode::SUCCESS)),
            None => Ok(None),
        },
        C::ArchiveGet(a) => match &a.repo_host {
            Some(url) => get(g, &a.name, &a.dest, url, &TlsArgs::of(g)).map(Some),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}
