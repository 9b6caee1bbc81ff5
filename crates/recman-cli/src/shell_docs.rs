//! `recman completions SHELL` and `recman man`: generated from the clap tree, so they name
//! every subcommand and option the binary has.

use anyhow::{Result, anyhow};
use clap::{CommandFactory, ValueEnum};

pub fn completions(shell: &str) -> Result<()> {
    let shell = clap_complete::Shell::from_str(shell, true).map_err(|_| {
        anyhow!("unknown shell {shell:?}; hint: use bash, zsh, fish, elvish or powershell")
    })?;
    let mut cmd = crate::cli::Cli::command();
    clap_complete::generate(shell, &mut cmd, "recman", &mut std::io::stdout());
    Ok(())
}

pub fn man() -> Result<()> {
    let cmd = crate::cli::Cli::command();
    clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
    Ok(())
}
