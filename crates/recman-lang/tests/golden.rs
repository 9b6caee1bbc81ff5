//! Golden files: every `golden/*.rcv` parses, its canonical form and AST match `*.out`, and the
//! canonical form parses back to the same AST. Every `golden/errors/*.rcv` fails with exactly
//! `*.err`. Set UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate change.

use recman_lang::{Script, Statement, Stmt, parse_script};
use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rcv"))
        .collect();
    v.sort();
    v
}

fn check(path: &Path, ext: &str, got: &str) {
    let want_path = path.with_extension(ext);
    // UPDATE_GOLDEN rewrites a golden file that differs and then fails, so that a run with it
    // never passes on a changed output: review the diff and run again without it (.ci/run
    // refuses to run with it set).
    if std::env::var_os("UPDATE_GOLDEN").is_some()
        && std::fs::read_to_string(&want_path).ok().as_deref() != Some(got)
    {
        std::fs::write(&want_path, got).unwrap();
        panic!(
            "rewrote {}; hint: review the change and run again without UPDATE_GOLDEN",
            want_path.display()
        );
    }
    let want = std::fs::read_to_string(&want_path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", want_path.display()));
    assert_eq!(
        got,
        want,
        "{} differs from {}",
        path.display(),
        want_path.display()
    );
}

/// Drops positions, which differ between the source and its canonical form.
fn strip(stmts: &[Stmt]) -> Vec<Statement> {
    stmts
        .iter()
        .map(|s| match &s.statement {
            Statement::Run(body) => Statement::Run(
                strip(body)
                    .into_iter()
                    .map(|statement| Stmt {
                        statement,
                        line: 0,
                        column: 0,
                        first_line: String::new(),
                    })
                    .collect(),
            ),
            other => other.clone(),
        })
        .collect()
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_scripts_parse_print_and_round_trip() {
    let all = files(&golden_dir());
    assert!(all.len() >= 7, "golden files missing");
    let mut statements = 0;
    for path in all {
        let src = std::fs::read_to_string(&path).unwrap();
        let script: Script =
            parse_script(&src).unwrap_or_else(|e| panic!("{}:\n{e}", path.display()));
        let mut out = String::new();
        for s in &script.statements {
            statements += 1;
            out.push_str(&format!(
                "{s}\n= {:?}\n\n",
                strip(std::slice::from_ref(s))[0]
            ));
        }
        check(&path, "out", &out);
        let canon = script.to_string();
        let again = parse_script(&canon).unwrap_or_else(|e| {
            panic!(
                "canonical form of {} does not parse:\n{canon}\n{e}",
                path.display()
            )
        });
        assert_eq!(
            strip(&again.statements),
            strip(&script.statements),
            "{}",
            path.display()
        );
        assert_eq!(
            again.to_string(),
            canon,
            "printing is not stable for {}",
            path.display()
        );
    }
    assert!(statements >= 60, "only {statements} golden statements");
}

#[test]
fn malformed_scripts_give_the_expected_errors() {
    let all = files(&golden_dir().join("errors"));
    assert!(all.len() >= 10, "error cases missing");
    for path in all {
        let src = std::fs::read_to_string(&path).unwrap();
        let err = match parse_script(&src) {
            Ok(s) => panic!("{} parsed: {s}", path.display()),
            Err(e) => e.to_string() + "\n",
        };
        check(&path, "err", &err);
    }
}
