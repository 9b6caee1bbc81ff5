//! A recovery target (a time, an LSN, a restore point, the latest): the value that selecting a
//! backup and planning a restore both take, below both.

use crate::error::EngineError;
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use recman_pg::Lsn;
use std::fmt;

/// Where recovery stops. Times are kept both as an instant (to pick a backup) and as an
/// explicit UTC literal (so PostgreSQL does not read them in its own time zone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecoveryTarget {
    /// The end of the archived WAL.
    Latest,
    Time {
        micros: i64,
        utc: String,
    },
    Lsn(Lsn),
    Xid(u64),
    /// A named restore point; `lsn` (recorded when it was made) picks the backup.
    Name {
        name: String,
        lsn: Lsn,
    },
}

impl fmt::Display for RecoveryTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecoveryTarget::Latest => write!(f, "the end of the archived WAL"),
            RecoveryTarget::Time { utc, .. } => write!(f, "time {utc}"),
            RecoveryTarget::Lsn(l) => write!(f, "lsn {l}"),
            RecoveryTarget::Xid(x) => write!(f, "xid {x}"),
            RecoveryTarget::Name { name, lsn } => write!(f, "restore point {name} (lsn {lsn})"),
        }
    }
}

impl RecoveryTarget {
    /// Accepts RFC 3339 and PostgreSQL-style "YYYY-MM-DD HH:MM:SS[.frac][+TZ]"; a time without
    /// a zone is local time, as a DBA at a terminal means it.
    pub fn parse_time(text: &str) -> Result<RecoveryTarget, EngineError> {
        let t = text.trim();
        let instant: Option<DateTime<Utc>> = DateTime::parse_from_rfc3339(t)
            .ok()
            .or_else(|| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f%#z").ok())
            .or_else(|| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%#z").ok())
            .map(|d| d.with_timezone(&Utc))
            .or_else(|| {
                [
                    "%Y-%m-%d %H:%M:%S%.f",
                    "%Y-%m-%dT%H:%M:%S%.f",
                    "%Y-%m-%d %H:%M",
                    "%Y-%m-%d",
                ]
                .iter()
                .find_map(|f| {
                    NaiveDateTime::parse_from_str(t, f).ok().or_else(|| {
                        chrono::NaiveDate::parse_from_str(t, f)
                            .ok()
                            .and_then(|d| d.and_hms_opt(0, 0, 0))
                    })
                })
                .and_then(|n| Local.from_local_datetime(&n).earliest())
                .map(|d| d.with_timezone(&Utc))
            });
        let d = instant.ok_or_else(|| {
            EngineError::from(crate::refusal::Input::TargetTime {
                text: text.to_string(),
            })
        })?;
        Ok(RecoveryTarget::Time {
            micros: d.timestamp_micros(),
            utc: d.format("%Y-%m-%d %H:%M:%S%.6f+00").to_string(),
        })
    }

    pub fn parse_lsn(text: &str) -> Result<RecoveryTarget, EngineError> {
        Ok(RecoveryTarget::Lsn(text.parse()?))
    }

    pub fn parse_xid(text: &str) -> Result<RecoveryTarget, EngineError> {
        text.trim().parse().map(RecoveryTarget::Xid).map_err(|_| {
            EngineError::from(crate::refusal::Input::TargetXid {
                text: text.to_string(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_with_zone_are_exact() {
        let RecoveryTarget::Time { micros, utc } =
            RecoveryTarget::parse_time("2026-11-21 10:00:00.5+02").unwrap()
        else {
            panic!()
        };
        assert_eq!(utc, "2026-11-21 08:00:00.500000+00");
        let RecoveryTarget::Time { micros: m2, .. } =
            RecoveryTarget::parse_time("2026-11-21T08:00:00.5Z").unwrap()
        else {
            panic!()
        };
        assert_eq!(micros, m2);
        assert!(RecoveryTarget::parse_time("2026-11-21 10:00").is_ok());
        assert!(RecoveryTarget::parse_time("yesterday").is_err());
    }
}
