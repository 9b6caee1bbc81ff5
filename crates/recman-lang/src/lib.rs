//! recman's RMAN-style command language: lexer, parser, AST, canonical printer and HELP text.
//!
//! Pure: no I/O. `parse_script` turns text into statements; `Display` on a statement prints its
//! canonical form, which parses back to the same value. recman-cli lowers the statements to its
//! command values and runs them.

pub mod ast;
mod ast_objects;
mod ast_terms;
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

/// The parser's round-trip property, shared by the in-test fuzzers and the coverage-guided one
/// (fuzz/): whatever parses prints to a canonical form that parses back to the same statements,
/// where they start in the source aside (`parse(print(ast)) == ast`). Err describes the first
/// violation.
pub fn check_round_trip(src: &str) -> Result<(), String> {
    check_round_trip_with(src, |script| script.to_string())
}

/// [`check_round_trip`] with another printer in place of `Display`, so that the tests can show
/// the property failing on a deliberately broken one.
pub fn check_round_trip_with(src: &str, print: impl Fn(&Script) -> String) -> Result<(), String> {
    let _ = is_complete(src);
    let Ok(script) = parse_script(src) else {
        return Ok(());
    };
    let canon = print(&script);
    let again = parse_script(&canon).map_err(|e| {
        format!("canonical form does not parse\nsource: {src:?}\ncanon: {canon}\n{e}")
    })?;
    let (want, got) = (script.without_spans(), again.without_spans());
    if want != got {
        return Err(format!(
            "the canonical form parses to other statements\nsource: {src:?}\ncanon: {canon}\n\
             parsed: {want:?}\nre-parsed: {got:?}"
        ));
    }
    Ok(())
}
