//! The values both catalog engines bind and return, and the rows they come back in: what the
//! SQL layer ([`crate::db`]) and the PostgreSQL session ([`crate::pg`]) exchange.

use std::path::Path;

use crate::error::CatalogError;

/// A parameter or column value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    I64(i64),
    F64(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::I64(v)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::I64(v.into())
    }
}
impl From<&u32> for Value {
    fn from(v: &u32) -> Self {
        Value::I64((*v).into())
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::I64(v.into())
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::F64(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Blob(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}
impl<T: Clone + Into<Value>> From<&Option<T>> for Value {
    fn from(v: &Option<T>) -> Self {
        v.clone().map_or(Value::Null, Into::into)
    }
}

/// `vals![a, b]`: a parameter list, each converted with `Value::from`.
macro_rules! vals {
    ($($e:expr),* $(,)?) => { &[$($crate::value::Value::from($e)),*][..] };
}
pub(crate) use vals;

/// One result row, read whole. Column indexes are 0-based, as in the SELECT list.
pub(crate) struct DbRow<'a> {
    pub(crate) values: Vec<Value>,
    pub(crate) catalog: &'a Path,
}

impl DbRow<'_> {
    fn bad(&self, i: usize, want: &str) -> CatalogError {
        CatalogError::Corrupt {
            path: self.catalog.to_path_buf(),
            detail: format!("column {i} holds {:?}, not {want}", self.values.get(i)),
        }
    }

    pub(crate) fn get_opt_i64(&self, i: usize) -> Result<Option<i64>, CatalogError> {
        match self.values.get(i) {
            Some(Value::Null) => Ok(None),
            Some(Value::I64(v)) => Ok(Some(*v)),
            _ => Err(self.bad(i, "an integer")),
        }
    }

    pub(crate) fn get_i64(&self, i: usize) -> Result<i64, CatalogError> {
        self.get_opt_i64(i)?
            .ok_or_else(|| self.bad(i, "an integer"))
    }

    pub(crate) fn get_opt_u64(&self, i: usize) -> Result<Option<u64>, CatalogError> {
        self.get_opt_i64(i)?
            .map(|v| u64::try_from(v).map_err(|_| self.bad(i, "a non-negative integer")))
            .transpose()
    }

    pub(crate) fn get_u64(&self, i: usize) -> Result<u64, CatalogError> {
        self.get_opt_u64(i)?
            .ok_or_else(|| self.bad(i, "an integer"))
    }

    pub(crate) fn get_opt_u32(&self, i: usize) -> Result<Option<u32>, CatalogError> {
        self.get_opt_i64(i)?
            .map(|v| u32::try_from(v).map_err(|_| self.bad(i, "a 32-bit unsigned integer")))
            .transpose()
    }

    pub(crate) fn get_u32(&self, i: usize) -> Result<u32, CatalogError> {
        self.get_opt_u32(i)?
            .ok_or_else(|| self.bad(i, "an integer"))
    }

    pub(crate) fn get_opt_text(&self, i: usize) -> Result<Option<String>, CatalogError> {
        match self.values.get(i) {
            Some(Value::Null) => Ok(None),
            Some(Value::Text(s)) => Ok(Some(s.clone())),
            _ => Err(self.bad(i, "text")),
        }
    }

    pub(crate) fn get_text(&self, i: usize) -> Result<String, CatalogError> {
        self.get_opt_text(i)?.ok_or_else(|| self.bad(i, "text"))
    }

    /// A text column parsed with `FromStr` (statuses).
    pub(crate) fn get_parsed<T: std::str::FromStr>(&self, i: usize) -> Result<T, CatalogError> {
        let s = self.get_text(i)?;
        s.parse()
            .map_err(|_| self.bad(i, std::any::type_name::<T>()))
    }
}

/// Converts a u64 for storage in the catalog's signed 64-bit integers.
pub(crate) fn to_i64(what: &'static str, value: u64) -> Result<i64, CatalogError> {
    i64::try_from(value).map_err(|_| CatalogError::OutOfRange { what, value })
}
