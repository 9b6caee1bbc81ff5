//! One statement run: a top-level statement in an empty block, a RUN block's body statement
//! by statement, and the dispatch of each statement kind to its lowering.

use super::block::{Block, Channel};
use super::session::{Flow, Session, note};
use super::{device, lower, maint, refuse, restore};
use anyhow::{Context, Result, bail};
use recman_lang::*;

/// Runs one top-level statement (a RUN block runs its body).
pub(crate) fn run_stmt(s: &mut Session, stmt: &Stmt) -> Result<Flow> {
    if s.g.verbose {
        eprintln!(
            "recman: running {}",
            crate::input::redact_secrets(&stmt.statement.to_string())
        );
    }
    match &stmt.statement {
        Statement::Run(body) => {
            let mut b = Block::new(body);
            for (i, st) in body.iter().enumerate() {
                let flow = b.run(s, i, st).with_context(|| {
                    format!(
                        "RUN block at line {}: statement {} (line {}: {}) failed; the rest of the block was not run",
                        stmt.line,
                        i + 1,
                        st.line,
                        st.first_line
                    )
                })?;
                if flow == Flow::Exit {
                    return Ok(Flow::Exit);
                }
            }
            Ok(Flow::Continue)
        }
        other => {
            let mut b = Block::top_level();
            b.run_statement(s, other)
        }
    }
}

impl Block {
    /// Runs statement `i` of the block.
    pub(crate) fn run(&mut self, s: &mut Session, i: usize, stmt: &Stmt) -> Result<Flow> {
        if s.g.verbose {
            eprintln!(
                "recman: running {}",
                crate::input::redact_secrets(&stmt.statement.to_string())
            );
        }
        if let Statement::Restore(r) = &stmt.statement
            && let Some((at, until)) = self.restore_joins.clone()
            && at == i
        {
            let c = restore::restore(self, &s.g, r, until.as_ref())?;
            s.exec(c)?;
            return Ok(Flow::Continue);
        }
        if self.recover_done == Some(i) {
            note(
                &s.g,
                "RECOVER DATABASE: done by the RESTORE DATABASE above; recovery runs when PostgreSQL starts on the restored directory",
            );
            return Ok(Flow::Continue);
        }
        self.run_statement(s, &stmt.statement)
    }

    pub(crate) fn run_statement(&mut self, s: &mut Session, st: &Statement) -> Result<Flow> {
        match st {
            Statement::Run(_) => bail!("RUN blocks cannot be nested"),
            Statement::Exit => return Ok(Flow::Exit),
            Statement::Help(t) => print!("{}", help::help(t.as_deref())),
            Statement::Connect { to, string } => maint::connect(s, *to, string.as_deref())?,
            Statement::Allocate(a) => self.allocate(s, a)?,
            Statement::Release(name) => {
                self.only_in_run("RELEASE CHANNEL")?;
                match name {
                    None => self.channels.clear(),
                    Some(n) => {
                        let before = self.channels.len();
                        self.channels.retain(|c| !c.name.eq_ignore_ascii_case(n));
                        if before == self.channels.len() {
                            bail!(
                                "RELEASE CHANNEL {n}: no channel {n} is allocated in this block; hint: ALLOCATE CHANNEL {n} DEVICE TYPE DISK first"
                            );
                        }
                    }
                }
            }
            Statement::Set(set) => self.set(s, set)?,
            Statement::Backup(b) => {
                for c in lower::backup(self, b, &s.g)? {
                    s.exec(c)?;
                }
            }
            Statement::Restore(r) => {
                let c = restore::restore(self, &s.g, r, None)?;
                s.exec(c)?;
            }
            Statement::Recover(r) => {
                if let Some(c) = restore::recover_alone(r)? {
                    s.exec(c)?;
                }
            }
            Statement::Validate(v) => {
                for c in lower::validate(self, &s.g, v)? {
                    s.exec(c)?;
                }
            }
            Statement::Sql(text) => maint::sql(s, text)?,
            Statement::CreateCatalog => s.exec(recman_command::Command::CreateCatalog {
                encrypt: false,
                immutable: None,
            })?,
            Statement::CreateRestorePoint(name) => {
                s.exec(recman_command::Command::CreateRestorePoint { name: name.clone() })?
            }
            Statement::RegisterDatabase => s.exec(recman_command::Command::RegisterDatabase {
                agent: None,
                name: "main".into(),
            })?,
            Statement::Foreign { verb, words } => return maint::foreign(s, verb, words),
            Statement::Catalog(CatalogCmd::Files { kind, names })
                if kind.eq_ignore_ascii_case("ARCHIVELOG") =>
            {
                for n in names {
                    crate::archive_cmds::catalog_archivelog(&s.g, std::path::Path::new(n))?;
                }
            }
            other => {
                for c in maint::lower(s, other)? {
                    s.exec(c)?;
                }
            }
        }
        Ok(Flow::Continue)
    }

    fn allocate(&mut self, s: &Session, a: &Allocate) -> Result<()> {
        if a.maintenance {
            note(
                &s.g,
                "ALLOCATE CHANNEL FOR MAINTENANCE: recman's maintenance commands need no channel; nothing to allocate",
            );
            return Ok(());
        }
        self.only_in_run("ALLOCATE CHANNEL")?;
        if a.auxiliary {
            bail!("{}", refuse::AUXILIARY);
        }
        let name = a.name.clone().unwrap_or_default();
        device::device_word(&a.device)?;
        for op in &a.operands {
            match op {
                ChannelOp::Parms(p) => device::check_channel_parms(&s.g, &name, &a.device, p)?,
                ChannelOp::Send(_) => bail!("channel {name}: {}", refuse::SEND),
                _ => {}
            }
        }
        if self
            .channels
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&name))
        {
            bail!(
                "channel {name} is already allocated in this block; hint: give each channel its own name"
            );
        }
        self.channels.push(Channel {
            name,
            device: a.device.clone(),
            ops: a.operands.clone(),
        });
        Ok(())
    }

    fn set(&mut self, s: &Session, set: &SetCmd) -> Result<()> {
        self.only_in_run("SET")?;
        match set {
            SetCmd::Until(u) => self.until = Some(u.clone()),
            SetCmd::Newname {
                target: NewnameFor::Database,
                to: Some(p),
            } => {
                if p.contains('%') {
                    bail!(
                        "SET NEWNAME FOR DATABASE TO '{p}': recman restores the whole cluster into one directory, so the name takes no %-variables; hint: SET NEWNAME FOR DATABASE TO '/srv/restore/pgdata'"
                    );
                }
                self.newname = Some(p.clone());
            }
            SetCmd::Newname { .. } => bail!(
                "SET NEWNAME for single files, tablespaces or TO NEW: PostgreSQL restores a cluster as a whole; hint: SET NEWNAME FOR DATABASE TO '/new/dir' (tablespaces move with recman restore database --tablespace-map OLD=NEW)"
            ),
            SetCmd::Maxcorrupt { limit, .. } => {
                note(
                    &s.g,
                    &format!(
                        "SET MAXCORRUPT: PostgreSQL's data files are relation segments, so the limit of {limit} applies to every file of the next BACKUP"
                    ),
                );
                self.maxcorrupt = Some(*limit);
            }
            SetCmd::CompressionAlgorithm(a) => {
                self.compression = Some(super::channels::compression(a)?.to_string());
            }
            SetCmd::ArchivelogDestination(_) => bail!(
                "SET ARCHIVELOG DESTINATION: restored clusters fetch WAL from the repository through restore_command; there is no destination to set"
            ),
            SetCmd::CommandId(_) => bail!(
                "SET COMMAND ID tags Oracle server sessions; PostgreSQL sessions of recman are named by application_name=recman already"
            ),
            SetCmd::Dbid(_) => bail!(
                "SET DBID selects a database before its control file is restored; recman finds the cluster by its registered name: pass --db NAME"
            ),
            SetCmd::BackupCopies(_) => bail!(
                "{}",
                refuse::unsupported(
                    "SET BACKUP COPIES (duplexed backups)",
                    "take a second backup, or copy the repository"
                )
            ),
        }
        Ok(())
    }
}
