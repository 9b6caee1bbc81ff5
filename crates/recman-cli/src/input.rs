//! Checks on what users type, at the door: every number has a documented range, sizes too,
//! names and tags carry no control characters, and an empty environment variable counts as
//! unset. clap runs these parsers, so the script language (lowered to the same arguments)
//! gets the same checks.

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use std::ffi::OsStr;
use std::marker::PhantomData;

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

/// A password inside a connection string typed on the command line is visible to every user
/// of the host (`ps`) and stays in shell history: say so once, and where it belongs instead.
pub fn warn_password(what: &str, conninfo: &str) {
    if recman_pg::conninfo_has_password(conninfo) {
        eprintln!(
            "recman: warning: the password in {what} is visible to other users of this host and kept in shell history; hint: put it in ~/.pgpass (mode 0600) or PGPASSWORD instead"
        );
    }
}

/// For the test that feeds every numeric option out-of-range values: one JSON line per numeric
/// option of every subcommand (hidden ones too), with its help text, which must state the
/// range, and what the subcommand requires besides (so that a valid value reaches the
/// command itself). Printed when RECMAN_LIST_NUMERIC_OPTIONS is set.
pub fn list_numeric_options(cmd: &clap::Command, path: &mut Vec<String>) {
    use clap::builder::ValueParser;
    let numeric = [
        ValueParser::from(clap::value_parser!(u8)).type_id(),
        ValueParser::from(clap::value_parser!(u16)).type_id(),
        ValueParser::from(clap::value_parser!(u32)).type_id(),
        ValueParser::from(clap::value_parser!(u64)).type_id(),
        ValueParser::from(clap::value_parser!(usize)).type_id(),
        ValueParser::from(clap::value_parser!(i64)).type_id(),
        ValueParser::from(clap::value_parser!(f64)).type_id(),
    ];
    let required: Vec<serde_json::Value> = cmd
        .get_arguments()
        .filter(|a| a.is_required_set() && !a.is_global_set())
        .map(|a| {
            let fill = a
                .get_possible_values()
                .first()
                .map(|v| v.get_name().to_string())
                .unwrap_or_else(|| "1".to_string());
            serde_json::json!({"long": a.get_long(), "id": a.get_id().as_str(), "fill": fill})
        })
        .collect();
    for a in cmd.get_arguments() {
        let Some(long) = a.get_long() else { continue };
        let takes_value = a.get_action().takes_values();
        let is_size = a
            .get_value_names()
            .is_some_and(|v| v.iter().any(|n| n.as_str() == "SIZE"));
        let is_number = numeric.contains(&a.get_value_parser().type_id());
        if !takes_value || !(is_size || is_number) || a.is_global_set() && !path.is_empty() {
            continue;
        }
        let line = serde_json::json!({
            "path": path,
            "option": format!("--{long}"),
            "id": a.get_id().as_str(),
            "kind": if is_size { "size" } else { "number" },
            "help": a.get_help().map(|h| h.to_string()).unwrap_or_default(),
            "required": required,
        });
        println!("{line}");
    }
    for sub in cmd.get_subcommands() {
        path.push(sub.get_name().to_string());
        list_numeric_options(sub, path);
        path.pop();
    }
}

/// Takes passwords out of any text about to be printed: `password=VALUE` (quoted or not, any
/// case, spaces around `=`) and the password of a `scheme://user:password@host` URI. The last
/// guard for messages that quote what the user typed (a script line, a lowered command).
pub fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let lower = text.to_ascii_lowercase();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if lower[i..].starts_with("password") {
            let mut j = i + "password".len();
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j < b.len() && b[j] == b'=' {
                j += 1;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                let end = value_end(b, j);
                out.push_str(&text[i..i + "password".len()]);
                out.push_str("=***");
                i = end;
                continue;
            }
        }
        if lower[i..].starts_with("://") {
            let start = i + 3;
            let mut end = start;
            while end < b.len() && !b" /?'\"\t\n".contains(&b[end]) {
                end += 1;
            }
            let auth = &text[start..end];
            if let Some(at) = auth.rfind('@')
                && let Some(colon) = auth[..at].find(':')
            {
                out.push_str("://");
                out.push_str(&auth[..colon]);
                out.push_str(":***");
                out.push_str(&auth[at..]);
                i = end;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Where a conninfo value starting at `j` ends: past its closing quote when quoted (or at the
/// end of the text when the quote is never closed), else at the next space, quote or `&`.
fn value_end(b: &[u8], j: usize) -> usize {
    // Inside a script's '...' string a quote is doubled: ''a b'' is the quoted value.
    if b[j..].starts_with(b"''") {
        let mut k = j + 2;
        while k < b.len() && !b[k..].starts_with(b"''") {
            k += 1;
        }
        return (k + 2).min(b.len());
    }
    if j < b.len() && b[j] == b'\'' {
        let mut k = j + 1;
        while k < b.len() {
            match b[k] {
                b'\\' => k += 2,
                b'\'' => return k + 1,
                _ => k += 1,
            }
        }
        return b.len();
    }
    let mut k = j;
    while k < b.len() && !b" '\"&\t\n".contains(&b[k]) {
        k += 1;
    }
    k
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

    #[test]
    fn secrets_are_redacted_from_any_text() {
        for (text, secret) in [
            (
                "line 1: CONNECT TARGET 'host=h password = ''a b'' user=u';",
                "a b",
            ),
            (
                "recman backup database --standby host=h PASSWORD=s3cret",
                "s3cret",
            ),
            (
                "CONNECT TARGET \"postgresql://u:s3cret@h:5432/db\";",
                "s3cret",
            ),
            ("password='unterminated s3cret", "s3cret"),
            ("x?password=s3cret&host=h", "s3cret"),
        ] {
            let r = redact_secrets(text);
            assert!(!r.contains(secret), "{text} -> {r}");
        }
        let keep = "password authentication failed; hint: ~/.pgpass or PGPASSWORD";
        assert_eq!(redact_secrets(keep), keep);
        assert_eq!(redact_secrets("postgresql://u@h/db"), "postgresql://u@h/db");
    }
}
