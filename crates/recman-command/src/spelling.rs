//! The command line's names for the remedies the engine's hints speak of ([`Action`]): an
//! engine error says "restore from another, intact backup by its tag", and the CLI adds
//! `--from-tag TAG`. The RMAN language names them its own way (the script runner's spelling).

use crate::error::ExecError;
use recman_engine::{Action, EngineError, Spell};
use std::borrow::Cow;

/// The CLI's flags for each action.
pub struct CliFlags;

impl Spell for CliFlags {
    fn spell(&self, action: Action) -> Cow<'static, str> {
        Cow::Borrowed(match action {
            Action::RestoreFromTag => "--from-tag TAG",
            Action::AllowWalGap => "--allow-wal-gap",
            Action::RecoverUntil => "--until-time or --until-lsn",
            Action::ClearInterruptedRestore => "--force",
            Action::AcceptCorruptBlocks => "--maxcorrupt N",
        })
    }
}

/// The engine error `e` is, or wraps without words of its own (the executor's and the
/// front end's transparent wrappers).
pub fn engine_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a EngineError> {
    if let Some(engine) = e.downcast_ref::<EngineError>() {
        return Some(engine);
    }
    match e.downcast_ref::<ExecError>()? {
        ExecError::Engine(engine) => Some(engine),
        ExecError::Env(inner) => inner.downcast_ref::<EngineError>(),
        _ => None,
    }
}

/// `e`'s text with the actions its hint names spelled by `spell`, when it names any.
pub fn spelled(e: &(dyn std::error::Error + 'static), spell: &dyn Spell) -> Option<String> {
    let engine = engine_error(e)?;
    if engine.actions().is_empty() {
        return None;
    }
    Some(engine.render(spell))
}

#[cfg(test)]
mod tests {
    use super::*;
    use recman_engine::{ErrorKind, Hint};

    #[test]
    fn the_cli_names_its_flag_after_the_engine_words() {
        let e = ExecError::from(EngineError::remedy(
            ErrorKind::NotFound,
            "the wal has a gap".into(),
            Hint::new().act(Action::AllowWalGap),
        ));
        let text = spelled(&e, &CliFlags).expect("names an action");
        assert_eq!(
            text,
            "the wal has a gap; hint: accept the gap and recover up to it (--allow-wal-gap)"
        );
        // The engine's own text names no flag.
        assert!(!e.to_string().contains("--allow-wal-gap"));
        let plain = ExecError::from(EngineError::Invalid("x".into()));
        assert_eq!(spelled(&plain, &CliFlags), None);
    }
}
