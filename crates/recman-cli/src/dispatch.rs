//! How the layers below the dispatcher run a whole command. The dispatcher
//! (`commands::execute`) hands itself down as an [`Execute`], so that a script's statements,
//! REPAIR FAILURE's script and the commands run on each repository of the list behave and
//! print exactly as a subcommand does, without importing the module that imports them.

use crate::cli::Global;
use recman_command::Command;
use std::process::ExitCode;

/// Runs one command value with the given global options, as `recman SUBCOMMAND` does.
pub type Execute = fn(&Global, Command) -> anyhow::Result<ExitCode>;
