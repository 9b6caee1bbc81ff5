//! recman's RMAN-style command language: lexer, parser, AST, canonical printer and HELP text.
//!
//! Pure: no I/O. `parse_script` turns text into statements; `Display` on a statement prints its
//! canonical form, which parses back to the same value. recman-cli lowers the statements to its
//! command values and runs them.

pub mod ast;
mod ast_objects;
pub mod date;
mod error;
pub mod format;
pub mod help;
mod lexer;
mod parser;
mod print;

pub use ast::*;
pub use error::{ErrorKind, ParseError};
pub use lexer::is_complete;
pub use parser::parse_script;
