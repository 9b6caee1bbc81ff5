//! The CLI and the command model must not drift: every subcommand of the clap tree converts,
//! and every one of its options changes the converted value (an option the model has no field
//! for would be dropped by the conversion and fail here).

use super::*;
use clap::{ArgAction, CommandFactory, Parser};

/// Options that only parse alongside another one (clap's `requires`).
const COMPANIONS: &[(&str, &[&str])] = &[
    ("cumulative", &["--incremental-level", "1"]),
    ("as-copy", &["--tag", "t"]),
    ("for-recover-of-copy", &["--tag", "t"]),
    ("switch-to-copy", &["--from-copy", "c"]),
    ("partial", &["--duration", "0:01"]),
    ("minimize-time", &["--duration", "0:01"]),
    ("minimize-load", &["--duration", "0:01"]),
    ("standby-agent", &["--standby", "host=s"]),
    ("lock-mode", &["--immutable"]),
    ("lock-days", &["--immutable"]),
    ("page-token", &["--page-listen", "1"]),
    ("page-allow", &["--page-listen", "1"]),
];
/// Options a subcommand needs to parse at all that clap does not mark required (a
/// `required_unless_present_any`).
const BASES: &[(&str, &[&str])] = &[("restore database", &["--to", "1"])];
/// Values tried for an option or positional until one parses and changes the command.
const SAMPLES: &[&str] = &[
    "2",
    "1",
    "8M",
    "16K",
    "all",
    "x=y",
    "zstd",
    "sbt",
    "preserve",
    "t",
    "auto",
    "direct",
    "sync",
    "governance",
];

fn leaves(c: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
    let subs: Vec<_> = c
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .collect();
    if subs.is_empty() {
        out.push((path.clone(), c.clone()));
    }
    for s in subs {
        let mut p = path.clone();
        p.push(s.get_name().to_string());
        leaves(s, p, out);
    }
}

fn convert(argv: &[String]) -> Option<m::Command> {
    let cli =
        cli::Cli::try_parse_from(std::iter::once("recman".to_string()).chain(argv.iter().cloned()))
            .ok()?;
    cli.command.map(m::Command::from)
}

/// The leaf's path with its required positionals filled.
fn base(path: &[String], c: &clap::Command) -> Vec<String> {
    let mut argv = path.to_vec();
    for a in c.get_positionals().filter(|a| a.is_required_set()) {
        let fill = a
            .get_possible_values()
            .first()
            .map(|v| v.get_name().to_string())
            .unwrap_or_else(|| {
                if a.get_num_args().is_some_and(|n| n.max_values() > 1) {
                    "clear".into()
                } else {
                    "1".into()
                }
            });
        argv.push(fill);
    }
    if let Some((_, extra)) = BASES.iter().find(|(p, _)| *p == path.join(" ")) {
        argv.extend(extra.iter().map(|s| s.to_string()));
    }
    for a in c
        .get_arguments()
        .filter(|a| a.is_required_set() && !a.is_positional())
    {
        argv.push(format!("--{}", a.get_long().expect("a long option")));
        argv.push("1".into());
    }
    argv
}

#[test]
fn every_subcommand_and_option_reaches_the_command_model() {
    let mut all = Vec::new();
    leaves(&cli::Cli::command(), Vec::new(), &mut all);
    assert!(
        all.len() > 30,
        "the walk found only {} subcommands",
        all.len()
    );
    let mut checked = 0;
    for (path, c) in &all {
        let argv = base(path, c);
        let Some(model) = convert(&argv) else {
            panic!("`recman {}` does not parse or convert", argv.join(" "));
        };
        let want = model.path();
        assert_eq!(
            &path[..want.len()],
            want,
            "recman {} converts to {want:?}",
            path.join(" ")
        );
        for a in c.get_arguments() {
            let Some(long) = a.get_long() else { continue };
            let in_base = argv.iter().any(|w| *w == format!("--{long}"));
            if a.is_global_set() || a.is_required_set() || long == "help" || in_base {
                continue;
            }
            let companion: Vec<String> = COMPANIONS
                .iter()
                .find(|(f, _)| *f == long)
                .map(|(_, c)| c.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default();
            let mut without = argv.clone();
            without.extend(companion);
            let before = convert(&without).unwrap_or_else(|| panic!("{without:?} does not parse"));
            let tries: Vec<Vec<String>> = match a.get_action() {
                ArgAction::SetTrue => vec![vec![format!("--{long}")]],
                _ => SAMPLES
                    .iter()
                    .map(|v| vec![format!("--{long}"), v.to_string()])
                    .collect(),
            };
            let reaches = tries.iter().any(|t| {
                let mut with = without.clone();
                with.extend(t.iter().cloned());
                convert(&with).is_some_and(|after| after != before)
            });
            assert!(
                reaches,
                "recman {} --{long}: no field of the command model takes it",
                path.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked > 60, "only {checked} options checked");
}
