//! Bounded fuzzing in plain `cargo test`: token soup and byte mutations of the golden scripts
//! must never panic, and whatever parses must print to a form that parses back to the same
//! statements. The tests of the tests run the same loops with a broken printer and require a
//! failure, so a property too weak to see a wrong print cannot pass unnoticed.

use recman_lang::{Script, check_round_trip, check_round_trip_with, parse_script};

/// xorshift64*: deterministic, so a failure reproduces from its iteration number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "RUN",
    "{",
    "}",
    ";",
    "BACKUP",
    "DATABASE",
    "RESTORE",
    "RECOVER",
    "UNTIL",
    "TIME",
    "SCN",
    "'SYSDATE-1'",
    "'SYSDATE - 1/24'",
    "'0/3000028'",
    "ALLOCATE",
    "CHANNEL",
    "c1",
    "DEVICE",
    "TYPE",
    "DISK",
    "SBT",
    "FORMAT",
    "'%U'",
    "TAG",
    "'x'",
    // A literal other than 'x', so that a printer that writes every string as 'x' is noticed.
    "'weekly'",
    "PLUS",
    "ARCHIVELOG",
    "ALL",
    "DELETE",
    "INPUT",
    "NOPROMPT",
    "OBSOLETE",
    "SET",
    "NEWNAME",
    "FOR",
    "TO",
    "'/d'",
    "SQL",
    "\"s'q\"",
    "CONFIGURE",
    "RETENTION",
    "POLICY",
    "REDUNDANCY",
    "1",
    "32G",
    "10X",
    "(",
    ")",
    ",",
    "=",
    ":",
    "LIST",
    "REPORT",
    "CROSSCHECK",
    "CATALOG",
    "START",
    "WITH",
    "VALIDATE",
    "HELP",
    "STARTUP",
    "#c\n",
    "\n",
    "‘q’",
    "INCREMENTAL",
    "LEVEL",
    "CUMULATIVE",
    "AS",
    "COMPRESSED",
    "BACKUPSET",
    "COPY",
    "OF",
    "BETWEEN",
    "AND",
    "SEQUENCE",
    "THREAD",
    "CONNECT",
    "TARGET",
    "/",
    "@",
    "inst",
    "KEEP",
    "FOREVER",
    "NOT",
    "BACKED",
    "UP",
    "TIMES",
    "SHOW",
    "EXIT",
    "'",
    "\"",
    "TO_DATE",
    "\"TO_DATE('2026-01-01','YYYY-MM-DD')\"",
    "MAXOPENFILES",
    "RATE",
    "99999999999999999999999",
];

type Check<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// Runs `check` over random token soup; the first violation, if any.
fn token_soup(check: Check) -> Option<String> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..12_000 {
        let n = 1 + rng.below(24);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(WORDS[rng.below(WORDS.len())]);
            s.push(if rng.below(5) == 0 { '\n' } else { ' ' });
        }
        if let Err(e) = check(&s) {
            return Some(e);
        }
    }
    None
}

fn golden_seeds() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rcv"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no golden scripts to mutate");
    seeds
}

/// Runs `check` over byte mutations of the golden scripts; the first violation, if any.
fn mutated_golden(check: Check) -> Option<String> {
    let seeds = golden_seeds();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for _ in 0..10_000 {
        let mut b = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(6) {
            if b.is_empty() {
                break;
            }
            let i = rng.below(b.len());
            match rng.below(4) {
                0 => b[i] = rng.next() as u8,
                1 => {
                    b.remove(i);
                }
                2 => {
                    let pool = b";{}'\"(#\n";
                    b.insert(i, pool[rng.below(pool.len())])
                }
                _ => b.truncate(i),
            }
        }
        if let Err(e) = check(&String::from_utf8_lossy(&b)) {
            return Some(e);
        }
    }
    None
}

/// Literals for the statement soup: the quoting cases the printer must get right.
const LITERALS: &[&str] = &[
    "'weekly'",
    "'x'",
    "''",
    "\"it's\"",
    "'a\"b'",
    "\u{2018}it's \"q\"\u{2019}",
    "'%U_%t'",
    "'/backup/%d_%U'",
    "'SYSDATE-1'",
    "'0/3000028'",
    "'Big Space'",
];

const NUMBERS: &[&str] = &["0", "1", "7", "4096", "99999999999999999999"];

/// The one-line statements of the golden scripts: whole statements the soup recombines.
fn golden_statements() -> Vec<String> {
    let mut out: Vec<String> = golden_seeds()
        .iter()
        .flat_map(|b| {
            String::from_utf8_lossy(b)
                .lines()
                .map(str::trim)
                .filter(|l| l.ends_with(';') && l.starts_with(|c: char| c.is_ascii_alphabetic()))
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One golden statement with its quoted literals and numbers replaced at random.
fn reword(stmt: &str, rng: &mut Rng) -> String {
    let mut out = String::new();
    let mut rest = stmt;
    while let Some(c) = rest.chars().next() {
        if c == '\''
            && let Some(end) = rest[1..].find('\'')
        {
            if rng.below(2) == 0 {
                out.push_str(LITERALS[rng.below(LITERALS.len())]);
            } else {
                out.push_str(&rest[..end + 2]);
            }
            rest = &rest[end + 2..];
            continue;
        }
        if c.is_ascii_digit() && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_') {
            let end = rest
                .find(|d: char| !d.is_ascii_digit())
                .unwrap_or(rest.len());
            if rng.below(3) == 0 {
                out.push_str(NUMBERS[rng.below(NUMBERS.len())]);
            } else {
                out.push_str(&rest[..end]);
            }
            rest = &rest[end..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Runs `check` over scripts of one to four golden statements with new literals and numbers,
/// which mostly parse and so reach the printer; the first violation, if any, and how many of
/// the scripts parsed.
fn statement_soup(check: Check) -> (Option<String>, usize) {
    let stmts = golden_statements();
    assert!(stmts.len() >= 40, "only {} golden statements", stmts.len());
    let mut rng = Rng(0xA076_1D64_78BD_642F);
    let mut parsed = 0;
    for _ in 0..3_000 {
        let mut s = String::new();
        for _ in 0..1 + rng.below(4) {
            s.push_str(&reword(&stmts[rng.below(stmts.len())], &mut rng));
            s.push('\n');
        }
        parsed += usize::from(parse_script(&s).is_ok());
        if let Err(e) = check(&s) {
            return (Some(e), parsed);
        }
    }
    (None, parsed)
}

#[test]
fn statement_soup_round_trips() {
    let (err, parsed) = statement_soup(&check_round_trip);
    if let Some(e) = err {
        panic!("{e}");
    }
    // A soup that mostly fails to parse would test the error paths only.
    assert!(parsed >= 1_500, "only {parsed} of 3000 scripts parsed");
}

#[test]
fn token_soup_never_panics() {
    if let Some(e) = token_soup(&check_round_trip) {
        panic!("{e}");
    }
}

#[test]
fn mutated_golden_scripts_never_panic() {
    if let Some(e) = mutated_golden(&check_round_trip) {
        panic!("{e}");
    }
}

/// The mutant: the canonical printer, except that every tag it prints comes out as `'x'`. Its
/// output is stable (printing what it prints gives the same text again), so only a property
/// that compares the statements themselves can tell it is wrong.
fn tags_as_x(script: &Script) -> String {
    let text = script.to_string();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("TAG ") {
        out.push_str(&rest[..i + 4]);
        rest = &rest[i + 4..];
        let Some(open) = rest
            .chars()
            .next()
            .filter(|c| "'\"\u{2018}\u{201C}".contains(*c))
        else {
            continue;
        };
        let close = match open {
            '\u{2018}' => '\u{2019}',
            '\u{201C}' => '\u{201D}',
            c => c,
        };
        let body = &rest[open.len_utf8()..];
        let Some(end) = body.find(close) else {
            continue;
        };
        out.push_str("'x'");
        rest = &body[end + close.len_utf8()..];
    }
    out.push_str(rest);
    out
}

fn mutant_check(src: &str) -> Result<(), String> {
    check_round_trip_with(src, tags_as_x)
}

#[test]
fn a_printer_that_loses_tags_fails_the_round_trip() {
    let src = "BACKUP DATABASE TAG 'weekly';";
    let script = parse_script(src).unwrap();
    let printed = tags_as_x(&script);
    assert_eq!(printed.trim_end(), "BACKUP DATABASE TAG 'x';");
    // The weaker property of before (printing is stable) holds for the mutant ...
    assert_eq!(tags_as_x(&parse_script(&printed).unwrap()), printed);
    // ... the structural one does not.
    let err = mutant_check(src).expect_err("the mutant printer passed the round trip");
    assert!(err.contains("weekly"), "{err}");
    assert!(check_round_trip(src).is_ok());
}

#[test]
fn the_in_test_fuzzers_catch_the_mutant_printer() {
    // Random token soup almost never parses (it is there for the error paths), so the two
    // fuzzers that start from whole statements are the ones that must notice.
    let (soup, _) = statement_soup(&mutant_check);
    assert!(
        soup.as_deref().is_some_and(|e| e.contains("TAG")),
        "statement soup did not notice a printer that loses tags: {soup:?}"
    );
    let golden = mutated_golden(&mutant_check);
    assert!(
        golden.as_deref().is_some_and(|e| e.contains("TAG")),
        "mutated golden scripts did not notice a printer that loses tags: {golden:?}"
    );
}

fn check(src: &str) {
    if let Err(e) = check_round_trip(src) {
        panic!("{e}");
    }
}
/// Found by the cargo-fuzz target (fuzz/): strings the printer wrote in a form that does not lex
/// back. A string read in typographic quotes may hold both `'` and `"`, and was put in `'…'`.
#[test]
fn fuzz_target_findings_round_trip() {
    for src in [
        "EXECUTE ‘it's \"x\"’;",
        "SQL ‘alter system set x = 'y' comment \"z\"’;",
        "SQL “’ ' \"”;",
        "BACKUP DATABASE TAG ‘a'b\"c’;",
        "RESTORE DATABASE UNTIL TIME ‘TO_DATE(\"it's\", 'YYYY-MM-DD')’;",
        "RESTORE DATABASE UNTIL TIME ‘TO_DATE('a\"b', \"YYYY'\")’;",
        // SHOW's first word may be quoted, and was printed bare.
        "SHOW'EPSE@TIzR DEVE TYPEEPAIR SECTI FOp/%%F';",
        "SHOW '' ALL;",
        "SHOW 32G;",
    ] {
        parse_script(src).unwrap_or_else(|e| panic!("{src:?} does not parse: {e}"));
        check(src);
    }
}
