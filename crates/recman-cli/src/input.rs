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

// The ranges and checks are the command model's: a script's statement gets the same ones.
pub use recman_command::check_count;
pub use recman_command::ranges::{CHANNELS, COPIES, DAYS, FILESPERSET, MAXOPENFILES};

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

/// The parser of a count row of the option table: its range, as type `T`.
pub fn count_of<T>(d: &recman_command::option_table::OptionDef) -> Count<T> {
    count(d.range())
}

/// The parser of a size row of the option table: its range.
pub fn size_of(d: &recman_command::option_table::OptionDef) -> Size {
    let (lo, hi) = d.range();
    size(lo, hi)
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

pub use recman_command::check_size;

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

pub use recman_command::check_name;

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
