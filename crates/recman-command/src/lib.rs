//! recman's command model: one typed value per command, with its options and their defaults
//! written out, shared by both front ends. The CLI converts its clap parse into a [`Command`];
//! the RMAN-style language lowers its statements straight into one. Neither front end knows
//! the other's syntax, and nothing here knows clap.
//!
//! [`Command::check`] applies the documented range of every option, so a value that comes
//! from a script gets the same refusal as one typed on the command line. [`precedence`] holds
//! the order in which a setting's value is taken (flag > environment > config file > catalog >
//! default) and the table of the catalog's settings.

mod backup;
mod blocks;
mod catalog;
mod check;
mod clock;
mod command;
pub mod configure;
pub mod costs;
mod delete;
mod drill;
mod env;
mod error;
pub mod execute;
pub mod failures;
pub mod fleet;
pub mod fleet_page;
pub mod listing;
pub mod maint;
pub mod metrics;
pub mod model;
pub mod open;
pub mod option_table;
pub mod options;
mod outcome;
pub mod plot;
pub mod precedence;
pub mod progress;
mod records;
pub mod repo_cmds;
pub mod repo_list;
pub mod report_io;
mod restore;
mod rules;
mod say;
pub mod schema;
pub mod settings;
pub mod signals;
pub mod slo;
pub mod spelling;
pub mod standby_hold;
pub mod target_sql;
pub mod tuning;
mod tuning_start;
mod validate;
pub mod wal;

pub use catalog::*;
pub use check::{CheckError, Range, check_count, check_name, check_size, human, ranges};
pub use command::*;
pub use drill::{drill_need, pgdata_in};
pub use env::Env;
pub use error::{EnvError, ExecError};
pub use execute::execute;
pub use outcome::{Executed, Outcome, Printer};
pub use say::Say;
