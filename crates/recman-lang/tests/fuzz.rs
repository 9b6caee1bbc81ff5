//! Bounded fuzzing in plain `cargo test`: token soup and byte mutations of the golden scripts
//! must never panic, and whatever parses must print to a form that parses back to itself.

use recman_lang::parse_script;

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

fn check(src: &str) {
    if let Err(e) = recman_lang::check_round_trip(src) {
        panic!("{e}");
    }
}

#[test]
fn token_soup_never_panics() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..12_000 {
        let n = 1 + rng.below(24);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(WORDS[rng.below(WORDS.len())]);
            s.push(if rng.below(5) == 0 { '\n' } else { ' ' });
        }
        check(&s);
    }
}

#[test]
fn mutated_golden_scripts_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rcv"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    seeds.sort();
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
        check(&String::from_utf8_lossy(&b));
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
