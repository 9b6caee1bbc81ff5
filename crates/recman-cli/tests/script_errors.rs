//! Issue 14: a statement is lowered straight into the command model, so a value the command
//! refuses is reported against the statement (its number, line and text, in the language's
//! words), never as an internal "the statement became `recman …`" error. None of these needs
//! a cluster: the checks run before any command touches one.

mod common;

use common::*;

fn script_err(repo: &str, text: &str) -> String {
    let out = recman(["--repo", repo, "run", text]);
    assert!(!out.status.success(), "{text:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{text:?} panicked\n{err}");
    assert!(
        !err.contains("does not parse") && !err.contains("internal"),
        "{text:?}\n{err}"
    );
    err
}

#[test]
fn out_of_range_values_are_reported_against_the_statement() {
    let (_t, repo) = new_repo();
    let r = path_str(&repo);
    recman_ok(["--repo", r, "create", "catalog"]);
    for (text, line, clause, range) in [
        (
            "SHOW ALL;\nBACKUP DATABASE FILESPERSET 0;",
            2,
            "FILESPERSET",
            "1 to 1000000",
        ),
        (
            "RUN {\n ALLOCATE CHANNEL c1 DEVICE TYPE DISK MAXOPENFILES 5000;\n BACKUP DATABASE;\n}",
            1,
            "MAXOPENFILES",
            "1 to 1024",
        ),
        (
            "REPORT OBSOLETE REDUNDANCY 20000;",
            1,
            "REDUNDANCY",
            "1 to 10000",
        ),
        (
            "DELETE NOPROMPT ARCHIVELOG ALL BACKED UP 0 TIMES TO DEVICE TYPE DISK;",
            1,
            "BACKED UP",
            "1 to 10000",
        ),
    ] {
        let err = script_err(r, text);
        assert!(
            err.contains(&format!("(line {line}:")),
            "{text:?}: no line {line}\n{err}"
        );
        assert!(
            err.contains(clause) && err.contains(range),
            "{text:?}\n{err}"
        );
        assert!(err.contains("hint:"), "{text:?}: no hint\n{err}");
        assert!(
            !err.contains("--"),
            "{text:?}: the subcommand's flag instead of the clause\n{err}"
        );
    }
}

#[test]
fn an_option_that_does_not_apply_is_refused_naming_the_statement() {
    let (_t, repo) = new_repo();
    let r = path_str(&repo);
    recman_ok(["--repo", r, "create", "catalog"]);
    let err = script_err(r, "LIST ARCHIVELOG ALL SUMMARY;");
    assert!(
        err.contains("line 1: LIST ARCHIVELOG ALL SUMMARY;"),
        "{err}"
    );
    assert!(err.contains("SUMMARY") && err.contains("hint:"), "{err}");
}

/// Issue 43: what a new user tries first is answered with what recman does instead.
#[test]
fn encryption_unregister_and_keep_until_say_what_recman_does() {
    let (_t, repo) = new_repo();
    let r = path_str(&repo);
    recman_ok(["--repo", r, "create", "catalog"]);

    for onoff in ["ON", "OFF"] {
        let err = script_err(r, &format!("CONFIGURE ENCRYPTION FOR DATABASE {onoff};"));
        assert!(
            err.contains("create catalog --encrypt")
                && err.contains("--key-file")
                && err.contains("AES-256-GCM")
                && !err.contains("not supported"),
            "{onoff}: {err}"
        );
    }
    // recman's algorithm is accepted (nothing to store); any other is refused, naming it.
    let out = recman([
        "--repo",
        r,
        "run",
        "CONFIGURE ENCRYPTION ALGORITHM 'aes256';",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("AES-256-GCM"));
    let err = script_err(r, "CONFIGURE ENCRYPTION ALGORITHM 'AES128';");
    assert!(
        err.contains("'AES128'") && err.contains("ALGORITHM 'AES256'"),
        "{err}"
    );

    let err = script_err(r, "UNREGISTER DATABASE;");
    assert!(
        err.contains("DELETE NOPROMPT BACKUPSET") && err.contains("removed as a whole"),
        "{err}"
    );

    // A time that does not parse is refused before any backup is looked up.
    let err = script_err(r, "CHANGE BACKUP TAG 'X' KEEP UNTIL TIME 'no such time';");
    assert!(err.contains("no such time"), "{err}");
}
