//! The environment the shared executor reads from the command line: the repository and its
//! context, the config file's settings, confirmation, the progress bar, and the executable
//! and options a restored cluster's restore_command calls.

use crate::cli::Global;
use crate::progress::Bar;
use recman_command::EnvError;
use recman_command::model::{Context, Immutable, Progress, Repository, Through, TlsFiles};
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

    fn tls(&self) -> Option<TlsFiles> {
        crate::fleet_args::tls_files(self.g).ok().flatten()
    }

    fn database(&self) -> Option<String> {
        self.g.db.clone()
    }

    fn create_repository(&self) -> Result<Repository, EnvError> {
        Ok(crate::open::create_repo(self.g)?)
    }

    fn create_immutable_repository(&self, spec: Immutable) -> Result<Repository, EnvError> {
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
            RepoSpec::Disk(root) => crate::open::open_recreating_catalog(&root)?,
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
    fn restore_through(&self, ctx: &Context) -> Result<Option<Through>, EnvError> {
        // A database registered with --agent is restored on its host by default: that is
        // where it lives. `--agent local` restores on this host anyway.
        let url = match self.g.agent.as_deref() {
            Some(crate::fleet_client::LOCAL_AGENT) => return Ok(None),
            Some(url) => url.to_string(),
            None => match recman_command::fleet::db_agent(ctx)? {
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
