//! Remedies a hint names by what to do, not by how one front end spells it. The engine says
//! "restore from another backup by its tag"; the CLI adds `--from-tag TAG`, the RMAN language
//! `FROM TAG 'TAG'` ([`Spell`]). An error that names such a remedy is an
//! [`EngineError::Remedy`](crate::error::EngineError::Remedy); its `Display` is the engine's words, and
//! [`EngineError::render`](crate::error::EngineError::render) spells it for one front end.

use recman_error::ErrorKind;
use std::borrow::Cow;
use std::fmt;

/// A remedy that the front ends expose under different names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Restore (or recover) from another backup, chosen by its tag.
    RestoreFromTag,
    /// Recover up to a hole in the WAL archive and accept that what follows it is lost.
    AllowWalGap,
    /// Stop recovery at a target (a time or an LSN) before a named point.
    RecoverUntil,
    /// Clear what an interrupted restore left in the target before restoring again.
    ClearInterruptedRestore,
    /// Accept up to N corrupt blocks per file in a backup.
    AcceptCorruptBlocks,
}

impl Action {
    /// The engine's words for the action, used when no front end spells it.
    pub fn words(self) -> &'static str {
        match self {
            Action::RestoreFromTag => "restore from another, intact backup by its tag",
            Action::AllowWalGap => "accept the gap and recover up to it",
            Action::RecoverUntil => "recover to a target before it",
            Action::ClearInterruptedRestore => {
                "run the restore again, telling it to clear what the interrupted one wrote"
            }
            Action::AcceptCorruptBlocks => "accept the blocks by raising the corrupt-block limit",
        }
    }
}

/// How one front end names actions: `spell` returns its flag or clause ("" for none).
pub trait Spell {
    fn spell(&self, action: Action) -> Cow<'static, str>;
}

/// The engine's own spelling: the words alone.
pub struct Words;

impl Spell for Words {
    fn spell(&self, _: Action) -> Cow<'static, str> {
        Cow::Borrowed("")
    }
}

/// One piece of a hint: text as it is, or an action in words followed by its spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HintPart {
    Text(Cow<'static, str>),
    /// `words` replaces the action's own words when the hint says it more precisely
    /// ("restore to a target before segment X").
    Do {
        action: Action,
        words: Option<Cow<'static, str>>,
    },
}

/// A hint made of parts, rendered for one front end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hint(pub Vec<HintPart>);

impl Hint {
    pub fn new() -> Self {
        Hint(Vec::new())
    }
    pub fn text(mut self, t: impl Into<Cow<'static, str>>) -> Self {
        self.0.push(HintPart::Text(t.into()));
        self
    }
    pub fn act(mut self, action: Action) -> Self {
        self.0.push(HintPart::Do {
            action,
            words: None,
        });
        self
    }
    /// The action in words of its own.
    pub fn act_as(mut self, action: Action, words: impl Into<Cow<'static, str>>) -> Self {
        self.0.push(HintPart::Do {
            action,
            words: Some(words.into()),
        });
        self
    }
    /// The actions this hint names.
    pub fn actions(&self) -> impl Iterator<Item = Action> + '_ {
        self.0.iter().filter_map(|p| match p {
            HintPart::Do { action, .. } => Some(*action),
            HintPart::Text(_) => None,
        })
    }
    pub fn render(&self, spell: &dyn Spell) -> String {
        let mut s = String::new();
        for p in &self.0 {
            match p {
                HintPart::Text(t) => s.push_str(t),
                HintPart::Do { action, words } => {
                    s.push_str(words.as_deref().unwrap_or(action.words()));
                    let spelled = spell.spell(*action);
                    if !spelled.is_empty() {
                        s.push_str(" (");
                        s.push_str(&spelled);
                        s.push(')');
                    }
                }
            }
        }
        s
    }
}

/// An error whose hint names actions: `message` is everything before "; hint: ".
#[derive(Debug)]
pub struct Remedy {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Hint,
}

impl Remedy {
    pub fn render(&self, spell: &dyn Spell) -> String {
        format!("{}; hint: {}", self.message, self.hint.render(spell))
    }
}

impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&Words))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Flags;
    impl Spell for Flags {
        fn spell(&self, a: Action) -> Cow<'static, str> {
            match a {
                Action::AllowWalGap => "--allow-wal-gap".into(),
                _ => "".into(),
            }
        }
    }

    #[test]
    fn a_hint_says_the_action_and_each_front_end_adds_its_name() {
        let h = Hint::new()
            .act_as(Action::RecoverUntil, "recover to a target before segment 9")
            .text(", or ")
            .act(Action::AllowWalGap);
        assert_eq!(
            h.render(&Words),
            "recover to a target before segment 9, or accept the gap and recover up to it"
        );
        assert_eq!(
            h.render(&Flags),
            "recover to a target before segment 9, or accept the gap and recover up to it (--allow-wal-gap)"
        );
        assert_eq!(
            h.actions().collect::<Vec<_>>(),
            [Action::RecoverUntil, Action::AllowWalGap]
        );
    }
}
