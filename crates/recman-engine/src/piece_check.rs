//! A piece checked against its own records without writing anything, and a failure worded for
//! a listing: shared by crosscheck and the catalog rebuild, below both.

use crate::error::EngineError;
use crate::pipeline::{AnyFile, Scan, Wording};

/// What crosscheck checks a piece against: its own records only (the catalog's figures are
/// compared by the caller, in crosscheck's words).
pub(crate) fn null_scan(rel: &str) -> Scan<'_> {
    Scan {
        rel,
        piece: None,
        files: &AnyFile,
        wording: Wording::VALIDATE,
        channel: 1,
        set_no: None,
    }
}

/// The format's own words for damage, as crosscheck has always reported it.
pub(crate) fn reason(e: EngineError) -> String {
    match e {
        EngineError::Piece { source, .. } | EngineError::PieceFile { source, .. } => {
            source.to_string()
        }
        e => e.to_string(),
    }
}
