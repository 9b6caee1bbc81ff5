//! Object Lock's retention, as every store that has one applies it: a mode and a date before
//! which no version can be deleted or overwritten (docs/immutable.md).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};

/// The two retention modes of S3 Object Lock. COMPLIANCE cannot be shortened or lifted by
/// anyone, the account's root included; GOVERNANCE can by a user holding
/// s3:BypassGovernanceRetention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockMode {
    Governance,
    Compliance,
}

impl LockMode {
    /// The mode as S3's headers and documents spell it.
    pub(crate) fn s3(self) -> &'static str {
        match self {
            LockMode::Governance => "GOVERNANCE",
            LockMode::Compliance => "COMPLIANCE",
        }
    }
}

impl fmt::Display for LockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.s3())
    }
}

impl FromStr for LockMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "governance" => Ok(LockMode::Governance),
            "compliance" => Ok(LockMode::Compliance),
            _ => Err(format!(
                "lock mode {s:?} is not known; hint: use governance or compliance"
            )),
        }
    }
}

/// A retention: no version can be deleted or overwritten before `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub mode: LockMode,
    pub until: DateTime<Utc>,
}

impl Retention {
    /// Whether it still holds at `now`.
    pub fn holds_at(&self, now: DateTime<Utc>) -> bool {
        self.until > now
    }

    /// The date as S3's headers and documents write it.
    pub(crate) fn date(&self) -> String {
        self.until.to_rfc3339_opts(SecondsFormat::Millis, true)
    }
}

impl fmt::Display for Retention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} until {}",
            self.mode,
            self.until.to_rfc3339_opts(SecondsFormat::Secs, true)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_as_s3_names_them() {
        assert_eq!("Compliance".parse::<LockMode>(), Ok(LockMode::Compliance));
        assert_eq!("governance".parse::<LockMode>(), Ok(LockMode::Governance));
        assert!("legal-hold".parse::<LockMode>().is_err());
        let r = Retention {
            mode: LockMode::Compliance,
            until: DateTime::parse_from_rfc3339("2030-01-02T03:04:05Z")
                .unwrap()
                .with_timezone(&Utc),
        };
        assert_eq!(r.to_string(), "COMPLIANCE until 2030-01-02T03:04:05Z");
        assert_eq!(r.date(), "2030-01-02T03:04:05.000Z");
    }
}
