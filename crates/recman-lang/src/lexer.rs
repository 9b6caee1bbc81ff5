//! Splits script text into tokens. Newlines are whitespace; `#` starts a comment to the end of
//! the line; strings take single, double or typographic quotes (seeds copied from documents
//! carry ‘…’), with no escapes, as RMAN has none.

use crate::error::{ErrorKind, ParseError};

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Word(String),
    /// Digits, then any letters directly after them (`32G`, `0IT8`): the parser decides.
    Number {
        digits: String,
        suffix: String,
    },
    Quoted(String),
    Punct(char),
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
    pub column: usize,
    /// Byte offsets in the source.
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match &self.tok {
            Tok::Word(w) => format!("\"{}\"", w.to_ascii_uppercase()),
            Tok::Number { digits, suffix } => format!("\"{digits}{suffix}\""),
            Tok::Quoted(s) => format!("quoted string '{s}'"),
            Tok::Punct(c) => format!("\"{c}\""),
            Tok::Eof => "end of input".to_string(),
        }
    }
}

const PUNCT: &str = ";{}(),=:+-/@.\\%*<>!$&|~^?[]`";

fn closing_quote(open: char) -> Option<char> {
    match open {
        '\'' => Some('\''),
        '"' => Some('"'),
        '\u{2018}' | '\u{2019}' => Some('\u{2019}'),
        '\u{201C}' | '\u{201D}' => Some('\u{201D}'),
        _ => None,
    }
}

/// Tokenizes `src`; the last token is always `Eof`.
pub fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let mut chars = src.char_indices().peekable();
    let (mut line, mut col) = (1usize, 1usize);
    while let Some(&(i, c)) = chars.peek() {
        let (tl, tc) = (line, col);
        let mut advance = |chars: &mut std::iter::Peekable<std::str::CharIndices>| {
            let (_, ch) = chars.next().expect("peeked");
            if ch == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        };
        if c.is_whitespace() {
            advance(&mut chars);
            continue;
        }
        if c == '#' {
            while let Some(&(_, ch)) = chars.peek() {
                if ch == '\n' {
                    break;
                }
                advance(&mut chars);
            }
            continue;
        }
        let tok = if let Some(close) = closing_quote(c) {
            advance(&mut chars);
            let body_start = i + c.len_utf8();
            let mut end = None;
            while let Some(&(j, ch)) = chars.peek() {
                advance(&mut chars);
                if ch == close {
                    end = Some(j);
                    break;
                }
            }
            let Some(end) = end else {
                return Err(ParseError::new(
                    src,
                    tl,
                    tc,
                    ErrorKind::UnterminatedQuote { quote: c },
                ));
            };
            out.push(Token {
                tok: Tok::Quoted(src[body_start..end].to_string()),
                line: tl,
                column: tc,
                start: i,
                end: end + close.len_utf8(),
            });
            continue;
        } else if c.is_ascii_digit() {
            let mut digits = String::new();
            let mut suffix = String::new();
            while let Some(&(_, ch)) = chars.peek() {
                if ch.is_ascii_digit() && suffix.is_empty() {
                    digits.push(ch);
                } else if ch.is_ascii_alphanumeric() || ch == '_' {
                    suffix.push(ch);
                } else {
                    break;
                }
                advance(&mut chars);
            }
            Tok::Number { digits, suffix }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut w = String::new();
            while let Some(&(_, ch)) = chars.peek() {
                if ch.is_ascii_alphanumeric() || ch == '_' || ch == '$' {
                    w.push(ch);
                    advance(&mut chars);
                } else {
                    break;
                }
            }
            Tok::Word(w)
        } else if PUNCT.contains(c) {
            advance(&mut chars);
            Tok::Punct(c)
        } else {
            return Err(ParseError::new(
                src,
                tl,
                tc,
                ErrorKind::BadCharacter { ch: c },
            ));
        };
        let end = chars.peek().map(|&(j, _)| j).unwrap_or(src.len());
        out.push(Token {
            tok,
            line: tl,
            column: tc,
            start: i,
            end,
        });
    }
    out.push(Token {
        tok: Tok::Eof,
        line,
        column: col,
        start: src.len(),
        end: src.len(),
    });
    Ok(out)
}

/// Whether `src` ends a statement: its last token is `;` or `}` at brace depth 0, outside quotes
/// and comments. The prompt reads more lines until this holds. Input that does not lex (an open
/// quote) is incomplete.
pub fn is_complete(src: &str) -> bool {
    let Ok(tokens) = lex(src) else {
        return false;
    };
    let mut depth = 0i64;
    let mut last = None;
    for t in &tokens {
        match t.tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Eof => break,
            _ => {}
        }
        last = Some(&t.tok);
    }
    match last {
        None => false,
        Some(Tok::Punct(';')) | Some(Tok::Punct('}')) => depth <= 0,
        _ => false,
    }
}
