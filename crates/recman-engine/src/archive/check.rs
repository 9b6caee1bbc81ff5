//! What archive-push lets into the repository. A WAL archive is trusted by recovery, so a file
//! that is not WAL of the registered cluster (an empty file, a text file, another cluster's
//! segment, a segment under another segment's name) is refused at the door: stored, it would
//! both lose its real namesake (refused later as "different content") and poison recovery.

use crate::error::EngineError;
use recman_catalog::DbRecord;

/// `xlp_info` bit of a page that carries the long header (the first page of a segment).
const XLP_LONG_HEADER: u16 = 0x0002;
/// Size of the long page header: the short header (20 bytes, aligned to 24) plus system
/// identifier, segment size and WAL block size.
const LONG_HEADER_LEN: usize = 40;

/// Checks that `data`, to be archived as `name`, is what a file of that name from the cluster
/// `db` must be; the error names the file and says why it was refused.
pub(crate) fn check_wal_file(db: &DbRecord, name: &str, data: &[u8]) -> Result<(), EngineError> {
    let refuse = |why: String| {
        EngineError::from(crate::refusal::Wal::NotThisCluster {
            name: name.to_string(),
            db: db.name.clone(),
            why,
        })
    };
    if let Some(seg) = name.strip_suffix(".partial").unwrap_or(name).get(..24)
        && super::is_segment_name(seg)
        && (name.len() == 24 || name == format!("{seg}.partial"))
    {
        return check_segment(db, seg, data).map_err(refuse);
    }
    if let Some(tli) = name.strip_suffix(".history") {
        return check_history(tli, data).map_err(refuse);
    }
    if let Some(rest) = name.strip_suffix(".backup") {
        return check_backup_history(rest, data).map_err(refuse);
    }
    Err(refuse(
        "the name is not that of a WAL segment, a .partial segment, a .history or a .backup file"
            .into(),
    ))
}

fn u16_at(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([d[at], d[at + 1]])
}
fn u32_at(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(d[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(d: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(d[at..at + 8].try_into().expect("8 bytes"))
}

/// A segment (or a .partial one, which PostgreSQL keeps at full size) begins with a long page
/// header naming the cluster, the segment size and the page's own WAL address.
fn check_segment(db: &DbRecord, seg: &str, data: &[u8]) -> Result<(), String> {
    if data.len() < LONG_HEADER_LEN {
        return Err(format!(
            "it holds {} bytes, less than one WAL page header",
            data.len()
        ));
    }
    let (magic, info, tli) = (u16_at(data, 0), u16_at(data, 2), u32_at(data, 4));
    let (pageaddr, sysid) = (u64_at(data, 8), u64_at(data, 24));
    let (seg_size, blcksz) = (u32_at(data, 32), u32_at(data, 36));
    let major = db.pg_version / 10_000;
    if let Some(want) = recman_pg::version::wal_page_magic(major)
        && magic != want
    {
        return Err(format!(
            "its first page header has magic {magic:#06x}, not PostgreSQL {major}'s {want:#06x}: it is not a WAL segment of this cluster's version"
        ));
    }
    if info & XLP_LONG_HEADER == 0 {
        return Err(
            "its first page has no long header: it is not the start of a WAL segment".into(),
        );
    }
    if sysid != db.system_identifier {
        return Err(format!(
            "it was written by the cluster with system identifier {sysid}, not the registered {}",
            db.system_identifier
        ));
    }
    if !seg_size.is_power_of_two() || !(1 << 20..=1 << 30).contains(&seg_size) {
        return Err(format!(
            "its header gives a segment size of {seg_size} bytes, which PostgreSQL never uses"
        ));
    }
    if !blcksz.is_power_of_two() || !(1024..=65536).contains(&blcksz) {
        return Err(format!(
            "its header gives a WAL block size of {blcksz} bytes, which PostgreSQL never uses"
        ));
    }
    if data.len() as u64 != u64::from(seg_size) {
        return Err(format!(
            "it holds {} bytes, but the cluster's WAL segments are {seg_size} bytes",
            data.len()
        ));
    }
    let hex = |r: std::ops::Range<usize>| u64::from_str_radix(&seg[r], 16).unwrap_or(u64::MAX);
    let (name_tli, log, segno) = (hex(0..8), hex(8..16), hex(16..24));
    let per_log = (1u64 << 32) / u64::from(seg_size);
    let want_addr = (log * per_log + segno) * u64::from(seg_size);
    if segno >= per_log || pageaddr != want_addr {
        return Err(format!(
            "its first page is at WAL address {:X}/{:X}, but a segment named {seg} starts at {:X}/{:X}: the file is another segment under this name",
            pageaddr >> 32,
            pageaddr as u32,
            want_addr >> 32,
            want_addr as u32
        ));
    }
    // The first segment of a new timeline starts with a copy of its parent's pages, which
    // carry the parent's (smaller) timeline.
    if tli == 0 || u64::from(tli) > name_tli {
        return Err(format!(
            "its first page belongs to timeline {tli}, after the name's timeline {name_tli}"
        ));
    }
    Ok(())
}

/// `<8 hex digits>.history`: lines of `parent-timeline <tab> switch-LSN <tab> reason`, blank
/// lines and `#` comments; each parent before the file's own timeline.
fn check_history(tli: &str, data: &[u8]) -> Result<(), String> {
    let own = (tli.len() == 8)
        .then(|| u32::from_str_radix(tli, 16).ok())
        .flatten()
        .filter(|t| *t > 1)
        .ok_or("a history file is named after its timeline, 8 hex digits above 1")?;
    let text = std::str::from_utf8(data).map_err(|_| "it is not text".to_string())?;
    let mut entries = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let parent = fields.next().and_then(|f| f.parse::<u32>().ok());
        let lsn = fields.next().map(|f| f.parse::<recman_pg::Lsn>());
        match (parent, lsn) {
            (Some(p), Some(Ok(_))) if p < own => entries += 1,
            _ => {
                return Err(format!(
                    "line {} is not `<parent timeline> <switch LSN> <reason>` with a parent before timeline {own}",
                    n + 1
                ));
            }
        }
    }
    if entries == 0 {
        return Err("it names no parent timeline".into());
    }
    Ok(())
}

/// `<segment>.<8 hex digits>.backup`: the backup history file pg_backup_stop writes, whose
/// START WAL LOCATION line names the segment the file is named after.
fn check_backup_history(rest: &str, data: &[u8]) -> Result<(), String> {
    let seg = rest
        .split_once('.')
        .filter(|(s, off)| super::is_segment_name(s) && off.len() == 8)
        .map(|(s, _)| s)
        .ok_or("a backup history file is named <segment>.<8 hex digits>.backup")?;
    let text = std::str::from_utf8(data).map_err(|_| "it is not text".to_string())?;
    let start = text
        .lines()
        .find_map(|l| l.strip_prefix("START WAL LOCATION: "))
        .ok_or("it has no START WAL LOCATION line")?;
    if !start.contains(&format!("(file {seg})")) {
        return Err(format!(
            "its START WAL LOCATION ({start}) is not in segment {seg}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEG: u32 = 16 << 20;

    fn db() -> DbRecord {
        DbRecord {
            id: 1,
            name: "prod".into(),
            system_identifier: 7_300_000_000_000_000_001,
            pg_version: 150_004,
            pgdata: "/pg".into(),
            registered_at: 0,
        }
    }

    /// A segment as PostgreSQL 15 writes it: long header at the start, zeros after.
    fn segment(tli: u32, addr: u64) -> Vec<u8> {
        let mut d = vec![0u8; SEG as usize];
        d[0..2].copy_from_slice(&0xD110u16.to_le_bytes());
        d[2..4].copy_from_slice(&XLP_LONG_HEADER.to_le_bytes());
        d[4..8].copy_from_slice(&tli.to_le_bytes());
        d[8..16].copy_from_slice(&addr.to_le_bytes());
        d[24..32].copy_from_slice(&db().system_identifier.to_le_bytes());
        d[32..36].copy_from_slice(&SEG.to_le_bytes());
        d[36..40].copy_from_slice(&8192u32.to_le_bytes());
        d
    }

    fn refused(name: &str, data: &[u8], why: &str) {
        let e = check_wal_file(&db(), name, data).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(why), "{e}");
    }

    #[test]
    fn accepts_real_shapes() {
        let seg = segment(1, 0x0000_0001_0300_0000);
        check_wal_file(&db(), "000000010000000100000003", &seg).unwrap();
        check_wal_file(&db(), "000000010000000100000003.partial", &seg).unwrap();
        // The first segment of timeline 2 starts with timeline 1's pages.
        check_wal_file(&db(), "000000020000000100000003", &seg).unwrap();
        check_wal_file(
            &db(),
            "00000002.history",
            b"1\t1/3000060\tno recovery target specified\n",
        )
        .unwrap();
        check_wal_file(
            &db(),
            "000000010000000100000003.00000028.backup",
            b"START WAL LOCATION: 1/3000028 (file 000000010000000100000003)\nSTOP WAL LOCATION: 1/3000100 (file 000000010000000100000003)\n",
        )
        .unwrap();
    }

    #[test]
    fn refuses_what_is_not_wal_of_this_cluster() {
        let name = "000000010000000100000003";
        refused(name, b"", "less than one WAL page header");
        refused(name, &[b'x'; 4096], "magic");
        let mut other = segment(1, 0x0000_0001_0300_0000);
        other[24] ^= 1;
        refused(name, &other, "system identifier");
        refused(
            "000000010000000100000004",
            &segment(1, 0x0000_0001_0300_0000),
            "another segment under this name",
        );
        let mut short = segment(1, 0x0000_0001_0300_0000);
        short.truncate(8 << 20);
        refused(name, &short, "segments are 16777216 bytes");
        refused(
            "000000010000000100000003",
            &segment(3, 0x0000_0001_0300_0000),
            "timeline 3",
        );
        refused("00000002.history", b"hello\n", "line 1");
        refused("00000002.history", b"", "no parent");
        refused("00000001.history", b"1\t0/1\tx\n", "above 1");
        refused(
            "000000010000000100000003.00000028.backup",
            b"START WAL LOCATION: 1/4000028 (file 000000010000000100000004)\n",
            "not in segment",
        );
        refused("pg_wal_notes.txt", b"x", "not that of a WAL segment");
    }
}
