//! The small values that statements of every kind are built from: a device type, a size, a
//! point in time, an LSN, a recovery target.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Device {
    Disk,
    /// SBT and SBT_TAPE are one device type.
    Sbt,
    S3,
    Other(String),
}

/// A size as written: `value` and an optional K, M or G unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub value: u64,
    pub unit: Option<char>,
}

impl Size {
    /// Bytes, saturating: a size that does not fit is as large as can be.
    pub fn bytes(&self) -> u64 {
        let mult: u64 = match self.unit {
            Some('K') => 1 << 10,
            Some('M') => 1 << 20,
            Some('G') => 1 << 30,
            Some('T') => 1 << 40,
            _ => 1,
        };
        self.value.saturating_mul(mult)
    }
}

/// A point in time as RMAN's date strings write it.
#[derive(Debug, Clone, PartialEq)]
pub enum DateExpr {
    /// `SYSDATE`, optionally minus or plus `num/den` days.
    Sysdate { sign: i8, num: u64, den: u64 },
    /// `TO_DATE('value', 'format')` with Oracle's format elements.
    ToDate { value: String, format: String },
    /// Any other string: a timestamp literal, e.g. `2026-11-21 14:30:00`.
    Literal(String),
}

/// An SCN: PostgreSQL's LSN, written as a number or as `'X/Y'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lsn {
    Number(u64),
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Until {
    Time(DateExpr),
    Scn(Lsn),
    Sequence { seq: u64, thread: Option<u64> },
    RestorePoint(String),
}
