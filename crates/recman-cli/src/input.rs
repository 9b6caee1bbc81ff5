//! Checks on what users type, at the door: every number has a documented range, sizes too,
//! names and tags carry no control characters, and an empty environment variable counts as
//! unset. clap runs these parsers, so the script language (lowered to the same arguments)
//! gets the same checks.

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use std::ffi::OsStr;
use std::marker::PhantomData;

mod listing;
mod secrets;

pub use listing::list_numeric_options;
pub use secrets::{redact_secrets, warn_password};

/// Parallel streams of a backup, restore or validation. Each channel is a thread with its own
/// buffers (tens of MiB): beyond a few hundred the machine runs out of threads or memory
/// before the storage runs out of bandwidth.
pub const CHANNELS: (u64, u64) = (1, 256);
/// FILESPERSET: most files in one backup set.
pub const FILESPERSET: (u64, u64) = (1, 1_000_000);
/// MAXOPENFILES: files read at once by one channel, each with its own input buffers.
pub const MAXOPENFILES: (u64, u64) = (1, 1024);
/// Kept-backup counts of retention (REDUNDANCY, BACKED UP N TIMES).
pub const COPIES: (u64, u64) = (1, 10_000);
/// SECTION SIZE: at most 256 sections a file, so small sections only help small files.
pub const SECTION_SIZE: (u64, u64) = (1 << 20, 1 << 40);
/// Days of a recovery window, of WAL a recovery may need.
pub const DAYS: (f64, f64) = (0.0, 36_500.0);

/// The range of a backup setting that `configure`, the config file and the catalog share with
/// the flag of the same name.
pub fn range_of(setting: &str) -> (u64, u64) {
    match setting {
        "channels" => CHANNELS,
        "filesperset" => FILESPERSET,
        "maxopenfiles" => MAXOPENFILES,
        _ => (1, u32::MAX as u64),
    }
}

/// A whole number within `lo..=hi`, as type `T`; the message of a refusal gives the range.
#[derive(Clone)]
pub struct Count<T> {
    lo: u64,
    hi: u64,
    _t: PhantomData<fn() -> T>,
}

pub fn count<T>(range: (u64, u64)) -> Count<T> {
    Count {
        lo: range.0,
        hi: range.1,
        _t: PhantomData,
    }
}

/// Why `text` is not a whole number in `lo..=hi`, in words that give the range.
pub fn check_count(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from {lo} to {hi}")),
    }
}

impl<T> TypedValueParser for Count<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        let bad = |why: String| invalid(cmd, arg, &text, &why);
        let n = check_count(&text, self.lo, self.hi).map_err(bad)?;
        T::try_from(n).map_err(|_| bad(format!("{n} does not fit")))
    }
}

/// A size such as 512K, 1M or 2G (bytes without a suffix) within `lo..=hi` bytes. The text is
/// kept as typed: the commands parse it again where they need the number.
#[derive(Clone)]
pub struct Size {
    lo: u64,
    hi: u64,
}

pub fn size(lo: u64, hi: u64) -> Size {
    Size { lo, hi }
}

/// Why `text` is not a size in `lo..=hi`, in words that give the range.
pub fn check_size(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let range = format!("a size from {} to {}, e.g. 1M", human(lo), human(hi));
    // parse_size saturates: "inf" and 2^64 land above any bound, "nan" at 0.
    match recman_engine::io::parse_size(text) {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("expected {range}")),
    }
}

impl TypedValueParser for Size {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        check_size(&text, self.lo, self.hi).map_err(|why| invalid(cmd, arg, &text, &why))?;
        Ok(text.into_owned())
    }
}

/// A number of days (fractions allowed) within [`DAYS`].
#[derive(Clone)]
pub struct Days;

impl TypedValueParser for Days {
    type Value = f64;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<f64, clap::Error> {
        let text = value.to_string_lossy();
        match text.trim().parse::<f64>() {
            Ok(d) if d.is_finite() && (DAYS.0..=DAYS.1).contains(&d) => Ok(d),
            _ => Err(invalid(
                cmd,
                arg,
                &text,
                &format!("expected a number of days from {} to {}", DAYS.0, DAYS.1),
            )),
        }
    }
}

/// A name, tag or id: no control characters (they would be printed raw to terminals and
/// logs), not empty, at most 200 characters.
#[derive(Clone)]
pub struct Name;

pub fn check_name(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("it is empty".into());
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "it holds the control character {:?}; hint: use letters, digits and punctuation",
            c
        ));
    }
    if text.chars().count() > 200 {
        return Err("it is longer than 200 characters".into());
    }
    Ok(())
}

impl TypedValueParser for Name {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        check_name(&text).map_err(|why| invalid(cmd, arg, &text, &why))?;
        Ok(text.into_owned())
    }
}

fn invalid(cmd: &clap::Command, arg: Option<&clap::Arg>, text: &str, why: &str) -> clap::Error {
    let name = match arg {
        Some(a) => match a.get_long() {
            Some(l) => format!("--{l}"),
            None => a
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string())
                .unwrap_or_else(|| a.get_id().to_string()),
        },
        None => "value".to_string(),
    };
    // Debug quoting: a control character in the value is shown escaped, never raw.
    let shown: String = text.chars().take(64).collect();
    let more = if text.chars().count() > 64 { "..." } else { "" };
    clap::Error::raw(
        ErrorKind::ValueValidation,
        format!("invalid value {shown:?}{more} for {name}: {why}\n"),
    )
    .with_cmd(cmd)
}

/// clap takes an empty environment variable (`RECMAN_PGDATA=`) for a value, and an empty path
/// then breaks every command. Empty means unset, for recman's variables and libpq's alike.
pub fn unset_empty_env() {
    let empty: Vec<_> = std::env::vars_os()
        .filter(|(k, v)| {
            let k = k.to_string_lossy();
            v.is_empty() && (k.starts_with("RECMAN_") || k.starts_with("PG"))
        })
        .map(|(k, _)| k)
        .collect();
    for k in empty {
        // SAFETY: called first thing in main, before any other thread exists.
        unsafe { std::env::remove_var(k) };
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
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
}
