//! `ALLOCATE CHANNEL c DEVICE TYPE DISK CONNECT 'https://standby:8471'`: RMAN's CONNECT on a
//! channel names the instance the channel works on; a URL there names a standby's agent
//! (`recman server --pgdata` on the standby's host), and the channels read the standby's
//! relation files through it — BACKUP's `--standby-agent`. With no channel naming the
//! standby's conninfo as well, the agent's own session to the standby answers the standby's
//! checks (docs/fleet.md).

use anyhow::{Result, bail};

/// Whether a channel's CONNECT string is an agent's URL rather than a conninfo (a conninfo
/// URL starts with postgresql:// or postgres://).
pub(crate) fn is_agent_url(connect: &str) -> bool {
    connect.starts_with("https://")
}

/// Records channel `channel`'s agent URL; every channel naming an agent must name the same.
pub(crate) fn take(
    slot: &mut Option<String>,
    url: &str,
    channel: &str,
    takes_standby: bool,
) -> Result<()> {
    if !takes_standby {
        bail!(
            "{}",
            super::refuse::unsupported(
                &format!(
                    "channel {channel} CONNECT '{url}' (a channel reading through a standby's agent) for this statement"
                ),
                "only BACKUP DATABASE reads through a standby's agent; drop CONNECT here"
            )
        );
    }
    match slot {
        Some(old) if old != url => bail!(
            "channel {channel}: CONNECT '{url}' (the standby's agent it reads through) differs from another channel's '{old}'; recman applies one value to all channels of a command; hint: give every channel the same agent URL"
        ),
        _ => *slot = Some(url.to_string()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::block::{Block, Channel};
    use super::super::lower;
    use crate::cli::Global;
    use recman_command as m;
    use recman_lang::Statement;

    /// The BACKUP of a RUN block, lowered with the block's channels.
    fn lower_run(src: &str) -> anyhow::Result<m::BackupDatabase> {
        let script = recman_lang::parse_script(src).unwrap();
        let Statement::Run(stmts) = &script.statements[0].statement else {
            panic!("not a RUN block: {src}");
        };
        let g = Global {
            quiet: true,
            ..Default::default()
        };
        let mut b = Block::new(&[]);
        for s in stmts {
            match &s.statement {
                Statement::Allocate(a) => b.channels.push(Channel {
                    name: a.name.clone().unwrap_or_default(),
                    device: a.device.clone(),
                    ops: a.operands.clone(),
                }),
                Statement::Backup(bk) => {
                    return match lower::backup(&b, bk, &g)?.remove(0) {
                        m::Command::BackupDatabase(c) => Ok(*c),
                        other => panic!("{other:?}"),
                    };
                }
                other => panic!("{other:?}"),
            }
        }
        panic!("no BACKUP in {src}")
    }

    #[test]
    fn a_channel_connected_to_an_agent_reads_through_it() {
        let c = lower_run(
            "RUN { ALLOCATE CHANNEL c1 DEVICE TYPE DISK; \
             ALLOCATE CHANNEL c2 DEVICE TYPE DISK CONNECT 'https://standby:8471'; \
             BACKUP DATABASE; }",
        )
        .unwrap();
        assert_eq!(c.standby_agent.as_deref(), Some("https://standby:8471"));
        assert_eq!(
            c.standby, None,
            "the agent's session answers for the standby"
        );
        assert_eq!(c.channels, Some(2));

        // With the standby's conninfo on another channel, both are given.
        let c = lower_run(
            "RUN { ALLOCATE CHANNEL c1 DEVICE TYPE DISK CONNECT 'host=standby port=5432'; \
             ALLOCATE CHANNEL c2 DEVICE TYPE DISK CONNECT 'https://standby:8471'; \
             BACKUP DATABASE; }",
        )
        .unwrap();
        assert_eq!(c.standby.as_deref(), Some("host=standby port=5432"));
        assert_eq!(c.standby_agent.as_deref(), Some("https://standby:8471"));

        let e = lower_run(
            "RUN { ALLOCATE CHANNEL c1 DEVICE TYPE DISK CONNECT 'https://a:8471'; \
             ALLOCATE CHANNEL c2 DEVICE TYPE DISK CONNECT 'https://b:8471'; \
             BACKUP DATABASE; }",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("channel c2") && e.contains("hint:"), "{e}");
    }
}
