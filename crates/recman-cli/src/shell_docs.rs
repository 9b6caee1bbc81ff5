//! `recman completions SHELL` and `recman man`: generated from the clap tree, so they name
//! every subcommand and option the binary has.

use anyhow::Result;
use clap::CommandFactory;

pub fn completions(shell: clap_complete::Shell) {
    let mut cmd = crate::cli::Cli::command();
    clap_complete::generate(shell, &mut cmd, "recman", &mut std::io::stdout());
}

pub fn man() -> Result<()> {
    let cmd = crate::cli::Cli::command();
    clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
    Ok(())
}
