//! [`Env`]: what a command needs from the front end that runs it (the repository, the
//! connection, the config file's settings, confirmation, progress display).

use crate::command::BackupDatabase;
use crate::error::{EnvError, ExecError};
use crate::options::ResolvedBackup;
use crate::settings;
use recman_catalog::{DbRecord, Repository};
use recman_engine::{Context, EngineError, Progress};
use recman_format::Compression;
use std::path::PathBuf;

/// What the front end provides: the repository and the database a command is for, the
/// connection, the config file's layer of the settings, the user's answers and the progress
/// display.
///
/// The contract: a method that cannot give what it is asked for returns an [`EnvError`] whose
/// text says why; the command passes it on unchanged (as `ExecError::Env`). Nothing here
/// prints. The provided methods suit a front end with no config file and no user to ask: no
/// settings of its own, `confirm` only with `noprompt`, no repository created.
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
        Ok(settings::resolve_backup(repo, &file, b)?)
    }
    /// Compression and FILESPERSET of an archived-log backup, by the same precedence.
    fn resolve_archivelog(
        &self,
        compress: Option<&str>,
        filesperset: Option<u32>,
    ) -> Result<(Compression, u32), EnvError> {
        let repo = self.repository()?;
        let file = self.config_file_settings()?;
        let flags = settings::BackupFlags {
            filesperset,
            compress,
            ..Default::default()
        };
        let d = settings::backup_defaults(&repo, &file, flags)?;
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

/// The databases of `repo` a report covers: the one the front end names, or all.
pub(crate) fn reported_databases(
    repo: &Repository,
    e: &dyn Env,
) -> Result<Vec<DbRecord>, ExecError> {
    let only = e.database();
    Ok(repo
        .catalog()
        .databases()
        .map_err(EngineError::from)?
        .into_iter()
        .filter(|d| only.as_ref().is_none_or(|n| *n == d.name))
        .collect())
}
