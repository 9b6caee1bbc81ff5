use crate::error::PgError;
use std::fmt;
use std::str::FromStr;

/// A WAL location (PostgreSQL's XLogRecPtr), written as `X/Y` in hex like the server does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xffff_ffff)
    }
}

impl FromStr for Lsn {
    type Err = PgError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || PgError::BadLsn {
            text: s.to_string(),
        };
        let (hi, lo) = s.trim().split_once('/').ok_or_else(bad)?;
        let hi = u32::from_str_radix(hi, 16).map_err(|_| bad())?;
        let lo = u32::from_str_radix(lo, 16).map_err(|_| bad())?;
        Ok(Lsn(((hi as u64) << 32) | lo as u64))
    }
}

/// Name of one WAL segment file: timeline plus segment number, for a given segment size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalName {
    pub timeline: u32,
    pub segno: u64,
    pub seg_size: u64,
}

impl WalName {
    pub fn containing(timeline: u32, lsn: Lsn, seg_size: u64) -> Self {
        WalName {
            timeline,
            segno: lsn.0 / seg_size,
            seg_size,
        }
    }
    fn segs_per_xlogid(&self) -> u64 {
        0x1_0000_0000 / self.seg_size
    }
}

impl fmt::Display for WalName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per = self.segs_per_xlogid();
        write!(
            f,
            "{:08X}{:08X}{:08X}",
            self.timeline,
            self.segno / per,
            self.segno % per
        )
    }
}

/// Every segment a backup needs to become consistent: from the one holding `start` to the one
/// holding the last byte before `stop` (stop is the end of the backup-end record, so a stop
/// exactly on a segment boundary does not need the next segment).
pub fn wal_segments_between(timeline: u32, start: Lsn, stop: Lsn, seg_size: u64) -> Vec<WalName> {
    let first = start.0 / seg_size;
    let last = stop.0.saturating_sub(1).max(start.0) / seg_size;
    (first..=last)
        .map(|segno| WalName {
            timeline,
            segno,
            seg_size,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_round_trip() {
        let l: Lsn = "16/B374D848".parse().unwrap();
        assert_eq!(l.0, 0x16_B374_D848);
        assert_eq!(l.to_string(), "16/B374D848");
        assert!("zz".parse::<Lsn>().is_err());
    }

    #[test]
    fn wal_names_match_postgres() {
        let seg = 16 << 20;
        let w = WalName::containing(1, "0/3000028".parse().unwrap(), seg);
        assert_eq!(w.to_string(), "000000010000000000000003");
        let w = WalName::containing(2, "1/FF000000".parse().unwrap(), seg);
        assert_eq!(w.to_string(), "0000000200000001000000FF");
        let v = wal_segments_between(1, Lsn(0x2000028), Lsn(0x4000000), seg);
        let names: Vec<_> = v.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            names,
            ["000000010000000000000002", "000000010000000000000003"]
        );
    }
}
