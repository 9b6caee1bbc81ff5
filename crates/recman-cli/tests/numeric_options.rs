//! Issue 22, acceptance 8: no input makes recman panic. Every numeric option of every
//! subcommand, found by walking clap's command tree (RECMAN_LIST_NUMERIC_OPTIONS), gets 0, -1,
//! its maximum + 1, 2^64 and 100000: each is either accepted or refused with a clear error that
//! gives the documented range; never a panic. Also the other input checks of issue 22: empty
//! environment variables, control characters in names and tags, `configure` values.

mod common;
mod flows;

use common::*;
use flows::*;
use std::process::Output;

struct NumericOption {
    path: Vec<String>,
    option: String,
    id: String,
    kind: String,
    lo: String,
    hi: String,
    required: Vec<(Option<String>, String, String)>,
}

fn numeric_options() -> Vec<NumericOption> {
    let out = recman_env(Vec::<&str>::new(), &[("RECMAN_LIST_NUMERIC_OPTIONS", "1")]);
    assert!(out.status.success(), "listing failed: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut found = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let help = v["help"].as_str().unwrap();
        let option = v["option"].as_str().unwrap().to_string();
        // The help must give the range: users read it there, and this test checks it is true.
        let range = help
            .rsplit_once("Range: ")
            .unwrap_or_else(|| panic!("{option}: help gives no range: {help:?}"))
            .1
            .trim_end_matches('.');
        let (lo, hi) = range
            .split_once(" to ")
            .unwrap_or_else(|| panic!("{option}: range {range:?} is not 'LO to HI'"));
        let required = v["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["long"].as_str().map(str::to_string),
                    r["id"].as_str().unwrap().to_string(),
                    r["fill"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        found.push(NumericOption {
            path: v["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_string())
                .collect(),
            option,
            id: v["id"].as_str().unwrap().to_string(),
            kind: v["kind"].as_str().unwrap().to_string(),
            lo: lo.to_string(),
            hi: hi.to_string(),
            required,
        });
    }
    found
}

/// Bytes of a bound written as 8K, 4M, 1T or a plain number.
fn bytes(bound: &str) -> u128 {
    let (num, shift) = match bound.chars().last().unwrap() {
        'K' => (&bound[..bound.len() - 1], 10),
        'M' => (&bound[..bound.len() - 1], 20),
        'G' => (&bound[..bound.len() - 1], 30),
        'T' => (&bound[..bound.len() - 1], 40),
        _ => (bound, 0),
    };
    num.parse::<u128>().unwrap() << shift
}

fn assert_no_panic(what: &str, out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let code = out.status.code();
    assert!(
        code.is_some() && code != Some(101) && code != Some(134),
        "{what}: exit {:?} (a panic or a signal)\n{err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{what}: panicked\n{err}");
    err
}

#[test]
fn every_numeric_option_refuses_out_of_range_values_without_panicking() {
    let options = numeric_options();
    // The walk must find the options the issue names, or it walked nothing.
    for (path, opt) in [
        ("backup database", "--channels"),
        ("backup database", "--rate"),
        ("restore database", "--channels"),
        ("validate backup", "--channels"),
        ("archive-get", "--prefetch"),
        ("report obsolete", "--recovery-window"),
    ] {
        assert!(
            options
                .iter()
                .any(|o| o.path.join(" ") == path && o.option == opt),
            "{path} {opt} not found among the numeric options"
        );
    }
    let (_t, dir) = new_scratch_dir();
    let repo = dir.join("no-such-repository");
    let mut refused = 0;
    for o in &options {
        let max_plus_one = match o.kind.as_str() {
            "size" => (bytes(&o.hi) + 1).to_string(),
            _ => (o.hi.parse::<f64>().unwrap() as u128 + 1).to_string(),
        };
        let lo = if o.kind == "size" {
            bytes(&o.lo)
        } else {
            o.lo.parse::<f64>().unwrap() as u128
        };
        for value in [
            "0".to_string(),
            "-1".to_string(),
            max_plus_one.clone(),
            "18446744073709551616".to_string(),
            "100000".to_string(),
        ] {
            let mut args: Vec<String> = vec!["--repo".into(), path_str(&repo).into()];
            args.extend(o.path.iter().cloned());
            args.push(format!("{}={value}", o.option));
            for (long, id, fill) in &o.required {
                if *id == o.id {
                    continue;
                }
                match long {
                    Some(l) => args.push(format!("--{l}={fill}")),
                    None => args.push(fill.clone()),
                }
            }
            let what = format!("recman {}", args.join(" "));
            let out = recman(&args);
            let err = assert_no_panic(&what, &out);
            let n: Option<u128> = value.parse().ok();
            let in_range = match n {
                Some(n) => n >= lo && n < max_plus_one.parse::<u128>().unwrap(),
                None => false,
            };
            if in_range {
                // Accepted by the parser: the command itself then fails on the missing
                // repository, with an error, not a panic.
                assert!(
                    !out.status.success(),
                    "{what}: succeeded without a repository"
                );
                assert!(err.contains("error"), "{what}: no error line\n{err}");
            } else {
                // archive-get's usage errors stop recovery like its other failures (255):
                // a restore_command that does not parse must not look like the end of WAL.
                let usage = if what.contains(" archive-get ") {
                    255
                } else {
                    2
                };
                assert_eq!(
                    out.status.code(),
                    Some(usage),
                    "{what}: not a usage error\n{err}"
                );
                let range = format!("{} to {}", o.lo, o.hi);
                assert!(
                    err.contains("error") && err.contains(&range) && err.contains(&o.option),
                    "{what}: the error does not name the option and the range {range:?}\n{err}"
                );
                refused += 1;
            }
        }
    }
    assert!(refused > 3 * options.len(), "only {refused} refusals");
}

#[test]
fn configure_values_and_stored_settings_are_range_checked() {
    let (_t, repo) = new_repo();
    let r = path_str(&repo);
    recman_ok(["--repo", r, "create", "catalog"]);
    for (args, range) in [
        (vec!["configure", "channels", "100000"], "1 to 256"),
        (vec!["configure", "channels", "0"], "1 to 256"),
        (
            vec!["configure", "channels", "18446744073709551616"],
            "1 to 256",
        ),
        (vec!["configure", "maxopenfiles", "--", "-1"], "1 to 1024"),
        (vec!["configure", "filesperset", "1000001"], "1 to 1000000"),
        (vec!["configure", "section-size", "0"], "1M to 1T"),
        (
            vec!["configure", "device-type", "sbt", "parallelism", "100000"],
            "1 to 256",
        ),
    ] {
        let mut full = vec!["--repo", r];
        full.extend(args.iter().copied());
        let out = recman(&full);
        let err = assert_no_panic(&full.join(" "), &out);
        assert!(!out.status.success(), "{full:?} was accepted");
        assert!(
            err.contains(range),
            "{full:?}: range {range:?} missing\n{err}"
        );
    }
    recman_ok(["--repo", r, "configure", "channels", "256"]);
}

#[test]
fn control_characters_in_names_and_tags_are_refused() {
    let (_t, repo) = new_repo();
    let r = path_str(&repo);
    recman_ok(["--repo", r, "create", "catalog"]);
    for args in [
        vec!["backup", "database", "--tag", "evil\u{1b}[2Jtag"],
        vec!["register", "database", "--name", "a\nb"],
        vec!["delete", "backup", "x\u{7}", "--noprompt"],
        vec![
            "restore",
            "database",
            "--to",
            "/nonexistent",
            "--from-tag",
            "t\rx",
        ],
        vec!["--db", "d\u{1}b", "list", "backup"],
    ] {
        let mut full = vec!["--repo", r];
        full.extend(args.iter().copied());
        let out = recman(&full);
        let err = assert_no_panic(&format!("{full:?}"), &out);
        assert_eq!(out.status.code(), Some(2), "{full:?}\n{err}");
        assert!(err.contains("control character"), "{full:?}\n{err}");
        // The offending character is shown escaped, never sent raw to the terminal.
        assert!(
            !err.chars().any(|c| c.is_control() && c != '\n'),
            "{full:?}: raw control character in {err:?}"
        );
    }
}

#[test]
fn empty_environment_variables_mean_unset() {
    let (_t, dir) = new_scratch_dir();
    let repo = dir.join("repo");
    let r = path_str(&repo);
    let out = recman_env(
        ["create", "catalog"],
        &[
            ("RECMAN_REPO", r),
            ("RECMAN_PGDATA", ""),
            ("RECMAN_CONFIG", ""),
            ("RECMAN_CATALOG", ""),
            ("RECMAN_REPO_CACHE", ""),
            ("PGHOST", ""),
        ],
    );
    let err = assert_no_panic("create catalog with empty RECMAN_* variables", &out);
    assert!(out.status.success(), "{err}");
    assert!(repo.join("catalog.db").is_file());
}

#[test]
fn the_channel_bound_itself_backs_up_validates_and_restores() {
    // 256 is the documented bound: every command taking --channels must work there, not only
    // refuse 257. The channels beyond the number of sets simply have nothing to do.
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t as select g as id, md5(g::text) as v from generate_series(1, 20000) g");
    setup.backup(&["--channels", "256", "--filesperset", "1"]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    setup.ok(&["validate", "backup", "--channels", "256"]);
    let (_keep, to) = setup.restore(&["--channels", "256"]);
    start_and_compare(&to, &expected);
}
