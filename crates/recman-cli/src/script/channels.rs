//! What the statements share about a block's channels: the options every channel agrees on,
//! their device type, FORMAT templates, and RMAN's compression names.

use super::block::Block;
use super::device::device_word;
use super::refuse::unsupported;
use super::session::note;
use crate::cli::Global;
use anyhow::{Result, bail};
use recman_lang::*;

/// What a command takes of the options its block's channels agree on. A channel option the
/// command has no field for is refused (or, for FORMAT, noted) against the statement.
#[derive(Default, Clone, Copy)]
pub(crate) struct Takes {
    /// CONNECT to another server: a streaming standby the channels read.
    pub standby: bool,
    pub maxopenfiles: bool,
    pub rate: bool,
    /// FORMAT with a location (BACKUP DATABASE's `format`).
    pub format: bool,
}

/// The options every channel of a block agrees on.
#[derive(Default, Debug)]
pub(crate) struct ChannelOpts {
    /// How many channels the block allocated; None without any.
    pub channels: Option<u32>,
    pub maxopenfiles: Option<u32>,
    pub rate: Option<String>,
    pub standby: Option<String>,
    /// CONNECT 'https://HOST:PORT': the standby's agent the channels read through.
    pub standby_agent: Option<String>,
    /// A FORMAT template with a location that every channel gives.
    pub format: Option<String>,
    /// The option-table settings every channel gives (MAXPIECESIZE), by row name; BACKUP
    /// DATABASE takes them, the other commands have no pieces to cut.
    pub table: std::collections::BTreeMap<&'static str, String>,
}

/// RMAN's compression algorithm names mapped to recman's codecs.
pub(crate) fn compression(algorithm: &str) -> Result<&'static str> {
    Ok(match algorithm.to_ascii_uppercase().as_str() {
        "BASIC" | "MEDIUM" | "ZSTD" => "zstd",
        "LOW" | "LZ4" => "lz4",
        "HIGH" => "zstd:19",
        other => bail!(
            "compression algorithm '{other}' is unknown; hint: BASIC, LOW (lz4), MEDIUM (zstd) or HIGH (zstd level 19)"
        ),
    })
}

/// The options every channel of the block agrees on, for a command that `takes` them. The
/// channels' device type is the caller's (see [`channels_device`]); their PARMS were
/// checked when they were allocated.
pub(crate) fn channel_args(b: &Block, g: &Global, takes: Takes) -> Result<ChannelOpts> {
    let mut out = ChannelOpts::default();
    if b.channels.is_empty() {
        return Ok(out);
    }
    out.channels = Some(u32::try_from(b.channels.len()).unwrap_or(u32::MAX));
    let mut maxopen = None;
    let mut rate = None;
    let mut standby: Option<String> = None;
    let mut standby_agent: Option<String> = None;
    let mut format: Option<String> = None;
    let mut maxpiece = None;
    for c in &b.channels {
        for op in &c.ops {
            if let ChannelOp::Connect(url) = op
                && super::channel_agent::is_agent_url(url)
            {
                super::channel_agent::take(&mut standby_agent, url, &c.name, takes.standby)?;
                continue;
            }
            // A net service name (`/@instance1`) is a pg_service.conf service; a channel
            // connected to the target itself reads what every channel reads.
            let aliased;
            let op = match op {
                ChannelOp::Connect(cs) if cs != "/" => {
                    let conninfo = super::service::alias(cs);
                    if g.target.as_deref() == Some(conninfo.as_str())
                        || super::service::same_server(g.target.as_deref(), &conninfo)?
                    {
                        &ChannelOp::Connect("/".into())
                    } else {
                        aliased = ChannelOp::Connect(conninfo);
                        &aliased
                    }
                }
                other => other,
            };
            match op {
                ChannelOp::MaxOpenFiles(n) => agree(&mut maxopen, *n, &c.name, "MAXOPENFILES")?,
                ChannelOp::Rate(s) => agree(&mut rate, s.bytes(), &c.name, "RATE")?,
                // A channel connected to another server reads a streaming standby of the
                // target (the RAC instances of the seeds): BACKUP's --standby.
                ChannelOp::Connect(cs)
                    if cs != "/" && g.target.as_deref() != Some(cs.as_str()) && takes.standby =>
                {
                    if let Some(old) = &standby
                        && old != cs
                        && !super::service::same_server(Some(old), cs)?
                    {
                        bail!(
                            "channel {}: CONNECT '{}' (the standby it reads) differs from another channel's '{}'; recman applies one value to all channels of a command; hint: give every channel the same CONNECT",
                            c.name,
                            recman_command::model::redact_conninfo(cs),
                            recman_command::model::redact_conninfo(old)
                        );
                    }
                    standby = Some(cs.clone());
                }
                ChannelOp::Connect(cs) => {
                    if cs != "/" && g.target.as_deref() != Some(cs.as_str()) {
                        bail!(
                            "{}",
                            unsupported(
                                &format!(
                                    "channel {} CONNECT '{}' (a channel reading from another server)",
                                    c.name,
                                    recman_command::model::redact_conninfo(cs)
                                ),
                                "drop CONNECT: every channel reads the target's data directory"
                            )
                        );
                    }
                }
                ChannelOp::Format(f) if takes.format && !names_only(f) => {
                    agree(&mut format, one_template(f)?, &c.name, "FORMAT")?
                }
                ChannelOp::Format(f) => format_without_flag(
                    g,
                    "channel FORMAT",
                    f,
                    "pieces are named by the repository",
                )?,
                ChannelOp::MaxPieceSize(s) => {
                    agree(&mut maxpiece, s.bytes(), &c.name, "MAXPIECESIZE")?
                }
                ChannelOp::Parms(_) => {}
                ChannelOp::Send(_) => bail!("channel {}: {}", c.name, super::refuse::SEND),
            }
        }
    }
    out.standby = standby;
    out.standby_agent = standby_agent;
    out.format = format;
    let piece = recman_command::option_table::MAXPIECESIZE.name;
    out.table.extend(maxpiece.map(|n| (piece, n.to_string())));
    if takes.maxopenfiles {
        out.maxopenfiles = maxopen.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    }
    if let Some(r) = rate {
        if !takes.rate {
            bail!("{}", unsupported("channel RATE", "drop RATE"));
        }
        out.rate = Some(r.to_string());
    }
    Ok(out)
}

fn agree<T: PartialEq + std::fmt::Display>(
    slot: &mut Option<T>,
    v: T,
    channel: &str,
    what: &str,
) -> Result<()> {
    match slot {
        Some(old) if *old != v => bail!(
            "channel {channel}: {what} {v} differs from another channel's {old}; recman applies one value to all channels of a command; hint: give every channel the same {what}"
        ),
        _ => *slot = Some(v),
    }
    Ok(())
}

/// A number of a statement as a command's u32 option; beyond u32 it is out of every range.
pub(crate) fn fit(n: u64, option: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        anyhow::anyhow!(
            "invalid value \"{n}\" for --{option}: expected at most {}; hint: docs/commands.md gives each option's range",
            u32::MAX
        )
    })
}

/// The device type that every channel of the block shares; None without channels.
pub(crate) fn channels_device(b: &Block) -> Result<Option<&'static str>> {
    let mut found: Option<(&'static str, &str)> = None;
    for c in &b.channels {
        let w = device_word(&c.device)?;
        match found {
            Some((d, first)) if d != w => bail!(
                "channel {} is DEVICE TYPE {} but channel {first} is DEVICE TYPE {}: recman writes one command to one device type; hint: allocate every channel of the block with the same DEVICE TYPE, or RELEASE CHANNEL {first} first",
                c.name,
                w.to_uppercase(),
                d.to_uppercase()
            ),
            Some(_) => {}
            None => found = Some((w, &c.name)),
        }
    }
    Ok(found.map(|(d, _)| d))
}

/// Whether FORMAT templates only name pieces (`'%U_%t'`): no directory, disk group or share.
pub(crate) fn names_only(templates: &[String]) -> bool {
    templates
        .iter()
        .all(|t| !t.is_empty() && !t.contains(['/', '\\']) && !t.starts_with('+'))
}

/// The one template of a FORMAT with a location: recman writes one copy of each piece.
pub(crate) fn one_template(templates: &[String]) -> Result<String> {
    match templates {
        [one] => Ok(one.clone()),
        _ => bail!(
            "{}",
            unsupported(
                "FORMAT with several templates (a piece copy per template)",
                "give one FORMAT template"
            )
        ),
    }
}

/// FORMAT where the command has no --format: templates that only name pieces are accepted
/// with a note (recman names every piece itself, uniquely, as %U does); a template with a
/// place in it would put pieces elsewhere and is refused.
pub(crate) fn format_without_flag(
    g: &Global,
    what: &str,
    templates: &[String],
    hint: &str,
) -> Result<()> {
    if !names_only(templates) {
        bail!("{}", unsupported(what, hint));
    }
    let shown: Vec<String> = templates.iter().map(|t| format!("'{t}'")).collect();
    note(
        g,
        &format!(
            "{what} {}: recman names every piece itself, uniquely (as %U does), and places it on the device; a template that only names pieces adds nothing and is not kept",
            shown.join(", ")
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_templates() {
        assert!(names_only(&["%U_%t".into()]));
        assert!(!names_only(&["/backup/%U".into()]));
        assert!(!names_only(&["\\\\host\\share\\%U".into()]));
        assert!(!names_only(&["+DATA".into()]));
    }
}
