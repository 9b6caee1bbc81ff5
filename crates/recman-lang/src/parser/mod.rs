//! Recursive-descent parser. Every check against the current token records what it looked for;
//! a consumed token clears the record, so an error lists exactly the alternatives tried at the
//! point of failure, as RMAN's "expecting one of" does.

mod backup;
mod configure;
mod maint;
mod restore;
mod statement;

use crate::ast::*;
use crate::date::parse_date;
use crate::error::{ErrorKind, ParseError};
use crate::lexer::{Tok, Token, lex};

type R<T> = Result<T, ParseError>;

/// Alternatives named in one error; RMAN's lists are long too, but a screenful helps nobody.
const MAX_EXPECTED: usize = 12;

/// Parses a whole script. A syntax error anywhere means no statement is returned.
pub fn parse_script(src: &str) -> R<Script> {
    let toks = lex(src)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        expected: Vec::new(),
    };
    let mut statements = Vec::new();
    while !p.at_eof() {
        statements.push(p.statement(false)?);
    }
    Ok(Script { statements })
}

pub(crate) struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    expected: Vec<String>,
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }

    fn at_eof(&self) -> bool {
        self.peek().tok == Tok::Eof
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        self.expected.clear();
        t
    }

    fn expect_note(&mut self, what: impl Into<String>) {
        let w = what.into();
        if !self.expected.contains(&w) {
            self.expected.push(w);
        }
    }

    /// Whether the current token is keyword `kw` (recorded as expected when it is not).
    fn is_kw(&mut self, kw: &str) -> bool {
        if let Tok::Word(w) = &self.peek().tok
            && w.eq_ignore_ascii_case(kw)
        {
            return true;
        }
        self.expect_note(format!("\"{kw}\""));
        false
    }

    fn kw_at(&self, n: usize, kw: &str) -> bool {
        matches!(self.peek_at(n), Tok::Word(w) if w.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_kws(&mut self, kws: &[&str]) -> bool {
        if !self.is_kw(kws[0]) || !kws.iter().enumerate().all(|(i, k)| self.kw_at(i, k)) {
            return false;
        }
        for _ in kws {
            self.bump();
        }
        true
    }

    fn expect_kw(&mut self, kw: &str) -> R<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn expect_kws(&mut self, kws: &[&str]) -> R<()> {
        for k in kws {
            self.expect_kw(k)?;
        }
        Ok(())
    }

    /// Consumes one of `kws` and returns it (canonical spelling), or fails listing them all.
    fn one_of(&mut self, kws: &[&'static str]) -> R<&'static str> {
        for k in kws {
            if self.eat_kw(k) {
                return Ok(k);
            }
        }
        Err(self.unexpected())
    }

    fn is_punct(&mut self, c: char) -> bool {
        if self.peek().tok == Tok::Punct(c) {
            return true;
        }
        self.expect_note(format!("\"{c}\""));
        false
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> R<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn eat_eq(&mut self) {
        self.eat_punct('=');
    }

    pub(crate) fn unexpected(&self) -> ParseError {
        let t = self.peek();
        // The end of a statement is the likeliest fix, so it comes first; a long list is cut.
        let mut expected = self.expected.clone();
        if let Some(i) = expected.iter().position(|e| e == "\";\"") {
            let semi = expected.remove(i);
            expected.insert(0, semi);
        }
        if expected.len() > MAX_EXPECTED {
            expected.truncate(MAX_EXPECTED);
            expected.push("...".into());
        }
        ParseError::new(
            self.src,
            t.line,
            t.column,
            ErrorKind::Unexpected {
                found: t.describe(),
                expected,
            },
        )
    }

    /// An error about the token at `t` (already consumed): a value out of range and the like.
    fn invalid_at(&self, t: &Token, message: String) -> ParseError {
        ParseError::new(self.src, t.line, t.column, ErrorKind::Invalid { message })
    }

    fn int(&mut self) -> R<u64> {
        if let Tok::Number { digits, suffix } = &self.peek().tok
            && suffix.is_empty()
        {
            let digits = digits.clone();
            let t = self.bump();
            return digits
                .parse()
                .map_err(|_| self.invalid_at(&t, format!("number {digits} is too large")));
        }
        self.expect_note("an integer");
        Err(self.unexpected())
    }

    fn is_int(&self) -> bool {
        matches!(&self.peek().tok, Tok::Number { suffix, .. } if suffix.is_empty())
    }

    /// An integer with an optional K, M or G unit.
    fn size(&mut self) -> R<Size> {
        if let Tok::Number { digits, suffix } = self.peek().tok.clone() {
            let t = self.bump();
            let value = digits
                .parse()
                .map_err(|_| self.invalid_at(&t, format!("size {digits} is too large")))?;
            let unit = match suffix.to_ascii_uppercase().as_str() {
                "" => None,
                "K" => Some('K'),
                "M" => Some('M'),
                "G" => Some('G'),
                "T" => Some('T'),
                _ => {
                    return Err(self.invalid_at(
                        &t,
                        format!("size {digits}{suffix} has an unknown unit; hint: use K, M or G, e.g. 512M"),
                    ));
                }
            };
            return Ok(Size { value, unit });
        }
        self.expect_note("a size (e.g. 512M)");
        Err(self.unexpected())
    }

    fn quoted(&mut self) -> R<String> {
        if let Tok::Quoted(s) = &self.peek().tok {
            let s = s.clone();
            self.bump();
            return Ok(s);
        }
        self.expect_note("a quoted string");
        Err(self.unexpected())
    }

    fn is_quoted(&self) -> bool {
        matches!(self.peek().tok, Tok::Quoted(_))
    }

    /// A name: a bare word (not a reserved word of the current rule) or a quoted string.
    fn name(&mut self) -> R<String> {
        match &self.peek().tok {
            Tok::Word(w) | Tok::Quoted(w) => {
                let w = w.clone();
                self.bump();
                Ok(w)
            }
            Tok::Number { digits, suffix } => {
                let w = format!("{digits}{suffix}");
                self.bump();
                Ok(w)
            }
            _ => {
                self.expect_note("a name");
                Err(self.unexpected())
            }
        }
    }

    fn names(&mut self) -> R<Vec<String>> {
        let mut v = vec![self.name()?];
        while self.eat_punct(',') {
            v.push(self.name()?);
        }
        Ok(v)
    }

    fn ints(&mut self) -> R<Vec<u64>> {
        let mut v = vec![self.int()?];
        while self.eat_punct(',') {
            v.push(self.int()?);
        }
        Ok(v)
    }

    fn file_ref(&mut self) -> R<FileRef> {
        if self.is_quoted() {
            return Ok(FileRef::Path(self.quoted()?));
        }
        if self.is_int() {
            return Ok(FileRef::Number(self.int()?));
        }
        self.expect_note("a file number");
        self.expect_note("a quoted file name");
        Err(self.unexpected())
    }

    fn file_refs(&mut self) -> R<Vec<FileRef>> {
        let mut v = vec![self.file_ref()?];
        while self.eat_punct(',') {
            v.push(self.file_ref()?);
        }
        Ok(v)
    }

    fn device(&mut self) -> R<Device> {
        if let Tok::Quoted(s) = &self.peek().tok {
            let s = s.clone();
            self.bump();
            return Ok(device_from(&s));
        }
        match self.one_of(&["DISK", "SBT", "SBT_TAPE", "S3"])? {
            "DISK" => Ok(Device::Disk),
            "S3" => Ok(Device::S3),
            _ => Ok(Device::Sbt),
        }
    }

    /// `DEVICE TYPE d` or the older `TYPE d`, with an optional `=`.
    fn device_type(&mut self) -> R<Device> {
        if !self.eat_kw("TYPE") {
            self.expect_kws(&["DEVICE", "TYPE"])?;
        }
        self.eat_eq();
        self.device()
    }

    /// A date string: quoted (`'SYSDATE-7'`, `"TO_DATE('…','…')"`, a timestamp), or an
    /// unquoted `SYSDATE [± n[/m]]`.
    fn date(&mut self) -> R<DateExpr> {
        if let Tok::Quoted(s) = &self.peek().tok {
            let s = s.clone();
            let t = self.bump();
            return parse_date(&s).map_err(|m| self.invalid_at(&t, m));
        }
        if self.is_kw("SYSDATE") {
            let t = self.peek().clone();
            let start = t.start;
            let mut end = t.end;
            self.bump();
            while matches!(
                self.peek().tok,
                Tok::Punct('+') | Tok::Punct('-') | Tok::Punct('/') | Tok::Number { .. }
            ) {
                end = self.bump().end;
            }
            return parse_date(&self.src[start..end]).map_err(|m| self.invalid_at(&t, m));
        }
        self.expect_note("a quoted date");
        Err(self.unexpected())
    }

    fn lsn(&mut self) -> R<Lsn> {
        if self.is_quoted() {
            let t = self.peek().clone();
            let s = self.quoted()?;
            if !crate::date::is_lsn(&s) {
                return Err(self.invalid_at(
                    &t,
                    format!("'{s}' is not an LSN; hint: write an SCN as a number or as 'X/Y' (e.g. '0/3000028')"),
                ));
            }
            return Ok(Lsn::Text(s));
        }
        Ok(Lsn::Number(self.int()?))
    }

    fn until_clause(&mut self) -> R<Until> {
        match self.one_of(&["TIME", "SCN", "SEQUENCE", "RESTORE"])? {
            "TIME" => {
                self.eat_eq();
                Ok(Until::Time(self.date()?))
            }
            "SCN" => {
                self.eat_eq();
                Ok(Until::Scn(self.lsn()?))
            }
            "SEQUENCE" => {
                self.eat_eq();
                let seq = self.int()?;
                let thread = if self.eat_kw("THREAD") {
                    self.eat_eq();
                    Some(self.int()?)
                } else {
                    None
                };
                Ok(Until::Sequence { seq, thread })
            }
            _ => {
                self.expect_kw("POINT")?;
                Ok(Until::RestorePoint(self.name()?))
            }
        }
    }

    /// The end of a statement: `;`, or (leniently, as the seeds write it) a `}` that closes a
    /// block, which is left for the block to consume.
    fn end_statement(&mut self, in_block: bool) -> R<()> {
        if self.eat_punct(';') {
            return Ok(());
        }
        if in_block && self.peek().tok == Tok::Punct('}') {
            return Ok(());
        }
        Err(self.unexpected())
    }
}

pub(crate) fn device_from(s: &str) -> Device {
    match s.to_ascii_uppercase().as_str() {
        "DISK" => Device::Disk,
        "SBT" | "SBT_TAPE" => Device::Sbt,
        "S3" => Device::S3,
        _ => Device::Other(s.to_string()),
    }
}
