//! The documented range of every option, applied to a command value whichever front end built
//! it. clap applies the same ranges on the command line (the CLI's value parsers use these
//! functions), so a script statement and its subcommand refuse a value in the same words.

/// A refused option value or combination; `option` is the flag's name without dashes.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CheckError {
    #[error(
        "invalid value {value:?} for --{option}: {why}; hint: docs/commands.md gives each option's range"
    )]
    Value {
        option: &'static str,
        value: String,
        why: String,
    },
    #[error(
        "--{option} {rule} --{other}; hint: docs/commands.md describes the options of `recman {command}`"
    )]
    Combination {
        command: String,
        option: &'static str,
        rule: &'static str,
        other: &'static str,
    },
}

pub use crate::option_table::Range;

/// The ranges the options share; docs/commands.md lists them. A range of an option in
/// [`crate::option_table`] is named here from its row, so it is written once.
pub mod ranges {
    use super::Range;
    use crate::option_table as t;
    pub const CHANNELS: Range = t::CHANNELS.range();
    /// A TCP port for a new cluster (`duplicate database --port`).
    pub const PORT: Range = (1, 65_535);
    pub const FILESPERSET: Range = t::FILESPERSET.range();
    pub const MAXOPENFILES: Range = t::MAXOPENFILES.range();
    /// Kept-backup counts of retention (REDUNDANCY, BACKED UP N TIMES).
    pub const COPIES: Range = (1, 10_000);
    pub const SECTION_SIZE: Range = t::SECTION_SIZE.range();
    pub const THRESHOLD_SIZE: Range = t::SLOT_RETENTION_LIMIT.range();
    pub const DAYS: (f64, f64) = (0.0, 36_500.0);
    pub const ARCHIVE_TIMEOUT: Range = t::ARCHIVE_TIMEOUT.range();
    pub const INCREMENTAL_LEVEL: Range = t::INCREMENTAL_LEVEL.range();
    pub const IO_SLAVES: Range = t::IO_SLAVES.range();
    pub const BUFFERS: Range = t::INPUT_BUFFERS.range();
    pub const INPUT_BUFFER_SIZE: Range = t::INPUT_BUFFER_SIZE.range();
    pub const BLKSIZE: Range = t::BLKSIZE.range();
    pub const RATE: Range = t::RATE.range();
    pub const PUSH_BATCH: Range = (1, 1024);
    /// Segments archive-push reads, compresses and writes at once.
    pub const PUSH_PARALLEL: Range = (1, 256);
    pub const MAXCORRUPT: Range = t::MAXCORRUPT.range();
    pub const BACKUP_COPIES: Range = t::BACKUP_COPIES.range();
    pub const PREFETCH: Range = (0, 1024);
    pub const PREFETCH_PARALLEL: Range = (1, 64);
    /// `receive --flush-interval`, in milliseconds: up to an hour.
    pub const FLUSH_INTERVAL_MS: Range = (1, 3_600_000);

    /// The range of a counted setting that `configure`, the config file and the catalog
    /// share with the flag of the same name: its row's.
    pub fn of_setting(setting: &str) -> Range {
        match t::get(setting).map(|d| d.kind) {
            Some(t::Kind::Count(r)) => r,
            _ => (1, u32::MAX as u64),
        }
    }
}

/// Why `text` is not a whole number in `lo..=hi`, in words that give the range.
pub fn check_count(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from {lo} to {hi}")),
    }
}

/// Why `text` is not a size in `lo..=hi` bytes, in words that give the range.
pub fn check_size(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let range = format!("a size from {} to {}, e.g. 1M", human(lo), human(hi));
    // parse_size saturates: "inf" and 2^64 land above any bound, "nan" at 0.
    match recman_engine::io::parse_size(text) {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("expected {range}")),
    }
}

/// A name, tag or id: not empty, no control characters (they would reach terminals and logs
/// raw), at most 200 characters.
pub fn check_name(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("it is empty".into());
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "it holds the control character {c:?}; hint: use letters, digits and punctuation"
        ));
    }
    if text.chars().count() > 200 {
        return Err("it is longer than 200 characters".into());
    }
    Ok(())
}

/// 8192 -> "8K", 4194304 -> "4M": bounds as users write them.
pub fn human(n: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// Seconds as people read a duration: 4.2 s, 3 min 05 s, 2 h 01 min, 3 d 4 h.
pub fn span(s: f64) -> String {
    let s = s.max(0.0);
    let whole = s.round() as u64;
    match whole {
        _ if s < 60.0 => format!("{s:.1} s"),
        0..3600 => format!("{} min {:02} s", whole / 60, whole % 60),
        3600..86400 => format!("{} h {:02} min", whole / 3600, whole % 3600 / 60),
        _ => format!("{} d {} h", whole / 86400, whole % 86400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::option_table::{Kind, TABLE};

    #[test]
    fn ranges_and_names() {
        assert_eq!(check_count("4", 1, 8), Ok(4));
        for bad in ["0", "9", "-1", "18446744073709551616", "x", ""] {
            assert!(
                check_count(bad, 1, 8).unwrap_err().contains("1 to 8"),
                "{bad}"
            );
        }
        assert_eq!(check_size("1M", 8192, 4 << 20), Ok(1 << 20));
        for bad in [
            "0",
            "-1",
            "4194305",
            "18446744073709551616",
            "inf",
            "nan",
            "1Q",
        ] {
            assert!(
                check_size(bad, 8192, 4 << 20)
                    .unwrap_err()
                    .contains("8K to 4M"),
                "{bad}"
            );
        }
        assert!(check_name("nightly-2026").is_ok());
        assert!(check_name("a\u{1b}[31mb").is_err());
        assert!(check_name("a\nb").is_err());
        assert!(check_name("").is_err());
    }

    #[test]
    fn the_option_table_is_consistent() {
        for d in TABLE {
            assert_eq!(TABLE.iter().filter(|o| o.name == d.name).count(), 1);
            // A config key names a setting of the catalog, spelled as its name with `_`.
            if let Some(k) = d.config_key {
                assert!(d.configurable(), "{}", d.name);
                assert_eq!(k, d.name.replace('-', "_"), "{}", d.name);
            }
            if let Some(e) = d.env {
                assert_eq!(
                    e,
                    format!("RECMAN_{}", d.name.replace('-', "_").to_uppercase())
                );
            }
            // The help states the range as users write it, so --help never drifts from it:
            // every flag's help does; a setting without a flag may leave it to its docs.
            let range = match d.kind {
                Kind::Count((lo, hi)) => Some(format!("Range: {lo} to {hi}")),
                Kind::Size((lo, hi)) => Some(format!("Range: {} to {}", human(lo), human(hi))),
                _ => None,
            };
            if let Some(r) = range
                && (!d.configurable() || d.help.contains("Range:"))
            {
                assert!(d.help.contains(&r), "{}: {} lacks {r}", d.name, d.help);
            }
            if let Some(v) = d.default {
                match d.kind {
                    Kind::Count((lo, hi)) => {
                        check_count(v, lo, hi).unwrap();
                    }
                    Kind::Choice(words) => assert!(words.contains(&v), "{}", d.name),
                    _ => {}
                }
            }
        }
        // The settings come first, so `show all` prints them in the table's order.
        let first_flag_only = TABLE.iter().position(|d| !d.configurable()).unwrap();
        assert!(TABLE[first_flag_only..].iter().all(|d| !d.configurable()));
    }
}
