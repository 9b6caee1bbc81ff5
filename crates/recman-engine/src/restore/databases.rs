//! The databases of a restored cluster, read from its files without starting it: the relation
//! map `global/pg_filenode.map` names the file of `pg_database` (1262), whose heap tuples
//! begin with the database's oid and name on every supported major (13 and later).

use crate::error::EngineError;
use std::path::Path;

const RELMAP_MAGIC: i32 = 0x0059_2717;
const PG_DATABASE: u32 = 1262;
const BLCKSZ: usize = recman_page::BLCKSZ;
const NAMEDATALEN: usize = 64;
const HEAP_XMIN_INVALID: u16 = 0x0200;
const HEAP_XMAX_INVALID: u16 = 0x0800;
const HEAP_XMAX_LOCK_ONLY: u16 = 0x0080;

/// One `pg_database` tuple: oid, name, and whether no transaction deleted it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbTuple {
    pub oid: u32,
    pub name: String,
    pub live: bool,
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

/// The file number a relation map gives `oid`.
pub fn mapped_filenode(map: &[u8], oid: u32) -> Option<u32> {
    if map.len() < 8 || le32(map, 0) as i32 != RELMAP_MAGIC {
        return None;
    }
    let n = le32(map, 4) as usize;
    (0..n)
        .map(|i| 8 + 8 * i)
        .take_while(|at| at + 8 <= map.len())
        .find(|&at| le32(map, at) == oid)
        .map(|at| le32(map, at + 4))
}

/// The tuples of a `pg_database` heap file.
pub fn parse_pg_database(heap: &[u8]) -> Vec<DbTuple> {
    let mut out = Vec::new();
    for page in heap.chunks_exact(BLCKSZ) {
        let lower = le16(page, 12) as usize;
        if !(24..=BLCKSZ).contains(&lower) {
            continue;
        }
        for lp in (24..lower).step_by(4) {
            let v = le32(page, lp);
            let (off, flags, len) = ((v & 0x7fff) as usize, (v >> 15) & 3, (v >> 17) as usize);
            // LP_NORMAL only; a tuple shorter than its header plus oid and name is not one.
            if flags != 1 || off + len > BLCKSZ || len < 24 + 4 + NAMEDATALEN {
                continue;
            }
            let t = &page[off..off + len];
            let xmax = le32(t, 4);
            let infomask = le16(t, 20);
            let hoff = t[22] as usize;
            if hoff + 4 + NAMEDATALEN > len || infomask & HEAP_XMIN_INVALID != 0 {
                continue;
            }
            let oid = le32(t, hoff);
            let raw = &t[hoff + 4..hoff + 4 + NAMEDATALEN];
            let end = raw.iter().position(|&c| c == 0).unwrap_or(NAMEDATALEN);
            let live = xmax == 0 || infomask & (HEAP_XMAX_INVALID | HEAP_XMAX_LOCK_ONLY) != 0;
            out.push(DbTuple {
                oid,
                name: String::from_utf8_lossy(&raw[..end]).into_owned(),
                live,
            });
        }
    }
    out
}

/// The databases of the cluster restored at `pgdata` (its `global/` must be there).
pub fn read_databases(pgdata: &Path) -> Result<Vec<DbTuple>, EngineError> {
    read_shared(pgdata, PG_DATABASE, "pg_database")
}

fn read_shared(pgdata: &Path, oid: u32, what: &str) -> Result<Vec<DbTuple>, EngineError> {
    let map_path = pgdata.join("global/pg_filenode.map");
    let map = std::fs::read(&map_path).map_err(|e| EngineError::io("read", &map_path, e))?;
    let node = mapped_filenode(&map, oid).ok_or_else(|| {
        EngineError::Corrupt(format!(
            "{} names no file for {what}; hint: the backup's global/ is damaged, validate it with `recman validate backup`",
            map_path.display()
        ))
    })?;
    let heap_path = pgdata.join(format!("global/{node}"));
    let heap = std::fs::read(&heap_path).map_err(|e| EngineError::io("read", &heap_path, e))?;
    Ok(parse_pg_database(&heap))
}

/// The oid of database `name`: a live tuple first, else the only oid any tuple gives it.
pub fn oid_of(dbs: &[DbTuple], name: &str) -> Option<u32> {
    if let Some(t) = dbs.iter().find(|t| t.live && t.name == name) {
        return Some(t.oid);
    }
    let mut oids: Vec<u32> = dbs
        .iter()
        .filter(|t| t.name == name)
        .map(|t| t.oid)
        .collect();
    oids.sort_unstable();
    oids.dedup();
    (oids.len() == 1).then(|| oids[0])
}

/// The database a data-directory path belongs to: `base/OID/…` or a tablespace's
/// `pg_tblspc/TS/VERSION_DIR/OID/…`; None for cluster-wide paths.
pub fn db_of(path: &str) -> Option<u32> {
    let mut parts = path.split('/');
    match parts.next()? {
        "base" => parts.next()?.parse().ok(),
        "pg_tblspc" => {
            parts.next()?;
            parts.next()?;
            parts.next()?.parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_database() {
        assert_eq!(db_of("base/16384/1259"), Some(16384));
        assert_eq!(db_of("base/5"), Some(5));
        assert_eq!(db_of("base"), None);
        assert_eq!(db_of("global/1262"), None);
        assert_eq!(
            db_of("pg_tblspc/16390/PG_15_202209061/16384/16400"),
            Some(16384)
        );
        assert_eq!(db_of("pg_tblspc/16390/PG_15_202209061"), None);
        assert_eq!(db_of("pg_tblspc/16390"), None);
    }

    #[test]
    fn relation_map_lookup() {
        let mut m = Vec::new();
        m.extend_from_slice(&RELMAP_MAGIC.to_le_bytes());
        m.extend_from_slice(&2i32.to_le_bytes());
        for (o, f) in [(1260u32, 1260u32), (1262, 16500)] {
            m.extend_from_slice(&o.to_le_bytes());
            m.extend_from_slice(&f.to_le_bytes());
        }
        assert_eq!(mapped_filenode(&m, 1262), Some(16500));
        assert_eq!(mapped_filenode(&m, 1259), None);
        assert_eq!(mapped_filenode(&[0; 8], 1262), None);
    }

    #[test]
    fn a_dead_tuple_yields_to_a_live_one() {
        let dbs = vec![
            DbTuple {
                oid: 1,
                name: "a".into(),
                live: false,
            },
            DbTuple {
                oid: 2,
                name: "a".into(),
                live: true,
            },
            DbTuple {
                oid: 3,
                name: "b".into(),
                live: false,
            },
            DbTuple {
                oid: 4,
                name: "c".into(),
                live: false,
            },
            DbTuple {
                oid: 5,
                name: "c".into(),
                live: false,
            },
        ];
        assert_eq!(oid_of(&dbs, "a"), Some(2));
        assert_eq!(oid_of(&dbs, "b"), Some(3));
        assert_eq!(oid_of(&dbs, "c"), None);
        assert_eq!(oid_of(&dbs, "d"), None);
    }
}
