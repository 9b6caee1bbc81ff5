//! recman's command model: one typed value per command, with its options and their defaults
//! written out, shared by both front ends. The CLI converts its clap parse into a [`Command`];
//! the RMAN-style language lowers its statements straight into one. Neither front end knows
//! the other's syntax, and nothing here knows clap.
//!
//! [`Command::check`] applies the documented range of every option, so a value that comes
//! from a script gets the same refusal as one typed on the command line. [`precedence`] holds
//! the order in which a setting's value is taken (flag > environment > config file > catalog >
//! default) and the table of the catalog's settings.

mod blocks;
mod catalog;
mod check;
mod command;
pub mod configure;
pub mod costs;
mod delete;
mod drill;
pub mod execute;
pub mod failures;
pub mod fleet_page;
pub mod listing;
pub mod maint;
pub mod metrics;
pub mod options;
pub mod plot;
pub mod precedence;
pub mod repo_cmds;
pub mod report_io;
mod rules;
pub mod schema;
pub mod settings;
pub mod slo;
pub mod spelling;
pub mod standby_hold;
pub mod tuning;
mod tuning_start;

pub use catalog::*;
pub use check::{CheckError, Range, check_count, check_name, check_size, human, ranges};
pub use command::*;
pub use drill::{Drill, DuplicateDatabase, drill_need};
pub use execute::{Env, EnvError, ExecError, Executed, Outcome, Printer, execute};
