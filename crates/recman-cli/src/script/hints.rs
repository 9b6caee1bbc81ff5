//! The RMAN language's names for the remedies the engine's hints speak of: a statement that
//! fails is told `FROM TAG 'TAG'`, not the command line's `--from-tag TAG`.

use recman_command::model::{Action, Spell};
use std::borrow::Cow;

/// The language's clause for each action; one it has no clause for says where it is.
pub(crate) struct Clauses;

impl Spell for Clauses {
    fn spell(&self, action: Action) -> Cow<'static, str> {
        Cow::Borrowed(match action {
            Action::RestoreFromTag => "FROM TAG 'TAG'",
            Action::AllowWalGap => {
                "no statement clause says it; run `recman restore database --allow-wal-gap`"
            }
            Action::RecoverUntil => "UNTIL TIME 'DATE' or UNTIL SCN LSN",
            Action::ClearInterruptedRestore => "FORCE",
            Action::AcceptCorruptBlocks => "SET MAXCORRUPT FOR DATAFILE ... TO N",
        })
    }
}

/// `e` in the statement's words when it is an engine error whose hint names an action; any
/// other error as it is.
pub(crate) fn in_language(e: anyhow::Error) -> anyhow::Error {
    match recman_command::spelling::spelled(e.as_ref(), &Clauses) {
        Some(text) => anyhow::Error::msg(text),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recman_command::model::{EngineError, ErrorKind, Hint};

    #[test]
    fn a_statement_is_told_the_clause_not_the_flag() {
        let e = anyhow::Error::from(recman_command::ExecError::from(EngineError::remedy(
            ErrorKind::InvalidInput,
            "restore directory /x holds what an interrupted restore wrote".into(),
            Hint::new().act(Action::ClearInterruptedRestore),
        )));
        let text = in_language(e).to_string();
        assert!(text.ends_with("(FORCE)"), "{text}");
        assert!(!text.contains("--force"), "{text}");
    }
}
