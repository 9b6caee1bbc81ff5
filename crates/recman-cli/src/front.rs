//! The CLI's side of the shared executor (`recman_command::execute`): the environment it
//! reads (config file, catalog settings, progress bar, the executable restore_command calls)
//! and how each outcome is printed.

mod env;
mod printer;

pub use env::CliEnv;
pub use printer::CliPrinter;
