//! SHOW ALL in the language's own words: one RMAN CONFIGURE statement per setting, which
//! `recman run` accepts back. A setting RMAN has no statement for is a `#` comment naming
//! the subcommand that sets it.

use recman_command::configure::ShownSettings;

pub fn show_all_rman(shown: &ShownSettings) {
    println!(
        "# RMAN configuration parameters for repository {} are:",
        shown.repository
    );
    for s in &shown.settings {
        let note = if s.source == "default" {
            " # default".to_string()
        } else {
            format!(" # {}", s.source)
        };
        match statement(s.name, &s.value) {
            Some(st) => println!("{st};{note}"),
            None => println!("# recman configure {} {}{note}", s.name, s.value),
        }
    }
    for (k, v) in &shown.catalog_rows {
        if k == "default-device-type" {
            println!("CONFIGURE DEFAULT DEVICE TYPE TO {};", v.to_uppercase());
        } else if let Some(rest) = k.strip_prefix("device-type.")
            && let Some((device, what)) = rest.split_once('.')
        {
            let d = device.to_uppercase();
            match what {
                "parms" => println!("CONFIGURE CHANNEL DEVICE TYPE {d} PARMS {};", quote(v)),
                "parallelism" => println!("CONFIGURE DEVICE TYPE {d} PARALLELISM {v};"),
                "blksize" => println!(
                    "CONFIGURE CHANNEL DEVICE TYPE {d} PARMS {};",
                    quote(&format!("BLKSIZE={v}"))
                ),
                "env" => println!(
                    "CONFIGURE CHANNEL DEVICE TYPE {d} PARMS {};",
                    quote(&format!("ENV=({v})"))
                ),
                _ => println!("# recman configure device-type {device} {what} {v}"),
            }
        }
    }
}

/// The CONFIGURE statement that sets `name` to `value`, if RMAN has one.
fn statement(name: &str, value: &str) -> Option<String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    Some(match (name, words.as_slice()) {
        ("retention-policy", ["redundancy", n]) => {
            format!("CONFIGURE RETENTION POLICY TO REDUNDANCY {n}")
        }
        ("retention-policy", ["recovery-window", n]) => {
            format!("CONFIGURE RETENTION POLICY TO RECOVERY WINDOW OF {n} DAYS")
        }
        ("retention-policy", ["none"]) => "CONFIGURE RETENTION POLICY TO NONE".into(),
        // 1 is the default: CLEAR keeps a default a default when the output is run back.
        ("backup-copies", ["1"]) => {
            "CONFIGURE DATAFILE BACKUP COPIES FOR DEVICE TYPE DISK CLEAR".into()
        }
        ("backup-copies", [n]) => {
            format!("CONFIGURE DATAFILE BACKUP COPIES FOR DEVICE TYPE DISK TO {n}")
        }
        ("channels", [n]) => format!("CONFIGURE DEVICE TYPE DISK PARALLELISM {n}"),
        ("maxopenfiles", [n]) => format!("CONFIGURE CHANNEL DEVICE TYPE DISK MAXOPENFILES {n}"),
        ("maxpiecesize", [n]) if *n != "none" => {
            format!("CONFIGURE CHANNEL DEVICE TYPE DISK MAXPIECESIZE {n}")
        }
        ("backup-optimization", [v]) => {
            format!("CONFIGURE BACKUP OPTIMIZATION {}", v.to_uppercase())
        }
        ("compression", ["none"]) => "CONFIGURE COMPRESSION ALGORITHM CLEAR".into(),
        ("compression", ["lz4"]) => "CONFIGURE COMPRESSION ALGORITHM 'LOW'".into(),
        ("compression", ["zstd"]) => "CONFIGURE COMPRESSION ALGORITHM 'MEDIUM'".into(),
        ("compression", ["zstd:19"]) => "CONFIGURE COMPRESSION ALGORITHM 'HIGH'".into(),
        ("archivelog-deletion-policy", ["none"]) => {
            "CONFIGURE ARCHIVELOG DELETION POLICY TO NONE".into()
        }
        ("archivelog-deletion-policy", ["backed-up", n, "times"]) => {
            format!(
                "CONFIGURE ARCHIVELOG DELETION POLICY TO BACKED UP {n} TIMES TO DEVICE TYPE DISK"
            )
        }
        ("archivelog-deletion-policy", ["applied-on-all-standby"]) => {
            "CONFIGURE ARCHIVELOG DELETION POLICY TO APPLIED ON ALL STANDBY".into()
        }
        ("archivelog-deletion-policy", ["applied-on-all-standby", "backed-up", n, "times"]) => {
            format!(
                "CONFIGURE ARCHIVELOG DELETION POLICY TO APPLIED ON ALL STANDBY BACKED UP {n} TIMES TO DEVICE TYPE DISK"
            )
        }
        ("rpo-target", ["none"]) => "CONFIGURE RPO TARGET CLEAR".into(),
        ("rpo-target", [v]) => format!("CONFIGURE RPO TARGET TO '{v}'"),
        (n, [v]) => {
            let words = recman_lang::ast::measure_words(n)?;
            // CLEAR keeps a default a default when the output is run back.
            let default = recman_command::precedence::spec(n).map(|s| s.default);
            if *v == "none" || default == Some(*v) {
                format!("CONFIGURE {words} CLEAR")
            } else {
                format!("CONFIGURE {words} TO '{v}'")
            }
        }
        _ => return None,
    })
}

/// A string literal of the language: it has no escapes, so a value holding `'` is quoted
/// with `"`.
fn quote(v: &str) -> String {
    if v.contains('\'') {
        format!("\"{v}\"")
    } else {
        format!("'{v}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement printed parses back into a CONFIGURE.
    #[test]
    fn statements_parse() {
        for (n, v) in [
            ("retention-policy", "redundancy 2"),
            ("retention-policy", "recovery-window 7"),
            ("retention-policy", "none"),
            ("channels", "3"),
            ("maxopenfiles", "4"),
            ("backup-optimization", "on"),
            ("compression", "none"),
            ("compression", "lz4"),
            ("compression", "zstd:19"),
            ("archivelog-deletion-policy", "backed-up 2 times"),
            ("archivelog-deletion-policy", "none"),
            ("archivelog-deletion-policy", "applied-on-all-standby"),
            (
                "archivelog-deletion-policy",
                "applied-on-all-standby backed-up 2 times",
            ),
            ("rto-target", "30m"),
            ("drill-interval", "none"),
            ("slot-retention-limit", "1G"),
            ("repository-min-free", "10G"),
            ("repository-lock-limit", "24h"),
            ("certificate-expiry-warning", "30d"),
            ("backup-window", "6h"),
        ] {
            let st = statement(n, v).unwrap_or_else(|| panic!("{n} {v}"));
            let script = recman_lang::parse_script(&format!("{st};")).unwrap();
            assert!(matches!(
                script.statements[0].statement,
                recman_lang::Statement::Configure(_)
            ));
        }
        assert!(statement("filesperset", "64").is_none());
    }
}
