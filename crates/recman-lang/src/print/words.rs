//! How strings, names and lists are written in canonical form.

/// `s` quoted so that it lexes back: single quotes, else double, else typographic `‘…’` or `“…”`,
/// the first whose closing quote `s` lacks. Strings have no escapes, so one the lexer read always
/// lacks one of them.
pub(crate) fn q(s: &str) -> String {
    let quotes = [
        ('\'', '\''),
        ('"', '"'),
        ('\u{2018}', '\u{2019}'),
        ('\u{201C}', '\u{201D}'),
    ];
    let (open, close) = quotes
        .into_iter()
        .find(|&(_, close)| !s.contains(close))
        .unwrap_or(quotes[0]);
    format!("{open}{s}{close}")
}

/// A name bare when it lexes as one word, quoted otherwise.
pub(crate) fn name(s: &str) -> String {
    let bare = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if bare { s.to_string() } else { q(s) }
}

pub(crate) fn list<T>(v: &[T], f: impl Fn(&T) -> String) -> String {
    v.iter().map(f).collect::<Vec<_>>().join(", ")
}
