//! docs/language.md's tables checked against the parser and the lowering: each statement the
//! table of what runs names (written out, without placeholders) parses and lowers; each one
//! the table of Oracle-only statements names is refused with a hint.

use super::parity::lower_checked;

const DOC: &str = include_str!("../../../../docs/language.md");

/// The code spans of the first column of the table under `heading`.
fn first_column(heading: &str) -> Vec<String> {
    let start = DOC
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let mut out = Vec::new();
    for line in DOC[start..].lines().skip(1) {
        if line.starts_with("## ") || line.starts_with("### ") {
            break;
        }
        if !line.starts_with("| `") {
            continue;
        }
        let cell = line[2..].split(" | ").next().unwrap_or("");
        for (i, part) in cell.split('`').enumerate() {
            if i % 2 == 1 {
                out.push(part.to_string());
            }
        }
    }
    out
}

/// Whether a span is a statement as written, not a form with placeholders.
fn concrete(span: &str) -> bool {
    let placeholder = span.contains('…')
        || span.contains("\\|")
        || span.contains("[")
        || span
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '\'')
            .any(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()));
    // A fragment of a statement (`RECOVERY FILES`) is not checked alone.
    let first = span.split_whitespace().next().unwrap_or("");
    !placeholder && VERBS.contains(&first)
}

/// The words a statement starts with.
const VERBS: &[&str] = &[
    "ALLOCATE",
    "ALTER",
    "BACKUP",
    "BLOCKRECOVER",
    "CATALOG",
    "CONFIGURE",
    "CONNECT",
    "CREATE",
    "CROSSCHECK",
    "DELETE",
    "DRILL",
    "DUPLICATE",
    "FLASHBACK",
    "LIST",
    "RECOVER",
    "REGISTER",
    "REPORT",
    "RESTORE",
    "RESYNC",
    "RUN",
    "SET",
    "SHOW",
    "SHUTDOWN",
    "SQL",
    "STARTUP",
    "SWITCH",
    "VALIDATE",
];

#[test]
fn what_the_table_says_runs_parses_and_lowers() {
    let spans = first_column("## What each statement does on PostgreSQL");
    let checked: Vec<&String> = spans.iter().filter(|s| concrete(s)).collect();
    assert!(checked.len() >= 8, "{spans:#?}");
    for s in checked {
        if s.starts_with("RUN") || s.starts_with("CONNECT") || s.starts_with("SQL") {
            // Blocks and sessions: parsing is what can be checked without a server.
            recman_lang::parse_script(&format!("{};", s.trim_end_matches(';')))
                .unwrap_or_else(|e| panic!("{s}: {e}"));
            continue;
        }
        if let Err(e) = lower_checked(&format!("{};", s.trim_end_matches(';'))) {
            // A statement whose lowering looks up the repository's settings was accepted.
            let e = format!("{e:#}");
            assert!(e.contains("no repository given"), "{s}: {e}");
        }
    }
}

#[test]
fn what_the_table_says_is_refused_is_refused_with_a_hint() {
    let spans = first_column("## Refused: Oracle-only statements");
    let mut n = 0;
    for s in spans.iter().filter(|s| concrete(s)) {
        let Ok(script) = recman_lang::parse_script(&format!("{};", s.trim_end_matches(';'))) else {
            continue;
        };
        if script.statements.is_empty() {
            continue;
        }
        n += 1;
        let e = lower_checked(&format!("{};", s.trim_end_matches(';')))
            .err()
            .unwrap_or_else(|| panic!("{s} is listed as refused but lowers"));
        assert!(format!("{e:#}").contains("hint:"), "{s}: {e:#}");
    }
    assert!(n >= 4, "{spans:#?}");
}
