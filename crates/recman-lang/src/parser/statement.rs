//! Statement dispatch, CONNECT, RUN, ALLOCATE/RELEASE, SQL, SHOW, HELP and foreign statements.

use super::{Parser, R};
use crate::ast::*;
use crate::lexer::Tok;

/// Verbs parsed as foreign statements: Oracle-instance or RMAN commands with no counterpart
/// here, kept whole so that the interpreter can say what PostgreSQL has instead.
pub(crate) const FOREIGN: &[&str] = &[
    "STARTUP",
    "SHUTDOWN",
    "ALTER",
    "SWITCH",
    "DUPLICATE",
    "DRILL",
    "CHANGE",
    "BLOCKRECOVER",
    "FLASHBACK",
    "RESYNC",
    "CONVERT",
    "TRANSPORT",
    "UPGRADE",
    "UNREGISTER",
    "RESET",
    "SEND",
    "SPOOL",
    "PRINT",
    "REPLACE",
    "EXECUTE",
    "DROP",
    "IMPORT",
    "ADVISE",
    "REPAIR",
    "RECOVER_TABLE",
];

const VERBS: &[&str] = &[
    "BACKUP",
    "RESTORE",
    "RECOVER",
    "RUN",
    "ALLOCATE",
    "RELEASE",
    "CONNECT",
    "CONFIGURE",
    "SHOW",
    "SET",
    "VALIDATE",
    "LIST",
    "REPORT",
    "CROSSCHECK",
    "DELETE",
    "CATALOG",
    "SQL",
    "CREATE",
    "REGISTER",
    "HELP",
    "EXIT",
    "QUIT",
];

impl Parser<'_> {
    pub(crate) fn statement(&mut self, in_block: bool) -> R<Stmt> {
        let first = self.peek().clone();
        let first_line = self.src[first.start..]
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        // A bare `{ … }` is read as RUN { … }: the seeds write daily scripts that way.
        let statement = if !in_block && self.is_punct('{') {
            self.run_body(in_block)?
        } else {
            self.statement_body(in_block)?
        };
        Ok(Stmt {
            statement,
            line: first.line,
            column: first.column,
            first_line,
        })
    }

    fn statement_body(&mut self, in_block: bool) -> R<Statement> {
        for v in VERBS {
            if self.is_kw(v) {
                break;
            }
        }
        let verb = match &self.peek().tok {
            Tok::Word(w) => w.to_ascii_uppercase(),
            _ => return Err(self.unexpected()),
        };
        if let Some(v) = FOREIGN.iter().find(|v| **v == verb) {
            return self.foreign(v, in_block);
        }
        if verb == "RUN" {
            self.bump();
            if in_block {
                return Err(self.invalid_at(
                    &self.toks[self.pos - 1].clone(),
                    "RUN blocks cannot be nested; hint: close the outer block first".into(),
                ));
            }
            return self.run_body(in_block);
        }
        let s = if let Some(s) = self.session_statement(&verb)? {
            s
        } else if let Some(s) = self.job_statement(&verb)? {
            s
        } else {
            return Err(self.unexpected());
        };
        self.end_statement(in_block)?;
        Ok(s)
    }

    /// The statements that set up, inspect or leave the session; None (nothing read) for any
    /// other verb.
    fn session_statement(&mut self, verb: &str) -> R<Option<Statement>> {
        let s = match verb {
            "CONNECT" => {
                self.bump();
                let to = match self.one_of(&["TARGET", "CATALOG", "AUXILIARY"])? {
                    "TARGET" => ConnectTo::Target,
                    "CATALOG" => ConnectTo::Catalog,
                    _ => ConnectTo::Auxiliary,
                };
                let string = self.connect_string()?;
                Statement::Connect { to, string }
            }
            "ALLOCATE" => {
                self.bump();
                Statement::Allocate(self.allocate()?)
            }
            "RELEASE" => {
                self.bump();
                self.expect_kw("CHANNEL")?;
                let name = match self.peek().tok {
                    Tok::Word(_) | Tok::Quoted(_) => Some(self.name()?),
                    _ => None,
                };
                Statement::Release(name)
            }
            "SQL" => {
                self.bump();
                Statement::Sql(self.quoted()?)
            }
            "SHOW" => {
                self.bump();
                let mut words = vec![self.name()?.to_ascii_uppercase()];
                while let Tok::Word(w) = &self.peek().tok {
                    words.push(w.to_ascii_uppercase());
                    self.bump();
                }
                Statement::Show(words)
            }
            "HELP" => {
                self.bump();
                let topic = match &self.peek().tok {
                    Tok::Word(w) => {
                        let w = w.to_ascii_uppercase();
                        self.bump();
                        Some(w)
                    }
                    _ => None,
                };
                Statement::Help(topic)
            }
            "EXIT" | "QUIT" => {
                self.bump();
                Statement::Exit
            }
            "CREATE" => {
                self.bump();
                if self.eat_kws(&["RESTORE", "POINT"]) {
                    Statement::CreateRestorePoint(self.name()?)
                } else {
                    self.expect_kw("CATALOG")?;
                    Statement::CreateCatalog
                }
            }
            "REGISTER" => {
                self.bump();
                self.expect_kw("DATABASE")?;
                Statement::RegisterDatabase
            }
            _ => return Ok(None),
        };
        Ok(Some(s))
    }

    /// The statements that act on the database, the repository or its catalog; None (nothing
    /// read) for any other verb.
    fn job_statement(&mut self, verb: &str) -> R<Option<Statement>> {
        let s = match verb {
            "CONFIGURE" => {
                self.bump();
                Statement::Configure(self.configure()?)
            }
            "BACKUP" => {
                self.bump();
                Statement::Backup(self.backup()?)
            }
            "RESTORE" => {
                self.bump();
                Statement::Restore(self.restore()?)
            }
            "RECOVER" => {
                self.bump();
                Statement::Recover(self.recover()?)
            }
            "VALIDATE" => {
                self.bump();
                Statement::Validate(self.validate()?)
            }
            "SET" => {
                self.bump();
                Statement::Set(self.set()?)
            }
            "LIST" => {
                self.bump();
                Statement::List(self.list()?)
            }
            "REPORT" => {
                self.bump();
                Statement::Report(self.report()?)
            }
            "CROSSCHECK" => {
                self.bump();
                let object = self.maint_object()?;
                let qualifiers = self.qualifiers()?;
                Statement::Crosscheck(Crosscheck { object, qualifiers })
            }
            "DELETE" => {
                self.bump();
                Statement::Delete(self.delete()?)
            }
            "CATALOG" => {
                self.bump();
                Statement::Catalog(self.catalog()?)
            }
            _ => return Ok(None),
        };
        Ok(Some(s))
    }

    fn run_body(&mut self, in_block: bool) -> R<Statement> {
        let _ = in_block;
        self.expect_punct('{')?;
        let mut body = Vec::new();
        loop {
            if self.eat_punct('}') {
                break;
            }
            if self.at_eof() {
                self.expect_note("\"}\"");
                return Err(self.unexpected());
            }
            body.push(self.statement(true)?);
        }
        // `RUN { … }` needs no `;`; one is accepted.
        self.eat_punct(';');
        Ok(Statement::Run(body))
    }

    /// A connect string: quoted, or unquoted tokens written together (`/`, `/@inst1`,
    /// `rman/pw@catdb`).
    fn connect_string(&mut self) -> R<Option<String>> {
        if self.is_quoted() {
            return Ok(Some(self.quoted()?));
        }
        let first = self.peek().clone();
        if !matches!(first.tok, Tok::Punct('/') | Tok::Word(_) | Tok::Punct('@')) {
            return Ok(None);
        }
        let mut end = first.end;
        self.bump();
        loop {
            let t = self.peek().clone();
            let joins = t.start == end
                && matches!(
                    t.tok,
                    Tok::Punct('/' | '@' | '.' | ':' | '-') | Tok::Word(_) | Tok::Number { .. }
                );
            if !joins {
                break;
            }
            end = t.end;
            self.bump();
        }
        Ok(Some(self.src[first.start..end].to_string()))
    }

    fn allocate(&mut self) -> R<Allocate> {
        let auxiliary = self.eat_kw("AUXILIARY");
        self.expect_kw("CHANNEL")?;
        let (name, maintenance) = if self.eat_kws(&["FOR", "MAINTENANCE"]) {
            (None, true)
        } else {
            (Some(self.name()?), false)
        };
        let device = self.device_type()?;
        let operands = self.channel_ops()?;
        Ok(Allocate {
            name,
            auxiliary,
            maintenance,
            device,
            operands,
        })
    }

    pub(crate) fn channel_ops(&mut self) -> R<Vec<ChannelOp>> {
        let mut ops = Vec::new();
        loop {
            let op = if self.eat_kw("CONNECT") {
                self.eat_eq();
                match self.connect_string()? {
                    Some(s) => ChannelOp::Connect(s),
                    None => {
                        self.expect_note("a connect string");
                        return Err(self.unexpected());
                    }
                }
            } else if self.eat_kw("FORMAT") {
                self.eat_eq();
                ChannelOp::Format(self.formats()?)
            } else if self.eat_kw("MAXOPENFILES") {
                self.eat_eq();
                ChannelOp::MaxOpenFiles(self.int()?)
            } else if self.eat_kw("MAXPIECESIZE") {
                self.eat_eq();
                ChannelOp::MaxPieceSize(self.size()?)
            } else if self.eat_kw("RATE") {
                self.eat_eq();
                ChannelOp::Rate(self.size()?)
            } else if self.eat_kw("PARMS") {
                self.eat_eq();
                ChannelOp::Parms(self.quoted()?)
            } else if self.eat_kw("SEND") {
                self.eat_eq();
                ChannelOp::Send(self.quoted()?)
            } else {
                return Ok(ops);
            };
            ops.push(op);
        }
    }

    pub(crate) fn formats(&mut self) -> R<Vec<String>> {
        let mut v = vec![self.quoted()?];
        while self.eat_punct(',') {
            v.push(self.quoted()?);
        }
        Ok(v)
    }

    fn foreign(&mut self, verb: &'static str, in_block: bool) -> R<Statement> {
        self.bump();
        let mut words = Vec::new();
        loop {
            match &self.peek().tok {
                Tok::Punct(';') | Tok::Eof => break,
                Tok::Punct('}') if in_block => break,
                Tok::Quoted(s) => words.push(Word::Quoted(s.clone())),
                Tok::Word(w) => words.push(Word::Bare(w.to_ascii_uppercase())),
                Tok::Number { digits, suffix } => {
                    words.push(Word::Bare(format!("{digits}{suffix}")))
                }
                Tok::Punct(c) => words.push(Word::Bare(c.to_string())),
            }
            self.bump();
        }
        self.end_statement(in_block)?;
        Ok(Statement::Foreign {
            verb: verb.to_string(),
            words,
        })
    }
}
