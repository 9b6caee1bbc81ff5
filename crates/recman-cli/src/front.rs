//! The CLI's side of the shared executor (`recman_command::execute`): the environment it
//! reads (config file, catalog settings, progress bar, the executable restore_command calls)
//! and how each outcome is printed.

use crate::cli::Global;
use crate::display::size;
use crate::progress::Bar;
use recman_catalog::Repository;
use recman_command::{EnvError, Outcome};
use recman_engine::{Context, Progress};
use std::path::PathBuf;

pub struct CliEnv<'a> {
    pub g: &'a Global,
    pub bar: &'a Bar,
}

impl recman_command::Env for CliEnv<'_> {
    fn context(&self) -> Result<Context, EnvError> {
        Ok(crate::open::context(self.g)?)
    }

    fn repository_root(&self) -> Option<std::path::PathBuf> {
        self.g
            .repo
            .clone()
            .filter(|r| !crate::open::is_object_store(&r.to_string_lossy()))
    }
    fn repository(&self) -> Result<Repository, EnvError> {
        Ok(crate::open::open_repo(self.g)?)
    }

    fn pgdata(&self) -> Option<PathBuf> {
        self.g.pgdata.clone()
    }

    fn target(&self) -> Option<String> {
        self.g.target.clone()
    }

    fn tls(&self) -> Option<recman_remote::TlsFiles> {
        crate::fleet_args::tls_files(self.g).ok().flatten()
    }

    fn database(&self) -> Option<String> {
        self.g.db.clone()
    }

    fn create_repository(&self) -> Result<Repository, EnvError> {
        Ok(crate::open::create_repo(self.g)?)
    }

    fn create_immutable_repository(
        &self,
        spec: recman_catalog::repo::Immutable,
    ) -> Result<Repository, EnvError> {
        Ok(crate::open::create_immutable_repo(self.g, spec)?)
    }

    fn config_file_settings(&self) -> Result<Vec<(&'static str, String)>, EnvError> {
        Ok(crate::config::file_layer(self.g)?)
    }

    fn confirm(&self, noprompt: bool, what: &str) -> Result<bool, EnvError> {
        Ok(crate::catalog_cmds::maint::confirm(noprompt, what)?)
    }

    fn repository_for_rebuild(&self) -> Result<(Repository, bool), EnvError> {
        use crate::open::RepoSpec;
        Ok(match crate::open::repo_spec(self.g)? {
            // A shared catalog is the server's to keep: it is never recreated here.
            RepoSpec::Disk(_) if self.g.catalog.is_some() => {
                (crate::open::open_repo(self.g)?, false)
            }
            RepoSpec::Disk(root) => Repository::open_recreating_catalog(&root)?,
            // A remote repository's catalog is a cache: opening rebuilds a missing one.
            RepoSpec::Remote(_) => (crate::open::open_repo(self.g)?, false),
        })
    }

    fn restore_invocation(
        &self,
        repo: &Repository,
    ) -> Result<(PathBuf, PathBuf, Vec<String>), EnvError> {
        Ok((
            std::env::current_dir()?,
            std::env::current_exe()?,
            crate::open::passed_on_args(self.g, repo)?,
        ))
    }

    fn progress(&self) -> &dyn Progress {
        self.bar
    }
    fn restore_through(&self, ctx: &Context) -> Result<Option<recman_engine::Through>, EnvError> {
        // A database registered with --agent is restored on its host by default: that is
        // where it lives. `--agent local` restores on this host anyway.
        let url = match self.g.agent.as_deref() {
            Some(crate::fleet_client::LOCAL_AGENT) => return Ok(None),
            Some(url) => url.to_string(),
            None => match ctx.repo.catalog().db_agent(ctx.db.id)? {
                Some(url) => url,
                None => return Ok(None),
            },
        };
        Ok(Some(crate::fleet_client::through_agent(
            &url,
            &crate::fleet_args::TlsArgs::of(self.g),
            &ctx.db.name,
        )?))
    }
}

pub struct CliPrinter<'a> {
    pub g: &'a Global,
}

impl CliPrinter<'_> {
    fn say(&self, s: &str) {
        if !self.g.quiet {
            println!("{s}");
        }
    }
}

impl recman_command::Printer for CliPrinter<'_> {
    fn outcome(&mut self, o: Outcome) {
        match o {
            Outcome::BackupChanged { ids } => {
                for id in ids {
                    self.say(&format!("changed backup {id}"))
                }
            }
            Outcome::RestorePointCreated { name, lsn } => {
                self.say(&format!("created restore point {name} at lsn {lsn}"))
            }
            Outcome::Registered { db, repository } => self.say(&format!(
                "registered database {} (system identifier {}, PostgreSQL {}, data directory {}) in repository {}",
                db.name, db.system_identifier, db.pg_version, db.pgdata, repository
            )),
            Outcome::ArchivedCurrent { upto } => {
                if self.g.verbose {
                    println!("archived the current wal up to {upto}");
                }
            }
            Outcome::ArchivelogBackedUp(r) => crate::catalog_cmds::say_archivelog(self.g.quiet, &r),
            Outcome::BackedUp { report: r, maxcorrupt } => {
                for c in &r.corrupt {
                    eprintln!(
                        "recman: warning: corrupt block accepted (--maxcorrupt {maxcorrupt}): file {} block {}{}: {}",
                        c.path,
                        c.block,
                        c.relation
                            .as_ref()
                            .map(|r| format!(" (relation {r})"))
                            .unwrap_or_default(),
                        c.detail
                    );
                }
                let b = &r.record;
                self.say(&format!(
                    "backup {} tag {} completed: {} files, {} sets, {} read, {} written, {:.1}s, total {:.1} MB/s, sustained {:.1} MB/s, status {}",
                    b.id,
                    b.tag,
                    b.file_count,
                    r.sets,
                    size(b.db_bytes),
                    size(b.written_bytes),
                    r.elapsed.as_secs_f64(),
                    r.total_rate / 1e6,
                    r.sustained_rate / 1e6,
                    b.status.as_str()
                ));
            }
            Outcome::Copied {
                report: r,
                device,
                with_wal,
            } => self.say(&format!(
                "copied {} object(s), {} bytes, of {} backup(s){} to device type {device}; {} object(s) already had a copy there",
                r.objects,
                r.bytes,
                r.backups.len(),
                if with_wal {
                    format!(" and {} archived log(s)", r.wal_files)
                } else {
                    String::new()
                },
                r.already
            )),
            Outcome::SyntheticFull(b) => self.say(&format!(
                "synthetic full backup {} tag {} completed: {} written, stands for {} (lsn {})",
                b.id,
                b.tag,
                size(b.written_bytes),
                b.stop_time
                    .and_then(chrono::DateTime::from_timestamp_micros)
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_default(),
                recman_pg::Lsn(b.stop_lsn.unwrap_or(0))
            )),
            Outcome::ControlfileBackedUp(r) => self.say(&format!(
                "control file backup: the catalog{} in piece {} ({} bytes)",
                if r.with_pg_control {
                    " and pg_control"
                } else {
                    ""
                },
                r.piece,
                r.bytes
            )),
            Outcome::ControlfileRestored { repository, aside } => self.say(&format!(
                "restored the catalog into repository {}{}",
                repository.display(),
                aside
                    .map(|a| format!("; the catalog it replaced is kept as {}", a.display()))
                    .unwrap_or_default()
            )),
            Outcome::BlocksRecovered(r) => {
                for b in &r.repaired {
                    self.say(&format!(
                        "repaired block {}:{} from backup {} (page lsn {}, brought forward to {})",
                        b.path,
                        b.block,
                        b.backup_id,
                        recman_pg::Lsn(b.page_lsn),
                        recman_pg::Lsn(b.recovered_to_lsn)
                    ));
                }
                self.say(&format!(
                    "block recovery: {} block(s) repaired in {:.1}s, reading {} of the backup's {} bytes; the auxiliary copy {} was removed",
                    r.repaired.len(),
                    r.elapsed.as_secs_f64(),
                    r.read.0,
                    r.read.1,
                    r.auxiliary_dir.display()
                ));
            }
            Outcome::CopyRecovered { tag, applied } => {
                if applied.is_empty() {
                    self.say(&format!(
                        "image copy {} is up to date: no level 1 to apply",
                        tag.to_uppercase()
                    ));
                } else {
                    self.say(&format!(
                        "image copy {} rolled forward with {} level 1 backup(s): {}",
                        tag.to_uppercase(),
                        applied.len(),
                        applied.join(", ")
                    ));
                }
            }
            Outcome::TableRecovered(r) => {
                let done = match (&r.dump, r.loaded) {
                    (Some(f), _) => format!("dumped as {} to {}", r.new_name, f.display()),
                    (None, true) => format!("loaded into the live cluster as {}", r.new_name),
                    (None, false) => format!("prepared as {}", r.new_name),
                };
                self.say(&format!(
                    "recovered table {} at {} from backup {}: {done}",
                    r.table, r.target, r.backup_id
                ));
                self.say(&format!(
                    "the auxiliary instance restored {} of the backup's {} and read {} of pieces; it was removed",
                    size(r.restored_bytes),
                    size(r.backup_bytes),
                    size(r.read_bytes)
                ));
                self.say(&format!(
                    "bytes: restored {}, read {}, backup {}",
                    r.restored_bytes, r.read_bytes, r.backup_bytes
                ));
            }
            Outcome::Drilled(r) => crate::drill_cmd::print_drill(self.g, &r),
            Outcome::Duplicated(r) => crate::drill_cmd::print_duplicate(self.g, &r),
            Outcome::Restored { report: r, target } => {
                self.say(&format!(
                    "restored backup {} (tag {}) to {}: {} files, {} in {:.1}s",
                    r.backup_id,
                    r.tag,
                    r.to.display(),
                    r.files,
                    size(r.bytes),
                    r.elapsed.as_secs_f64()
                ));
                self.say(&format!(
                    "recovery target: {target}; settings written to postgresql.auto.conf:"
                ));
                for s in &r.recovery_settings {
                    self.say(&format!("  {s}"));
                }
                self.say("start PostgreSQL on it to recover and open it (pg_ctl -D DIR start)");
            }
            Outcome::ValidatedDatabase { pgdata, report: r } => {
                if let Some(a) = &r.io {
                    self.say(&format!(
                        "read {} in {:.2}s ({:.1} MB/s, i/o mode {}, {} reads: {} ready, {} short waits, {} long waits)",
                        size(a.bytes),
                        (a.close_time - a.open_time) as f64 / 1e6,
                        a.effective_bytes_per_second().unwrap_or(0) as f64 / 1e6,
                        a.io_mode,
                        a.io_count,
                        a.ready,
                        a.short_waits,
                        a.long_waits
                    ));
                }
                self.say(&format!(
                    "validated {}: {} files ({} relation files, {} pages, {}), data checksums {}",
                    pgdata.display(),
                    r.files,
                    r.relation_files,
                    r.pages,
                    size(r.bytes),
                    if r.checksums_enabled { "on" } else { "off" }
                ));
                for l in r.corrupt.lines() {
                    eprintln!("recman: corrupt block: {l}");
                }
                if r.corrupt.blocks.is_empty() {
                    self.say("no corrupt blocks found");
                }
            }
            Outcome::RestorePlan { plan, json } => {
                // The plan is the command's answer: printed even with --quiet.
                if json {
                    match serde_json::to_string_pretty(&plan) {
                        Ok(t) => println!("{t}"),
                        Err(e) => eprintln!("recman: cannot print the plan as JSON: {e}"),
                    }
                } else {
                    crate::restore_cmd::print_plan(&plan);
                }
            }
            Outcome::RestoreValidated { report, json } => {
                if json {
                    match serde_json::to_string_pretty(&report) {
                        Ok(t) => println!("{t}"),
                        Err(e) => eprintln!("recman: cannot print the validation as JSON: {e}"),
                    }
                } else {
                    crate::restore_cmd::print_validation(self.g, &report);
                }
            }
            Outcome::Configured(c) => crate::catalog_cmds::settings::say_configured(self.g.quiet, c),
            Outcome::Shown(s) => crate::catalog_cmds::settings::show(&s),
            Outcome::Maint(m) => crate::catalog_cmds::maint::print(m),
            Outcome::Repo(r) => crate::key_cmds::say(self.g, r),
            Outcome::List(l) => crate::list::print(l),
            Outcome::Tuning(t) => crate::tune_cmds::print(t),
            Outcome::Metrics(m) => crate::metrics::print(m),
            Outcome::Failures(f) => crate::failure_cmd::print(f),
            Outcome::Slo { rows, json } => crate::failure_cmd::print_slo(&rows, json),
            Outcome::Costs { rows, json } => crate::report_costs::print(&rows, json),
            Outcome::Schema { report, json } => crate::report_schema::report_schema(&report, json),
            Outcome::Unrecoverable { rows, json } => {
                crate::report_schema::report_unrecoverable(&rows, json)
            }
            Outcome::ValidatedBackup(r) => {
                self.say(&format!(
                    "validated backup {} (tag {}): {} pieces, {} files, {} pages, {}, {} wal segments",
                    r.backup_id,
                    r.tag,
                    r.pieces,
                    r.files,
                    r.pages,
                    size(r.bytes),
                    r.wal_segments
                ));
                for l in r.corrupt.lines() {
                    eprintln!("recman: corrupt block: {l}");
                }
                if r.corrupt.blocks.is_empty() {
                    self.say("backup is intact");
                }
            }
        }
    }
}
