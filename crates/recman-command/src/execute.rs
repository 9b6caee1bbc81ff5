//! The interpreter both front ends share: [`execute`] runs a [`Command`] against the engine
//! and hands each result to the front end's [`Printer`] as a typed [`Outcome`], in the order
//! the work happens (PLUS ARCHIVELOG reports its archived-log backups around the database
//! backup). What only a front end knows — the configuration file, the catalog's settings as
//! precedence layers, the progress display, the executable that restore_command calls —
//! comes through [`Env`].
//!
//! CONFIGURE and SHOW ([`crate::configure`]), REPORT OBSOLETE / NEED BACKUP, DELETE,
//! CROSSCHECK and CATALOG ([`crate::maint`]), CREATE CATALOG and KEY ([`crate::repo_cmds`]),
//! LIST BACKUP / ARCHIVELOG / INCARNATION / COPY ([`crate::listing`]), CALIBRATE, ADVISE,
//! LIST CALIBRATION and LIST DRILL ([`crate::tuning`]), METRICS ([`crate::metrics`]) and
//! REPORT SCHEMA / UNRECOVERABLE ([`crate::schema`]) run here too. The commands still left to
//! the CLI get [`Executed::FrontEnd`] back: REPORT IO (its facts come from
//! [`crate::report_io::gather`]; the CLI writes its plot files), the WAL commands PostgreSQL
//! calls, and what only a front end has (RUN, COMPLETIONS, MAN).

use crate::ReportWhat;
use crate::command::*;
use crate::options::{self, OptionError, ResolvedBackup};
use recman_catalog::{BackupRecord, DbRecord, Repository};
use recman_engine::{
    ArchivelogOptions, ArchivelogReport, BackupReport, Context, CopyReport, EngineError, Progress,
    RestorePlan, RestoreReport, RestoreValidateReport, ValidateBackupReport,
    ValidateDatabaseReport,
};
use recman_format::Compression;
use std::path::PathBuf;
use std::time::Duration;

/// An error of the front end's environment (reading the config file, opening the catalog).
pub type EnvError = Box<dyn std::error::Error + Send + Sync>;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Engine(Box<EngineError>),
    #[error(transparent)]
    Options(#[from] OptionError),
    #[error(transparent)]
    Env(EnvError),
    #[error("--json prints a plan or a validation; hint: add --preview or --validate")]
    JsonWithoutPlan,
    /// A drill failed; the printer has shown why and the catalog has it.
    #[error("drill failed: {0}; hint: `recman list drill` shows every drill and its checks")]
    DrillFailed(String),
    #[error("validate database needs --pgdata DIR (or RECMAN_PGDATA)")]
    NeedsPgdata,
    /// A validation found damage; the printer has listed each block.
    /// The newest calibration's stored body does not parse.
    #[error("calibration {id} in the catalog is not readable; hint: run `recman calibrate` again")]
    BadCalibration {
        id: i64,
        #[source]
        source: serde_json::Error,
    },
    /// CATALOG START WITH could not catalog some files; the printer has shown each.
    #[error(
        "{0} file(s) could not be cataloged; hint: see the warnings above, then run crosscheck"
    )]
    NotCataloged(usize),
    /// `check` found failures a scheduler should see; the printer has listed them.
    #[error(
        "{count} failure(s) of priority HIGH or CRITICAL are open (the worst {worst}); hint: `recman failure advise` gives their repairs"
    )]
    FailuresOpen { count: usize, worst: String },
    #[error("cannot write the repair script {}: {source}; hint: give another place with --script FILE", path.display())]
    ScriptWrite {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{count} corrupt block(s) found in {place}; hint: {hint}")]
    Corrupt {
        count: usize,
        place: String,
        hint: &'static str,
    },
}

impl From<EngineError> for ExecError {
    fn from(e: EngineError) -> Self {
        ExecError::Engine(Box::new(e))
    }
}

/// What the front end provides.
pub trait Env {
    /// The repository, with the registered database the command is for.
    fn context(&self) -> Result<Context, EnvError>;
    /// The directory of a disk repository, without opening it (its catalog may be missing:
    /// RESTORE CONTROLFILE puts it back). None: no repository, or a remote one.
    fn repository_root(&self) -> Option<PathBuf> {
        None
    }
    fn repository(&self) -> Result<Repository, EnvError>;
    /// --pgdata and --target (or their environment and config-file values).
    fn pgdata(&self) -> Option<PathBuf>;
    fn target(&self) -> Option<String>;
    /// The fleet transport's certificate, key and CA (--tls-cert/--tls-key/--tls-ca or the
    /// config file's [tls]), for a database's agent.
    fn tls(&self) -> Option<recman_remote::TlsFiles> {
        None
    }
    /// A backup's settings by precedence (flag > environment > config file > catalog >
    /// default), with its device, channels and BLKSIZE (see [`crate::precedence`]).
    fn resolve_backup(
        &self,
        repo: &Repository,
        b: &BackupDatabase,
    ) -> Result<ResolvedBackup, EnvError> {
        let file = self.config_file_settings()?;
        Ok(crate::settings::resolve_backup(repo, &file, b)?)
    }
    /// Compression and FILESPERSET of an archived-log backup, by the same precedence.
    fn resolve_archivelog(
        &self,
        compress: Option<&str>,
        filesperset: Option<u32>,
    ) -> Result<(Compression, u32), EnvError> {
        let repo = self.repository()?;
        let file = self.config_file_settings()?;
        let flags = crate::settings::BackupFlags {
            filesperset,
            compress,
            ..Default::default()
        };
        let d = crate::settings::backup_defaults(&repo, &file, flags)?;
        Ok((d.compression, d.filesperset))
    }
    /// The database the front end's options name (--db), if any.
    fn database(&self) -> Option<String> {
        None
    }
    /// A new repository with its catalog, where the front end's options say (CREATE CATALOG).
    fn create_repository(&self) -> Result<Repository, EnvError> {
        Err("this front end cannot create a repository".into())
    }
    /// A new immutable repository (CREATE CATALOG --immutable).
    fn create_immutable_repository(
        &self,
        _spec: recman_catalog::repo::Immutable,
    ) -> Result<Repository, EnvError> {
        Err("this front end cannot create an immutable repository".into())
    }
    /// The config file's layer of the settings' precedence: values by setting name
    /// (`channels`, `retention-policy`, ...), as written there.
    fn config_file_settings(&self) -> Result<Vec<(&'static str, String)>, EnvError> {
        Ok(Vec::new())
    }
    /// Whether to go on with a deletion the printer has just listed: `noprompt` says yes;
    /// else the front end asks the user, or refuses when it cannot ask.
    fn confirm(&self, noprompt: bool, what: &str) -> Result<bool, EnvError> {
        let _ = what;
        Ok(noprompt)
    }
    /// The repository for CATALOG START WITH, with a new catalog when its own is missing or
    /// damaged (true: it was made now).
    fn repository_for_rebuild(&self) -> Result<(Repository, bool), EnvError> {
        Ok((self.repository()?, false))
    }
    /// The directory a relative path is taken from, the recman executable restore_command
    /// calls and the global options it passes on.
    fn restore_invocation(
        &self,
        repo: &Repository,
    ) -> Result<(PathBuf, PathBuf, Vec<String>), EnvError>;
    fn progress(&self) -> &dyn Progress;
    /// Where a restore of `ctx`'s database writes: None for this host; the database host's
    /// agent for a cluster registered with one (docs/fleet.md).
    fn restore_through(&self, _ctx: &Context) -> Result<Option<recman_engine::Through>, EnvError> {
        Ok(None)
    }
}

/// One result of a command, in the order they happen.
#[derive(Debug)]
pub enum Outcome {
    BackupChanged {
        ids: Vec<String>,
    },
    RestorePointCreated {
        name: String,
        lsn: String,
    },
    Registered {
        db: DbRecord,
        repository: String,
    },
    /// PLUS ARCHIVELOG's first step: the current WAL segment was archived.
    ArchivedCurrent {
        upto: String,
    },
    ArchivelogBackedUp(ArchivelogReport),
    BackedUp {
        report: BackupReport,
        maxcorrupt: u32,
    },
    /// Second-tier copies (BACKUP BACKUPSET, BACKUP RECOVERY AREA) on `device`; `with_wal`
    /// when the archived WAL was copied too.
    Copied {
        report: CopyReport,
        device: String,
        with_wal: bool,
    },
    SyntheticFull(BackupRecord),
    Restored {
        report: RestoreReport,
        target: String,
    },
    /// A drill ran (passed or failed) and was recorded.
    Drilled(Box<recman_engine::drill::DrillReport>),
    /// DUPLICATE DATABASE wrote a standby or a clone.
    Duplicated(Box<recman_engine::duplicate::DuplicateReport>),
    /// RESTORE … PREVIEW: what a restore would read; nothing was written.
    RestorePlan {
        plan: Box<RestorePlan>,
        json: bool,
    },
    /// RESTORE … VALIDATE: everything the plan names was read and verified.
    RestoreValidated {
        report: RestoreValidateReport,
        json: bool,
    },
    ValidatedBackup(ValidateBackupReport),
    ValidatedDatabase {
        pgdata: PathBuf,
        report: ValidateDatabaseReport,
    },
    CopyRecovered {
        tag: String,
        applied: Vec<String>,
    },
    TableRecovered(Box<recman_engine::recover_table::RecoverTableReport>),
    /// RECOVER … BLOCK / CORRUPTION LIST: the blocks written back.
    BlocksRecovered(recman_engine::blockrecover::BlockRecoverReport),
    ControlfileBackedUp(recman_engine::controlfile::ControlfileReport),
    /// The catalog was restored into `repository`; the one it replaced, if any, is `aside`.
    ControlfileRestored {
        repository: PathBuf,
        aside: Option<PathBuf>,
    },
    /// One change CONFIGURE stored.
    Configured(crate::configure::ConfigChange),
    /// SHOW ALL.
    Shown(crate::configure::ShownSettings),
    /// REPORT OBSOLETE / NEED BACKUP, DELETE, CROSSCHECK, CATALOG.
    Maint(crate::maint::MaintOutcome),
    /// CREATE CATALOG, KEY.
    Repo(crate::repo_cmds::RepoOutcome),
    /// LIST BACKUP / ARCHIVELOG / INCARNATION / COPY.
    List(crate::listing::ListOutcome),
    /// CALIBRATE, ADVISE, LIST CALIBRATION, LIST DRILL.
    Tuning(crate::tuning::TuningOutcome),
    /// REPORT SCHEMA.
    Schema {
        report: crate::schema::SchemaReport,
        json: bool,
    },
    /// REPORT UNRECOVERABLE: the unlogged relations.
    Unrecoverable {
        rows: Vec<crate::schema::Unlogged>,
        json: bool,
    },
    /// METRICS: every gauge, in the order read.
    Metrics(Vec<crate::metrics::Gauge>),
    /// CHECK, LIST FAILURE, ADVISE FAILURE.
    Failures(crate::failures::FailureOutcome),
    /// REPORT SLO: each database's measured RPO and RTO beside the targets.
    Slo {
        rows: Vec<crate::slo::SloRow>,
        json: bool,
    },
    /// REPORT COSTS: requests and bytes per backup and per day of archiving.
    Costs {
        rows: Vec<crate::costs::CostRow>,
        json: bool,
    },
}

/// How the front end shows outcomes.
pub trait Printer {
    fn outcome(&mut self, o: Outcome);
}

/// Whether `execute` ran the command or leaves it to the front end.
#[derive(Debug, PartialEq)]
pub enum Executed {
    Done,
    FrontEnd(Box<Command>),
}

pub(crate) fn env<T>(r: Result<T, EnvError>) -> Result<T, ExecError> {
    r.map_err(ExecError::Env)
}

/// The databases of `repo` a report covers: the one the front end names, or all.
pub(crate) fn reported_databases(
    repo: &recman_catalog::Repository,
    e: &dyn Env,
) -> Result<Vec<recman_catalog::DbRecord>, ExecError> {
    let only = e.database();
    Ok(repo
        .catalog()
        .databases()
        .map_err(EngineError::from)?
        .into_iter()
        .filter(|d| only.as_ref().is_none_or(|n| *n == d.name))
        .collect())
}

/// Runs `c` (already checked: see [`Command::check`]).
pub fn execute(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::ChangeBackup(c) => {
            if !(c.keep_forever
                || c.keep_until.is_some()
                || c.nokeep
                || c.unavailable
                || c.available)
            {
                return Err(EngineError::Invalid(format!(
                    "change backup {}: nothing to change; hint: add --keep-forever, --keep-until TIME, --nokeep, --unavailable or --available",
                    c.which
                ))
                .into());
            }
            // Parsed before anything is looked up, so a bad time changes no backup.
            let keep_until = options::until_micros(c.keep_until.as_deref())?;
            let ctx = env(e.context())?;
            let ids: Vec<String> = ctx
                .repo
                .catalog()
                .backups(ctx.db.id)
                .map_err(EngineError::from)?
                .into_iter()
                .filter(|b| b.id == c.which || b.tag.eq_ignore_ascii_case(&c.which))
                .map(|b| b.id)
                .collect();
            if ids.is_empty() {
                return Err(EngineError::NotFound(format!(
                    "no backup has id or tag {}; hint: `recman list backup` shows them",
                    c.which
                ))
                .into());
            }
            for id in &ids {
                use recman_engine::keep;
                if c.keep_forever {
                    keep::set_keep(&ctx.repo, id, None)?;
                }
                if keep_until.is_some() {
                    keep::set_keep(&ctx.repo, id, keep_until)?;
                }
                if c.nokeep {
                    keep::clear_keep(&ctx.repo, id)?;
                }
                if c.unavailable || c.available {
                    keep::set_unavailable(&ctx.repo, id, c.unavailable)?;
                }
            }
            p.outcome(Outcome::BackupChanged { ids });
        }
        Command::CreateRestorePoint { name } => {
            let ctx = env(e.context())?;
            let lsn = recman_engine::restore_point::create_restore_point(&ctx, &name)?;
            p.outcome(Outcome::RestorePointCreated {
                name,
                lsn: lsn.to_string(),
            });
        }
        Command::RegisterDatabase { name, agent } => {
            let repo = env(e.repository())?;
            let db = match agent {
                Some(url) => recman_engine::register_database_agent(
                    &repo,
                    &name,
                    e.target().as_deref(),
                    &url,
                    e.tls().as_ref(),
                )?,
                None => recman_engine::register_database(
                    &repo,
                    &name,
                    e.pgdata().as_deref(),
                    e.target().as_deref(),
                )?,
            };
            p.outcome(Outcome::Registered {
                db,
                repository: repo.location().to_string(),
            });
        }
        Command::BackupDatabase(b) => backup_database(&b, e, p)?,
        Command::BackupControlfile { format } => {
            let ctx = env(e.context())?;
            let format = crate::options::piece_format(format.as_deref())?;
            let r = recman_engine::controlfile::backup_controlfile(
                &ctx.repo,
                &ctx.db.name,
                ctx.db.system_identifier,
                e.pgdata().as_deref(),
                format.as_ref(),
            )?;
            p.outcome(Outcome::ControlfileBackedUp(r));
        }
        Command::RestoreControlfile { from } => {
            let Some(root) = e.repository_root() else {
                return Err(ExecError::Env(
                    "restore controlfile needs --repo DIR (a disk repository); hint: recman --repo DIR restore controlfile --from PIECE".into(),
                ));
            };
            let aside = recman_engine::controlfile::restore_controlfile(&from, &root)?;
            p.outcome(Outcome::ControlfileRestored {
                repository: root,
                aside,
            });
        }
        Command::BackupArchivelog(a) => {
            let ctx = env(e.context())?;
            let (compression, filesperset) =
                env(e.resolve_archivelog(a.compress.as_deref(), a.filesperset))?;
            let opts = ArchivelogOptions {
                compression,
                tag: a.tag,
                not_backed_up: a.not_backed_up,
                delete_input: a.delete_input,
                filesperset,
                format: crate::options::piece_format(a.format.as_deref())?,
            };
            let r = recman_engine::backup_archivelog(&ctx.repo, &ctx.db, &opts, e.progress())?;
            p.outcome(Outcome::ArchivelogBackedUp(r));
        }
        Command::BackupBackupset { which, device_type } => {
            let ctx = env(e.context())?;
            let device = device_type.to_lowercase();
            let only = (!which.eq_ignore_ascii_case("all")).then_some(which.as_str());
            let report = recman_engine::backup_backupsets(&ctx, only, &device, e.progress())?;
            p.outcome(Outcome::Copied {
                report,
                device,
                with_wal: false,
            });
        }
        Command::BackupRecoveryArea { device_type } => {
            let ctx = env(e.context())?;
            let device = device_type.to_lowercase();
            let report = recman_engine::backup_recovery_area(&ctx, &device, e.progress())?;
            p.outcome(Outcome::Copied {
                report,
                device,
                with_wal: true,
            });
        }
        Command::SyntheticFull {
            from,
            tag,
            compress,
        } => {
            let ctx = env(e.context())?;
            let opts = recman_engine::SyntheticOptions {
                from,
                tag,
                compression: options::compression(&compress)?,
            };
            let b = recman_engine::synthetic_full(&ctx, &opts, e.progress())?;
            p.outcome(Outcome::SyntheticFull(b));
        }
        Command::RecoverTable(t) => {
            let ctx = env(e.context())?;
            let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
            let mut r = RestoreDatabase::into(None);
            r.until_time = t.until_time.clone();
            r.until_lsn = t.until_lsn.clone();
            r.until_xid = t.until_xid.clone();
            r.channels = t.channels.max(1);
            let restore = r.options(&cwd, exe, args)?;
            let (schema, table) = recman_engine::recover_table::split_name(&t.table);
            let auxiliary_dir = match &t.auxiliary_dir {
                Some(d) => options::absolute(&cwd, d),
                None => std::env::temp_dir().join(format!("recman-aux-{}", std::process::id())),
            };
            let opts = recman_engine::recover_table::RecoverTableOptions {
                restore,
                schema,
                table,
                database: t.database.clone().unwrap_or_else(|| "postgres".into()),
                remap: t.remap_table.clone(),
                dump: t.dump.as_deref().map(|d| options::absolute(&cwd, d)),
                auxiliary_dir,
            };
            let report = recman_engine::recover_table::recover_table(&ctx, &opts, e.progress())?;
            p.outcome(Outcome::TableRecovered(Box::new(report)));
        }
        Command::RecoverCopy { tag, until_time } => {
            let ctx = env(e.context())?;
            let until = options::until_micros(until_time.as_deref())?;
            let applied = recman_engine::copy::recover_copy(&ctx, &tag, until, e.progress())?;
            p.outcome(Outcome::CopyRecovered { tag, applied });
        }
        Command::RecoverBlock {
            blocks,
            corruption_list,
            auxiliary_dir,
        } => crate::blocks::recover_block(&blocks, corruption_list, auxiliary_dir, e, p)?,
        Command::RestoreDatabase(r) => {
            if r.json && !r.preview && !r.validate {
                return Err(ExecError::JsonWithoutPlan);
            }
            let ctx = env(e.context())?;
            let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
            let mut opts = r.options(&cwd, exe, args)?;
            if let Some(name) = &r.until_restore_point {
                let lsn = recman_engine::restore_point::restore_point_lsn(&ctx, name)?;
                opts.target = recman_engine::RecoveryTarget::Name {
                    name: name.clone(),
                    lsn,
                };
            }
            if r.preview {
                let plan = recman_engine::plan_restore(&ctx, &opts)?;
                p.outcome(Outcome::RestorePlan {
                    plan: Box::new(plan),
                    json: r.json,
                });
                return Ok(Executed::Done);
            }
            if r.validate {
                let (_, report) = recman_engine::validate_restore(&ctx, &opts, e.progress())?;
                p.outcome(Outcome::RestoreValidated {
                    report,
                    json: r.json,
                });
                return Ok(Executed::Done);
            }
            let selection = if r.include_db.is_empty() {
                recman_engine::Selection::Whole
            } else {
                recman_engine::Selection::Databases(r.include_db.clone())
            };
            let through =
                env(e.restore_through(&ctx))?.unwrap_or_else(recman_engine::Through::local);
            let (report, partial) = recman_engine::restore_database_on(
                &ctx,
                &opts,
                &selection,
                &through,
                e.progress(),
            )?;
            if !partial.excluded.is_empty() {
                let names: Vec<String> = partial
                    .excluded
                    .iter()
                    .map(|(n, oid)| format!("{n} (oid {oid})"))
                    .collect();
                e.progress().notice(&format!(
                    "left out database(s) {}: their directories were not restored, so PostgreSQL refuses connections to them; drop them (DROP DATABASE) once the cluster has recovered, then remove ignore_invalid_pages = on from postgresql.auto.conf (it lets recovery pass their missing pages, and would hide real damage later)",
                    names.join(", ")
                ));
            }
            p.outcome(Outcome::Restored {
                report,
                target: opts.target.to_string(),
            });
        }
        Command::Drill(d) => {
            let ctx = env(e.context())?;
            let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
            let opts = recman_engine::drill::DrillOptions {
                restore: d.restore.options(&cwd, exe, args)?,
                dir: d.dir.as_deref().map(|p| options::absolute(&cwd, p)),
                checks: d.check_sql.clone(),
                keep: d.keep,
                recovery_timeout: recman_engine::auxiliary::DEFAULT_RECOVERY_TIMEOUT,
            };
            let report = recman_engine::drill::drill(&ctx, &opts, e.progress())?;
            crate::failures::learn(&ctx, e, &[crate::failures::kind::Kind::DrillFailed]);
            let failed = report.record.error.clone();
            p.outcome(Outcome::Drilled(Box::new(report)));
            if let Some(why) = failed {
                return Err(ExecError::DrillFailed(why));
            }
        }
        Command::DuplicateDatabase(d) => {
            let ctx = env(e.context())?;
            let (cwd, exe, args) = env(e.restore_invocation(&ctx.repo))?;
            if d.restore.to.is_none() {
                return Err(EngineError::Invalid(
                    "duplicate database needs the new cluster's directory; hint: add --to DIR"
                        .into(),
                )
                .into());
            }
            let standby = if d.for_standby {
                Some(recman_engine::duplicate::StandbyOptions {
                    primary_conninfo: d.primary_conninfo.clone().unwrap_or_default(),
                    slot: d.slot.clone(),
                })
            } else {
                if d.primary_conninfo.is_some() || d.slot.is_some() {
                    return Err(EngineError::Invalid(
                        "--primary-conninfo and --slot configure a standby; hint: add --for-standby".into(),
                    )
                    .into());
                }
                None
            };
            let opts = recman_engine::duplicate::DuplicateOptions {
                restore: d.restore.options(&cwd, exe, args)?,
                standby,
                port: d.port,
            };
            let report = recman_engine::duplicate::duplicate(&ctx, &opts, e.progress())?;
            p.outcome(Outcome::Duplicated(Box::new(report)));
        }
        Command::ValidateBackup { which, channels } => {
            let ctx = env(e.context())?;
            let channels = options::validate_channels(channels);
            let r = recman_engine::validate_backup(&ctx, which.as_deref(), channels, e.progress())?;
            let (count, place) = (r.corrupt.blocks.len(), format!("backup {}", r.backup_id));
            p.outcome(Outcome::ValidatedBackup(r));
            if count > 0 {
                return Err(ExecError::Corrupt {
                    count,
                    place,
                    hint: "take a new backup and keep this one out of restores",
                });
            }
        }
        Command::ValidateDatabase {
            channels,
            maxopenfiles,
            io,
            check_logical,
        } => {
            // A database registered with an agent is read through it (issue 19).
            let agent = match e.context() {
                Ok(ctx) => recman_engine::source::registered_agent(&ctx)?,
                Err(_) => None,
            };
            let pgdata = match &agent {
                Some(a) => PathBuf::from(a.describe()),
                None => e.pgdata().ok_or(ExecError::NeedsPgdata)?,
            };
            // Without --target, libpq's defaults apply when PGHOST says where the server is;
            // else the files are checked without asking the server.
            let conninfo = e
                .target()
                .or_else(|| std::env::var("PGHOST").ok().map(|_| String::new()));
            let local = recman_engine::source::LocalSource::new(&pgdata);
            let report = recman_engine::validate_source(
                agent.as_deref().unwrap_or(&local),
                conninfo.as_deref(),
                &io.settings(None)?,
                recman_engine::ValidateRead {
                    channels: channels.unwrap_or(1),
                    maxopenfiles,
                },
                check_logical,
                e.progress(),
            )?;
            crate::blocks::record_validation(e, &pgdata, &report);
            let count = report.corrupt.blocks.len();
            let place = pgdata.display().to_string();
            p.outcome(Outcome::ValidatedDatabase { pgdata, report });
            if count > 0 {
                return Err(ExecError::Corrupt {
                    count,
                    place,
                    hint: "the files listed above need repair (restore, or REINDEX for an index)",
                });
            }
        }
        Command::Configure(what) => crate::configure::configure(what, e, p)?,
        Command::Show(what) => crate::configure::show(what, e, p)?,
        Command::Report(ReportWhat::Schema { json }) => crate::schema::report_schema(json, e, p)?,
        Command::Report(ReportWhat::Unrecoverable { json }) => {
            crate::schema::report_unrecoverable(json, e, p)?
        }
        Command::Report(ReportWhat::Slo { json }) => crate::slo::report_slo(json, e, p)?,
        Command::Report(ReportWhat::Costs { json }) => crate::costs::report_costs(json, e, p)?,
        Command::Report(what @ (ReportWhat::Obsolete { .. } | ReportWhat::NeedBackup { .. })) => {
            crate::maint::report(what, e, p)?
        }
        Command::Delete(what) => crate::delete::delete(what, e, p)?,
        Command::Crosscheck(what) => crate::maint::crosscheck(what, e, p)?,
        Command::Catalog(what) => crate::maint::catalog(what, e, p)?,
        Command::CreateCatalog { encrypt, immutable } => {
            crate::repo_cmds::create_catalog(encrypt, immutable, e, p)?
        }
        Command::Key(what) => crate::repo_cmds::key(what, e, p)?,
        Command::ListBackup {
            json,
            summary,
            by_file,
        } => {
            use crate::listing::BackupForm;
            let form = if json {
                BackupForm::Json
            } else if summary {
                BackupForm::Summary
            } else if by_file {
                BackupForm::ByFile
            } else {
                BackupForm::Detailed
            };
            crate::listing::list_backup(form, e, p)?
        }
        Command::ListArchivelog { json } => crate::listing::list_archivelog(json, e, p)?,
        Command::ListIncarnation { json } => crate::listing::list_incarnation(json, e, p)?,
        Command::ListCopy { json } => crate::listing::list_copy(json, e, p)?,
        Command::Calibrate { json } => crate::tuning::calibrate(json, e, p)?,
        Command::Advise {
            window,
            json,
            apply,
        } => crate::tuning::advise(window.as_deref(), json, apply, e, p)?,
        Command::ListCalibration { json } => crate::tuning::list_calibration(json, e, p)?,
        Command::ListDrill { json } => crate::tuning::list_drill(json, e, p)?,
        Command::Metrics => crate::metrics::metrics(e, p)?,
        Command::Check { json } => crate::failures::check(json, e, p)?,
        Command::Failure(FailureWhat::List(l)) => crate::failures::list(&l, e, p)?,
        Command::Failure(FailureWhat::Advise { ids, script, json }) => {
            crate::failures::advise(&ids, script.as_deref(), json, e, p)?
        }
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// BACKUP DATABASE, with PLUS ARCHIVELOG's steps around it: archive the current WAL and back
/// up the archived WAL not yet in a backup set, then the database, then the WAL generated
/// during it.
fn backup_database(b: &BackupDatabase, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    // Before the repository is opened: opening it is part of what the backup costs.
    let before = recman_catalog::meter::snapshot();
    let ctx = env(e.context())?;
    let mut made = None;
    let done = backup_steps(b, e, p, &ctx, &mut made);
    // What came after the backup (its copies, PLUS ARCHIVELOG) is part of its cost too.
    if let Some(id) = made
        && let Some(w) = crate::costs::record_backup(&ctx.repo, ctx.db.id, &id, &before)
    {
        e.progress().notice(&w);
    }
    done
}

/// BACKUP DATABASE's steps; `made` gets the backup's id as soon as it exists.
fn backup_steps(
    b: &BackupDatabase,
    e: &dyn Env,
    p: &mut dyn Printer,
    ctx: &Context,
    made: &mut Option<String>,
) -> Result<(), ExecError> {
    let plus = |p: &mut dyn Printer| -> Result<(), ExecError> {
        let (compression, filesperset) = env(e.resolve_archivelog(b.compress.as_deref(), None))?;
        let opts = ArchivelogOptions {
            compression,
            tag: b.tag.clone(),
            not_backed_up: Some(1),
            delete_input: false,
            filesperset,
            format: crate::options::piece_format(b.format.as_deref())?,
        };
        let r = recman_engine::backup_archivelog(&ctx.repo, &ctx.db, &opts, e.progress())?;
        p.outcome(Outcome::ArchivelogBackedUp(r));
        Ok(())
    };
    if b.plus_archivelog {
        let upto = recman_engine::archive_current(
            &ctx.repo,
            &ctx.db,
            ctx.conninfo.as_deref(),
            Duration::from_secs(b.archive_timeout),
        )?;
        p.outcome(Outcome::ArchivedCurrent { upto });
        plus(p)?;
    }
    // Parsed before the backup runs, so a bad time costs nothing.
    let keep_until = options::until_micros(b.keep_until.as_deref())?;
    // COPIES: the BACKUP's own, else `configure backup-copies`.
    let configured = match b.copies {
        Some(_) => None,
        None => ctx
            .repo
            .catalog()
            .config("backup_copies")
            .map_err(recman_engine::EngineError::from)?
            .and_then(|v| v.parse().ok()),
    };
    let duplex = BackupDatabase {
        copies: b.copies.or(configured),
        ..b.clone()
    }
    .duplex_targets()?;
    let mut opts = b.options(&env(e.resolve_backup(&ctx.repo, b))?)?;
    crate::tuning_start::start_from_advice(ctx, b, &mut opts, e.progress())?;
    // Incremental forever: a backup that names no level is a level 1.
    let forever = recman_engine::forever::policy(ctx)?
        .filter(|_| opts.incremental_level.is_none() && !opts.as_copy && !opts.for_recover_of_copy);
    if forever.is_some() {
        e.progress()
            .notice("incremental forever: taking a level 1 (configure incremental-forever)");
        opts.incremental_level = Some(1);
    }
    let report = recman_engine::backup_database(ctx, &opts, e.progress())?;
    *made = Some(report.record.id.clone());
    let level1 = report.record.backup_type == "LEVEL1";
    if b.keep_forever || keep_until.is_some() {
        recman_engine::keep::set_keep(&ctx.repo, &report.record.id, keep_until)?;
    }
    for d in recman_engine::duplex::duplex_backup(ctx, &report.record.id, &duplex, e.progress())? {
        e.progress().notice(&format!(
            "copy {} of backup {}: {} piece(s), {} bytes written to {}",
            d.copy, report.record.id, d.pieces, d.bytes, d.device
        ));
    }
    p.outcome(Outcome::BackedUp {
        report,
        maxcorrupt: opts.maxcorrupt,
    });
    if let Some(pol) = forever
        && level1
        && recman_engine::forever::synthetic_due(ctx, pol)?
    {
        e.progress().notice(&format!(
            "incremental forever: the newest level 0 is {} day(s) old or more: building a synthetic full from the chain",
            pol.synthetic_every_days
        ));
        let sopts = recman_engine::SyntheticOptions {
            from: None,
            tag: None,
            compression: opts.compression,
        };
        let s = recman_engine::synthetic_full(ctx, &sopts, e.progress())?;
        p.outcome(Outcome::SyntheticFull(s));
    }
    if b.plus_archivelog {
        // The database backup waited for its last segment to be archived.
        plus(p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment with no repository: every lookup fails, naming itself.
    struct NoRepo;

    impl Env for NoRepo {
        fn context(&self) -> Result<Context, EnvError> {
            Err("no repository here".into())
        }
        fn repository(&self) -> Result<Repository, EnvError> {
            Err("no repository here".into())
        }
        fn pgdata(&self) -> Option<PathBuf> {
            None
        }
        fn target(&self) -> Option<String> {
            None
        }
        fn restore_invocation(
            &self,
            _: &Repository,
        ) -> Result<(PathBuf, PathBuf, Vec<String>), EnvError> {
            unreachable!("no repository")
        }
        fn progress(&self) -> &dyn Progress {
            &recman_engine::NoProgress
        }
    }

    #[derive(Default)]
    struct Collect(Vec<String>);

    impl Printer for Collect {
        fn outcome(&mut self, o: Outcome) {
            self.0.push(format!("{o:?}"));
        }
    }

    #[test]
    fn front_end_commands_come_back_and_env_errors_pass_through() {
        let mut p = Collect::default();
        let list = Command::Man;
        assert_eq!(
            execute(list.clone(), &NoRepo, &mut p).unwrap(),
            Executed::FrontEnd(Box::new(list))
        );
        // A listing is the library's work now: it needs the repository like a backup does.
        for c in [
            Command::BackupDatabase(Box::default()),
            Command::ListCopy { json: true },
        ] {
            let e = execute(c, &NoRepo, &mut p).unwrap_err();
            assert!(
                matches!(e, ExecError::Env(_)) && e.to_string() == "no repository here",
                "{e}"
            );
        }
        assert!(p.0.is_empty(), "nothing ran, nothing to print: {:?}", p.0);
    }
}
