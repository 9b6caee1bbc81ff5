//! Device types as the language names them (DISK, SBT, S3) and the PARMS of their channels:
//! what CONFIGURE, ALLOCATE CHANNEL and the BACKUP and RESTORE statements share.

use crate::cli::Global;
use crate::device_cmds::{blksize_key, env_key, parse_blksize, parse_env};
use anyhow::{Result, bail};
use recman_command::configure::{own_device, stored};
use recman_command::precedence::device_key;
use recman_lang::*;

/// recman's name of a device type (`recman … --device-type NAME`).
pub(crate) fn device_word(d: &Device) -> Result<&'static str> {
    Ok(match d {
        Device::Disk => "disk",
        Device::Sbt => "sbt",
        Device::S3 => "s3",
        Device::Other(x) => bail!(
            "DEVICE TYPE '{x}' is not a device type of recman; hint: DISK, SBT (the virtual tape library or a media-manager plugin) or S3"
        ),
    })
}

/// The prefixes of recman's device specifications.
const SPEC_PREFIXES: [&str; 7] = [
    "vtape:", "plugin:", "s3://", "azure://", "gs://", "disk:/", "/",
];

/// What a PARMS string says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parms {
    /// A recman device specification: `vtape:/dir[,…]`, `plugin:PROGRAM ARGS`,
    /// `s3://bucket/prefix` or `/dir`.
    Spec(String),
    /// RMAN's settings: `BLKSIZE=n` (in bytes here) and `ENV=(K=V, …)` (as `K=V,…`).
    Settings {
        blksize: Option<u64>,
        env: Option<String>,
    },
}

impl Parms {
    /// The words of `recman configure device-type T …` that store it.
    pub(crate) fn words(&self) -> Vec<String> {
        match self {
            Parms::Spec(s) => vec!["parms".into(), s.clone()],
            Parms::Settings { blksize, env } => {
                let mut v = Vec::new();
                if let Some(b) = blksize {
                    v.extend(["blksize".to_string(), b.to_string()]);
                }
                if let Some(e) = env {
                    v.extend(["env".to_string(), e.clone()]);
                }
                v
            }
        }
    }
}

const PARMS_HINT: &str = "recman's way: PARMS 'vtape:/dir' (the built-in virtual tape library) or PARMS 'plugin:PROGRAM ARGS' (an external media-manager plugin); of RMAN's settings recman keeps BLKSIZE=n and ENV=(NAME=VALUE, …)";

/// Splits at the commas outside parentheses.
fn top_level_items(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Reads a PARMS string: a recman device specification, or RMAN's `KEY=VALUE` settings of
/// which BLKSIZE and ENV are kept; any other key is refused naming it.
pub(crate) fn parse_parms(text: &str) -> Result<Parms> {
    let t = text.trim();
    if SPEC_PREFIXES.iter().any(|p| t.starts_with(p)) {
        return Ok(Parms::Spec(t.to_string()));
    }
    let (mut blksize, mut env) = (None, None);
    for item in top_level_items(t)
        .into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        let Some((key, value)) = item.split_once('=') else {
            bail!(
                "PARMS '{text}': {item:?} is neither a recman device specification nor KEY=VALUE; hint: {PARMS_HINT}"
            );
        };
        let (key, value) = (key.trim().to_ascii_uppercase(), value.trim());
        match key.as_str() {
            "BLKSIZE" if blksize.is_none() => blksize = Some(parse_blksize(value)?),
            "ENV" if env.is_none() => {
                let inner = match value.strip_prefix('(') {
                    Some(v) => v.strip_suffix(')').ok_or_else(|| {
                        anyhow::anyhow!("PARMS '{text}': ENV=({v} lacks its closing parenthesis")
                    })?,
                    None => value,
                };
                env = Some(parse_env(inner)?);
            }
            "BLKSIZE" | "ENV" => bail!("PARMS '{text}': {key} is given twice; hint: give it once"),
            other => bail!(
                "PARMS key {other} is not supported by recman (it configures Oracle's media-management library); hint: {PARMS_HINT}"
            ),
        }
    }
    if blksize.is_none() && env.is_none() {
        bail!("PARMS '{text}' says nothing; hint: {PARMS_HINT}");
    }
    Ok(Parms::Settings { blksize, env })
}

/// An ALLOCATE CHANNEL's PARMS: the channel uses its device type's configuration, so PARMS
/// may only repeat what CONFIGURE CHANNEL … PARMS stored.
pub(crate) fn check_channel_parms(
    g: &Global,
    channel: &str,
    device: &Device,
    parms: &str,
) -> Result<()> {
    let t = device_word(device)?;
    let parsed = parse_parms(parms)?;
    let repo = crate::open::open_repo(g)?;
    let configure = format!("CONFIGURE CHANNEL DEVICE TYPE {device} PARMS '{parms}'");
    let mut wanted: Vec<(String, String, String)> = Vec::new();
    match &parsed {
        Parms::Spec(s) => wanted.push((device_key(t, "parms"), s.clone(), "the device".into())),
        Parms::Settings { blksize, env } => {
            if let Some(b) = blksize {
                wanted.push((blksize_key(t), b.to_string(), "BLKSIZE".into()));
            }
            if let Some(e) = env {
                wanted.push((env_key(t), e.clone(), "ENV".into()));
            }
        }
    }
    for (key, value, what) in wanted {
        match stored(&repo, &key)? {
            Some(c) if c == value => {}
            Some(c) => bail!(
                "channel {channel}: PARMS '{parms}' differs from {what} configured for DEVICE TYPE {device} ({c}); a channel uses its device type's configuration; hint: {configure} to change it, then ALLOCATE CHANNEL {channel} DEVICE TYPE {device} without PARMS"
            ),
            None => bail!(
                "channel {channel}: PARMS '{parms}': a channel uses its device type's configuration, and {what} of DEVICE TYPE {device} is not configured; hint: {configure} first, then ALLOCATE CHANNEL {channel} DEVICE TYPE {device} without PARMS"
            ),
        }
    }
    Ok(())
}

/// The device type a second-tier copy (`what`) goes to when neither the statement nor the
/// block's channels name one: the configured default device type, which must not be the
/// repository's own.
pub(crate) fn default_for_copy(g: &Global, what: &str) -> Result<String> {
    let repo = crate::open::open_repo(g)?;
    let own = own_device(&repo);
    let detail = match stored(&repo, "default-device-type")? {
        Some(d) if d != own => return Ok(d),
        Some(d) => format!(
            " (the default device type, {}, is the repository itself)",
            d.to_uppercase()
        ),
        None => String::new(),
    };
    bail!(
        "{what} needs a device type other than the repository's{detail}; hint: CONFIGURE DEFAULT DEVICE TYPE TO SBT and CONFIGURE CHANNEL DEVICE TYPE SBT PARMS 'vtape:/dir' (or name it: BACKUP DEVICE TYPE SBT …)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parms_strings() {
        assert_eq!(
            parse_parms("vtape:/srv/vtape,drives=2").unwrap(),
            Parms::Spec("vtape:/srv/vtape,drives=2".into())
        );
        assert_eq!(
            parse_parms("BLKSIZE=1048576, ENV=(NB_ORA_CLASS=Oracle_backup)").unwrap(),
            Parms::Settings {
                blksize: Some(1 << 20),
                env: Some("NB_ORA_CLASS=Oracle_backup".into())
            }
        );
        assert_eq!(
            parse_parms("ENV=(A=1, B = 2)").unwrap().words(),
            ["env", "A=1,B=2"]
        );
        let e = parse_parms("SBT_LIBRARY=/opt/lib/libobk.so").unwrap_err();
        assert!(
            e.to_string().contains("SBT_LIBRARY") && e.to_string().contains("vtape:/dir"),
            "{e}"
        );
        assert!(parse_parms("BLKSIZE=1000").is_err());
        assert!(parse_parms("VTAPE").is_err());
        assert!(parse_parms("ENV=(A=1").is_err());
    }
}
