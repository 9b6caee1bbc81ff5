//! The backup flags made from the option table: one `--NAME` for each row marked
//! `flag_from_table`, with the row's help, range, value name and environment variable, its
//! value carried by the row's name. A new option of that kind needs no field here, in the
//! command model or in the conversion between them.

use clap::{Arg, ArgMatches, Args, FromArgMatches};
use recman_command::option_table::{Kind, OptionDef, backup_flags};
use std::collections::BTreeMap;

/// The values given, by row name.
#[derive(Debug, Clone, Default)]
pub struct TableArgs(pub BTreeMap<&'static str, String>);

fn arg(d: &'static OptionDef) -> Arg {
    let a = Arg::new(d.name).long(d.name).help(d.help);
    let a = match d.kind {
        Kind::Size(_) => a.value_name("SIZE").value_parser(crate::input::size_of(d)),
        Kind::Count(_) => a.value_parser(crate::input::count_of::<u64>(d)),
        _ => a,
    };
    match d.env {
        Some(e) => a.env(e),
        None => a,
    }
}

impl FromArgMatches for TableArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut out = TableArgs::default();
        out.update_from_arg_matches(m)?;
        Ok(out)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for d in backup_flags() {
            let v = match d.kind {
                Kind::Count(_) => m.get_one::<u64>(d.name).map(u64::to_string),
                _ => m.get_one::<String>(d.name).cloned(),
            };
            if let Some(v) = v {
                self.0.insert(d.name, v);
            }
        }
        Ok(())
    }
}

impl Args for TableArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        backup_flags().fold(cmd, |cmd, d| cmd.arg(arg(d)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// `configure NAME VALUE` for each setting whose backup flag the table makes: one subcommand
/// per row, so a new setting of that kind needs no variant of its own.
#[derive(Debug, Clone)]
pub struct TableSetting {
    pub name: &'static str,
    pub value: String,
}

fn configurable() -> impl Iterator<Item = &'static OptionDef> {
    backup_flags().filter(|d| d.configurable())
}

impl FromArgMatches for TableSetting {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let (sub, sm) = m
            .subcommand()
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        let d = configurable()
            .find(|d| d.name == sub)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(TableSetting {
            name: d.name,
            value: sm.get_one::<String>("value").cloned().unwrap_or_default(),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Subcommand for TableSetting {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        configurable().fold(cmd, |cmd, d| {
            let about = format!(
                "Default of `backup database --{}` (RMAN's {}), `none`, or `clear`",
                d.name,
                d.rman.unwrap_or(d.name)
            );
            cmd.subcommand(
                clap::Command::new(d.name)
                    .about(about)
                    .arg(Arg::new("value").required(true)),
            )
        })
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        configurable().any(|d| d.name == name)
    }
}
