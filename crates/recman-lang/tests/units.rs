//! Small properties: statement completeness for the prompt, FORMAT substitution, date strings,
//! RESTORE … PREVIEW / VALIDATE, and HELP covering every statement.

use recman_lang::format::{PieceVars, substitute};
use recman_lang::{DateExpr, help, is_complete, parse_script};

#[test]
fn a_statement_is_complete_at_its_semicolon_outside_quotes_and_blocks() {
    assert!(is_complete("BACKUP DATABASE;"));
    assert!(!is_complete("BACKUP\nDATABASE"));
    assert!(!is_complete("SQL 'select 1;"));
    assert!(!is_complete("RUN {\n BACKUP DATABASE;"));
    assert!(is_complete("RUN {\n BACKUP DATABASE;\n}"));
    assert!(!is_complete("LIST BACKUP # ;"));
    assert!(!is_complete(""));
}

#[test]
fn format_variables_are_substituted() {
    let v = PieceVars {
        db_name: "main".into(),
        set: 7,
        piece: 2,
        copy: 1,
        timestamp: 1_700_000_000,
        date: "20261121".into(),
    };
    let u = recman_lang::format::short_unique(7, 1_700_000_000);
    assert_eq!(u.len(), 8);
    assert_eq!(
        substitute("/b/%d_%T_%s_%p_%c_%t_%u_%U_%%", &v).unwrap(),
        format!("/b/main_20261121_7_2_1_1700000000_{u}_{u}_2_1_%")
    );
    let e = substitute("%F", &v).unwrap_err().to_string();
    assert!(e.contains("%F") && e.contains("hint"), "{e}");
}

#[test]
fn date_strings() {
    let s = parse_script("SET UNTIL TIME 'SYSDATE - 1/24'; SET UNTIL TIME sysdate-7;").unwrap();
    let dates: Vec<String> = s.statements.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        dates,
        [
            "SET UNTIL TIME 'SYSDATE-1/24';",
            "SET UNTIL TIME 'SYSDATE-7';"
        ]
    );
    assert_eq!(
        recman_lang::date::parse_date("TO_DATE('2026-01-01 10:00', 'YYYY-MM-DD HH24:MI')").unwrap(),
        DateExpr::ToDate {
            value: "2026-01-01 10:00".into(),
            format: "YYYY-MM-DD HH24:MI".into()
        }
    );
    assert_eq!(
        recman_lang::date::oracle_format_to_strftime("YYYY-MM-DD HH24:MI:SS").unwrap(),
        "%Y-%m-%d %H:%M:%S"
    );
    assert!(recman_lang::date::parse_date("SYSDATE-1/0").is_err());
}

#[test]
fn help_covers_every_statement() {
    for verb in [
        "ALLOCATE",
        "BACKUP",
        "CATALOG",
        "CONFIGURE",
        "CONNECT",
        "CREATE",
        "CROSSCHECK",
        "DELETE",
        "EXIT",
        "HELP",
        "LIST",
        "RECOVER",
        "REGISTER",
        "RELEASE",
        "REPORT",
        "RESTORE",
        "RUN",
        "SET",
        "SHOW",
        "SQL",
        "VALIDATE",
        "STARTUP",
        "SHUTDOWN",
        "ALTER",
        "QUIT",
    ] {
        let h = help::help(Some(verb));
        assert!(!h.starts_with("Statements"), "no HELP for {verb}");
        assert!(help::help(None).contains(&format!(
                "  {:<11}",
                help::TOPICS
                    .iter()
                    .find(|t| h.contains(t.syntax))
                    .unwrap()
                    .keyword
            )));
    }
}

#[test]
fn restore_preview_and_validate_parse_and_print_back() {
    use recman_lang::{Restore, RestoreObject, RestoreOpt, Statement};
    let cases = [
        (
            "restore database preview;",
            "RESTORE DATABASE PREVIEW;",
            vec![RestoreOpt::Preview { summary: false }],
        ),
        (
            "RESTORE DATABASE PREVIEW RECALL SUMMARY;",
            "RESTORE DATABASE PREVIEW SUMMARY;",
            vec![RestoreOpt::Preview { summary: true }],
        ),
        (
            "Restore Database Validate;",
            "RESTORE DATABASE VALIDATE;",
            vec![RestoreOpt::Validate],
        ),
        (
            "RESTORE DATABASE VALIDATE HEADER FROM TAG weekly;",
            "RESTORE DATABASE VALIDATE FROM TAG 'weekly';",
            vec![RestoreOpt::Validate, RestoreOpt::FromTag("weekly".into())],
        ),
    ];
    for (src, canon, options) in cases {
        let s = parse_script(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert_eq!(s.statements.len(), 1, "{src}");
        assert_eq!(
            s.statements[0].statement,
            Statement::Restore(Restore {
                object: RestoreObject::Database {
                    skip_tablespaces: vec![]
                },
                options,
            }),
            "{src}"
        );
        assert_eq!(s.to_string().trim_end(), canon, "{src}");
        let again = parse_script(&s.to_string()).unwrap();
        assert_eq!(
            again.statements[0].statement, s.statements[0].statement,
            "{src}"
        );
    }
    let h = help::help(Some("RESTORE"));
    assert!(h.contains("PREVIEW") && h.contains("VALIDATE"), "{h}");
}

/// Found by the statement soup of tests/fuzz.rs: CUMULATIVE before INCREMENTAL took any level,
/// and the canonical form (INCREMENTAL LEVEL n CUMULATIVE) then refused to parse.
#[test]
fn an_incremental_level_is_range_checked_in_either_word_order() {
    for src in [
        "BACKUP INCREMENTAL LEVEL 9 CUMULATIVE DATABASE;",
        "BACKUP CUMULATIVE INCREMENTAL LEVEL 9 DATABASE;",
    ] {
        let e = recman_lang::parse_script(src).unwrap_err().to_string();
        assert!(
            e.contains("incremental level 9 is out of range"),
            "{src}: {e}"
        );
    }
}
