//! The canonical form of a statement: keywords upper-case, one space between words, strings in
//! single quotes (double when they contain one, typographic `‘…’` when they contain both), tags
//! always quoted, `;` at the end. Parsing the canonical form gives the same value back.

mod maint;
mod objects;
mod words;

use crate::ast::*;
use std::fmt::{self, Display, Formatter, Write as _};
use words::{list, name, q};

impl Display for Device {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Device::Disk => f.write_str("DISK"),
            Device::Sbt => f.write_str("SBT"),
            Device::S3 => f.write_str("S3"),
            Device::Other(s) => f.write_str(&q(s)),
        }
    }
}

impl Display for Size {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.value)?;
        if let Some(u) = self.unit {
            write!(f, "{u}")?;
        }
        Ok(())
    }
}

impl Display for DateExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DateExpr::Sysdate { sign: 0, .. } => f.write_str("'SYSDATE'"),
            DateExpr::Sysdate { sign, num, den } => {
                let s = if *sign < 0 { '-' } else { '+' };
                if *den == 1 {
                    write!(f, "'SYSDATE{s}{num}'")
                } else {
                    write!(f, "'SYSDATE{s}{num}/{den}'")
                }
            }
            DateExpr::ToDate { value, format } => {
                // Each part lacks the quote it was read in; the whole is quoted around them.
                let part = |s: &str| {
                    if s.contains('\'') {
                        format!("\"{s}\"")
                    } else {
                        format!("'{s}'")
                    }
                };
                f.write_str(&q(&format!("TO_DATE({}, {})", part(value), part(format))))
            }
            DateExpr::Literal(s) => f.write_str(&q(s)),
        }
    }
}

impl Display for Lsn {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Lsn::Number(n) => write!(f, "{n}"),
            Lsn::Text(s) => f.write_str(&q(s)),
        }
    }
}

impl Display for Until {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Until::Time(d) => write!(f, "UNTIL TIME {d}"),
            Until::Scn(l) => write!(f, "UNTIL SCN {l}"),
            Until::Sequence { seq, thread } => {
                write!(f, "UNTIL SEQUENCE {seq}")?;
                if let Some(t) = thread {
                    write!(f, " THREAD {t}")?;
                }
                Ok(())
            }
            Until::RestorePoint(n) => write!(f, "UNTIL RESTORE POINT {}", name(n)),
        }
    }
}

impl Display for ChannelOp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ChannelOp::Connect(s) => write!(f, "CONNECT {}", q(s)),
            ChannelOp::Format(v) => write!(f, "FORMAT {}", list(v, |s| q(s))),
            ChannelOp::MaxOpenFiles(n) => write!(f, "MAXOPENFILES {n}"),
            ChannelOp::MaxPieceSize(s) => write!(f, "MAXPIECESIZE {s}"),
            ChannelOp::Rate(s) => write!(f, "RATE {s}"),
            ChannelOp::Parms(s) => write!(f, "PARMS {}", q(s)),
            ChannelOp::Send(s) => write!(f, "SEND {}", q(s)),
        }
    }
}

fn ops(v: &[ChannelOp]) -> String {
    v.iter().map(|o| format!(" {o}")).collect()
}

impl Display for Stmt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.statement.fmt(f)
    }
}

impl Display for Script {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for s in &self.statements {
            writeln!(f, "{s}")?;
        }
        Ok(())
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Connect { to, string } => {
                let to = match to {
                    ConnectTo::Target => "TARGET",
                    ConnectTo::Catalog => "CATALOG",
                    ConnectTo::Auxiliary => "AUXILIARY",
                };
                write!(f, "CONNECT {to}")?;
                if let Some(s) = string {
                    write!(f, " {}", q(s))?;
                }
            }
            Statement::Configure(c) => write!(f, "CONFIGURE {c}")?,
            // The first word is read as a name, so it may have been quoted; the rest are words.
            Statement::Show(w) => write!(
                f,
                "SHOW {}",
                w.iter().map(|s| name(s)).collect::<Vec<_>>().join(" ")
            )?,
            Statement::Run(body) => {
                writeln!(f, "RUN {{")?;
                for s in body {
                    writeln!(f, "  {s}")?;
                }
                return f.write_str("}");
            }
            Statement::Allocate(a) => {
                f.write_str("ALLOCATE ")?;
                if a.auxiliary {
                    f.write_str("AUXILIARY ")?;
                }
                f.write_str("CHANNEL ")?;
                match &a.name {
                    Some(n) if !a.maintenance => f.write_str(&name(n))?,
                    _ => f.write_str("FOR MAINTENANCE")?,
                }
                write!(f, " DEVICE TYPE {}{}", a.device, ops(&a.operands))?;
            }
            Statement::Release(n) => {
                f.write_str("RELEASE CHANNEL")?;
                if let Some(n) = n {
                    write!(f, " {}", name(n))?;
                }
            }
            Statement::Backup(b) => write!(f, "BACKUP{b}")?,
            Statement::Restore(r) => write!(f, "RESTORE {r}")?,
            Statement::Recover(r) => write!(f, "RECOVER {r}")?,
            Statement::Validate(v) => write!(f, "VALIDATE {v}")?,
            Statement::List(l) => write!(f, "LIST {l}")?,
            Statement::Report(r) => write!(f, "REPORT {r}")?,
            Statement::Crosscheck(c) => write!(
                f,
                "CROSSCHECK {}{}",
                c.object,
                objects::quals(&c.qualifiers)
            )?,
            Statement::Delete(d) => write!(f, "DELETE {d}")?,
            Statement::Catalog(c) => write!(f, "CATALOG {c}")?,
            Statement::Sql(s) => write!(f, "SQL {}", q(s))?,
            Statement::Set(s) => write!(f, "SET {s}")?,
            Statement::CreateCatalog => f.write_str("CREATE CATALOG")?,
            Statement::CreateRestorePoint(n) => write!(f, "CREATE RESTORE POINT {}", name(n))?,
            Statement::RegisterDatabase => f.write_str("REGISTER DATABASE")?,
            Statement::Help(t) => {
                f.write_str("HELP")?;
                if let Some(t) = t {
                    write!(f, " {t}")?;
                }
            }
            Statement::Exit => f.write_str("EXIT")?,
            Statement::Foreign { verb, words } => {
                f.write_str(verb)?;
                for w in words {
                    match w {
                        Word::Bare(s) => write!(f, " {s}")?,
                        Word::Quoted(s) => write!(f, " {}", q(s))?,
                    }
                }
            }
        }
        f.write_char(';')
    }
}
