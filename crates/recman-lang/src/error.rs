//! Parse errors: where (line, column, the source line and a caret) and what was expected.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A token that no rule accepts here, with the alternatives the parser tried.
    Unexpected {
        found: String,
        expected: Vec<String>,
    },
    UnterminatedQuote {
        quote: char,
    },
    BadCharacter {
        ch: char,
    },
    /// A well-formed token with a value the statement cannot take.
    Invalid {
        message: String,
    },
}

/// A syntax error in a script. Nothing of a script runs when it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub kind: ErrorKind,
    /// The source line the error is on, for the caret display.
    pub source_line: String,
}

impl ParseError {
    pub(crate) fn new(src: &str, line: usize, column: usize, kind: ErrorKind) -> ParseError {
        let source_line = src
            .split('\n')
            .nth(line.saturating_sub(1))
            .unwrap_or("")
            .trim_end_matches('\r')
            .to_string();
        ParseError {
            line,
            column,
            kind,
            source_line,
        }
    }

    /// The first line of the message, without the caret display.
    pub fn headline(&self) -> String {
        let at = format!("at line {} column {}", self.line, self.column);
        match &self.kind {
            ErrorKind::Unexpected { found, expected } => {
                let mut s = format!("syntax error {at}: found {found}");
                if !expected.is_empty() {
                    s.push_str(", expecting ");
                    if expected.len() > 1 {
                        s.push_str("one of: ");
                    }
                    s.push_str(&expected.join(", "));
                }
                s
            }
            ErrorKind::UnterminatedQuote { quote } => format!(
                "syntax error {at}: quoted string opened with {quote} is never closed; hint: close it on the same statement"
            ),
            ErrorKind::BadCharacter { ch } => format!(
                "syntax error {at}: unexpected character {ch:?}; hint: put paths and other free text in quotes"
            ),
            ErrorKind::Invalid { message } => format!("syntax error {at}: {message}"),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.headline())?;
        // The caret column counts characters; tabs are kept so the caret lines up under them.
        let pad: String = self
            .source_line
            .chars()
            .take(self.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        writeln!(f, "  {}", self.source_line)?;
        write!(f, "  {pad}^")
    }
}
