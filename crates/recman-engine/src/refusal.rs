//! Typed refusals: requests the engine turns down because they are wrong or do not fit the
//! state they meet. Every refusal is [`crate::error::ErrorKind::InvalidInput`], reaches the caller as
//! [`crate::EngineError::Refused`], and prints exactly the words the user has always seen.
//!
//! # Why a type of its own
//! A refusal that recurs (the same check in several commands, or one a caller may want to
//! tell apart) gets a variant with the values it names as fields, so code that needs to
//! know which refusal it met matches the variant, never the text, and a new site reuses the
//! words instead of writing them again. The variants are grouped in families by what was
//! refused, one small file each, so no file holds every message of the engine:
//! - [`Cluster`]: a data directory, server, agent or standby that is not the cluster the
//!   command is for, or whose state (running, not shut down cleanly) forbids the command;
//! - [`Wal`]: names that are not WAL files or segments, and archiving that would overwrite
//!   or leak;
//! - [`Input`]: values and options of the request (sizes, windows, recovery targets, FORMAT
//!   templates, ranges, device types);
//! - [`Backups`]: backups, image copies and restores that do not fit the request (not
//!   AVAILABLE, a tag already taken, a partial restore of what restores whole only, a target
//!   directory that is not empty);
//! - [`Fleet`]: the fleet transport's rules (TLS files, a certificate's databases, an
//!   agent's requests);
//! - [`Import`]: another tool's backups recman does not read.
//!
//! `EngineError::Invalid`, a bare message, stays for a refusal that occurs once and that no
//! code needs to recognise; docs/errors.md has the rule.
//!
//! This module imports nothing of the engine, so every engine file can use it.

mod backups;
mod cluster;
mod fleet;
mod import;
mod input;
mod wal;

pub use backups::{Backups, Unavailable};
pub use cluster::Cluster;
pub use fleet::Fleet;
pub use import::Import;
pub use input::Input;
pub use wal::{SegmentUse, Wal};

/// A request the engine refused ([`crate::error::ErrorKind::InvalidInput`]), by family.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    Cluster(#[from] Cluster),
    #[error(transparent)]
    Wal(#[from] Wal),
    #[error(transparent)]
    Input(#[from] Input),
    #[error(transparent)]
    Backups(#[from] Backups),
    #[error(transparent)]
    Fleet(#[from] Fleet),
    #[error(transparent)]
    Import(#[from] Import),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variants that assemble their words from parts print what the user always saw.
    #[test]
    fn assembled_refusals_print_the_words_users_know() {
        let r = Refusal::from(Backups::NotAvailable {
            backup_id: "B1".into(),
            status: "EXPIRED".into(),
            for_: Unavailable::Validate,
        });
        assert_eq!(
            r.to_string(),
            "backup B1 is EXPIRED, not AVAILABLE; nothing to validate; hint: `recman list backup` shows its error"
        );
        let r = Wal::NotSegment {
            name: "x".into(),
            for_: SegmentUse::Prefetch,
        };
        assert_eq!(
            r.to_string(),
            "\"x\" is not a wal segment name; hint: archive-prefetch is started by archive-get for a segment"
        );
        let r = Cluster::NeedsDataDir {
            what: "recover block".into(),
            agent_ok: false,
        };
        assert_eq!(
            r.to_string(),
            "recover block needs the cluster's data directory; hint: give --pgdata DIR"
        );
        let e = crate::error::EngineError::from(Input::AtLeastOne {
            options: "--channels",
        });
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "--channels must be at least 1");
    }
}
