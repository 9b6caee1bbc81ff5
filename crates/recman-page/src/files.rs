//! Data-directory paths: which files are relation segments, and what a backup leaves out.

use crate::layout::*;
use std::fmt;

/// A relation fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fork {
    Main,
    Fsm,
    Vm,
    Init,
}

impl Fork {
    /// The file name suffix: `""`, `"_fsm"`, `"_vm"`, `"_init"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Fork::Main => "",
            Fork::Fsm => "_fsm",
            Fork::Vm => "_vm",
            Fork::Init => "_init",
        }
    }

    /// The fork name as PostgreSQL spells it: `main`, `fsm`, `vm`, `init`.
    pub fn name(self) -> &'static str {
        match self {
            Fork::Main => "main",
            Fork::Fsm => "fsm",
            Fork::Vm => "vm",
            Fork::Init => "init",
        }
    }
}

/// One segment file of one fork of a relation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelFile {
    /// `None`: pg_default (`base/`) or pg_global (`global/`).
    pub tablespace_oid: Option<u32>,
    /// `None`: a shared relation under `global/`.
    pub db_oid: Option<u32>,
    pub relfilenode: u32,
    pub fork: Fork,
    pub segno: u32,
}

impl RelFile {
    /// Block number (within the fork) of the first block of this segment
    /// file: `segno * RELSEG_SIZE`.
    pub fn first_block(&self) -> u32 {
        self.segno.wrapping_mul(RELSEG_SIZE)
    }

    /// `(tablespace_oid, db_oid, relfilenode)`: identifies the relation
    /// regardless of fork and segment.
    pub fn rel_key(&self) -> (Option<u32>, Option<u32>, u32) {
        (self.tablespace_oid, self.db_oid, self.relfilenode)
    }

    /// The file name inside its database directory, e.g. `16384_vm.1`.
    pub fn file_name(&self) -> String {
        if self.segno == 0 {
            format!("{}{}", self.relfilenode, self.fork.suffix())
        } else {
            format!("{}{}.{}", self.relfilenode, self.fork.suffix(), self.segno)
        }
    }
}

/// Parses a decimal OID as PostgreSQL prints it: digits only, no leading
/// zeros, not zero, fits in u32.
pub(crate) fn parse_oid(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.starts_with('0') {
        return None;
    }
    s.parse().ok()
}

/// Parses `<relfilenode>[_fsm|_vm|_init][.<segno>]`.
pub(crate) fn parse_rel_file_name(name: &str) -> Option<(u32, Fork, u32)> {
    let (base, segno) = match name.split_once('.') {
        Some((base, seg)) => (base, parse_oid(seg)?),
        None => (name, 0),
    };
    let (node, fork) = match base.split_once('_') {
        Some((node, "fsm")) => (node, Fork::Fsm),
        Some((node, "vm")) => (node, Fork::Vm),
        Some((node, "init")) => (node, Fork::Init),
        Some(_) => return None,
        None => (base, Fork::Main),
    };
    Some((parse_oid(node)?, fork, segno))
}

/// Path components, ignoring empty and `.` components.
pub(crate) fn components(rel_path: &str) -> Vec<&str> {
    rel_path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// Classifies a path relative to the data directory (with `/` separators):
///
/// * `base/<db>/<relfilenode>[_fsm|_vm|_init][.<segno>]`
/// * `global/<relfilenode>...` (shared relations)
/// * `pg_tblspc/<tsoid>/<PG_xx_catver>/<db>/<relfilenode>...`
///
/// Returns `None` for everything else, e.g. `pg_filenode.map`,
/// `PG_VERSION`, `pg_internal.init`, temporary relations `t<N>_<relfilenode>`
/// and `pgsql_tmp` files. OIDs must be printed the way PostgreSQL prints
/// them (no leading zeros); segment 0 has no `.0` suffix.
pub fn classify(rel_path: &str) -> Option<RelFile> {
    let c = components(rel_path);
    let (tablespace_oid, db_oid, name) = match c.as_slice() {
        ["base", db, name] => (None, Some(parse_oid(db)?), *name),
        ["global", name] => (None, None, *name),
        ["pg_tblspc", ts, ver, db, name] if ver.starts_with("PG_") => {
            (Some(parse_oid(ts)?), Some(parse_oid(db)?), *name)
        }
        _ => return None,
    };
    let (relfilenode, fork, segno) = parse_rel_file_name(name)?;
    Some(RelFile {
        tablespace_oid,
        db_oid,
        relfilenode,
        fork,
        segno,
    })
}

/// True if `name` is a temporary relation file name:
/// `t<backend>_<relfilenode>[_fork][.<segno>]` (`looks_like_temp_rel_name`).
pub fn is_temp_rel_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('t') else {
        return false;
    };
    let Some((backend, rel)) = rest.split_once('_') else {
        return false;
    };
    !backend.is_empty()
        && backend.bytes().all(|b| b.is_ascii_digit())
        && parse_rel_file_name(rel).is_some()
}

/// What an online backup does with a path it leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// Leave the file or directory (and everything under it) out.
    Skip,
    /// Back up the directory itself, empty (restore recreates it).
    KeepDirEmpty,
}

/// Top-level directories whose contents are left out; the directories
/// themselves are kept, empty (pg_basebackup does the same, even when they
/// are symbolic links).
pub(crate) const EMPTY_DIRS: &[&str] = &[
    "pg_wal",
    "pg_dynshmem",
    "pg_notify",
    "pg_serial",
    "pg_snapshots",
    "pg_stat_tmp",
    "pg_subtrans",
    "pg_replslot",
];

/// Subdirectories of `pg_wal` that are kept, empty.
pub(crate) const WAL_KEEP_DIRS: &[&str] = &["archive_status", "summaries"];

/// File names left out in any directory.
pub(crate) const SKIP_FILES: &[&str] = &[
    "postmaster.pid",
    "postmaster.opts",
    "backup_label",
    "tablespace_map",
    "backup_label.old",
    "tablespace_map.old",
    "backup_manifest",
    "postgresql.auto.conf.tmp",
    "current_logfiles.tmp",
];

/// True if the directory components `dirs` are a database directory:
/// `base/<db>` or `pg_tblspc/<ts>/<PG_...>/<db>`.
pub(crate) fn is_db_dir(dirs: &[&str]) -> bool {
    match dirs {
        ["base", db] => parse_oid(db).is_some(),
        ["pg_tblspc", ts, ver, db] => {
            parse_oid(ts).is_some() && ver.starts_with("PG_") && parse_oid(db).is_some()
        }
        _ => false,
    }
}

/// What an online physical backup leaves out, following pg_basebackup:
///
/// * the contents of `pg_wal`, `pg_dynshmem`, `pg_notify`, `pg_serial`,
///   `pg_snapshots`, `pg_stat_tmp`, `pg_subtrans` and `pg_replslot`: the
///   directories themselves give [`Exclusion::KeepDirEmpty`] (whatever
///   `is_dir` says, as they may be symbolic links), anything under them
///   [`Exclusion::Skip`]; `pg_wal/archive_status` (and PostgreSQL 17's
///   `pg_wal/summaries`) are kept as empty directories too;
/// * in any directory, files named `postmaster.pid`, `postmaster.opts`,
///   `backup_label`, `tablespace_map` (the backup writes its own),
///   `backup_label.old`, `tablespace_map.old`, `backup_manifest`,
///   `postgresql.auto.conf.tmp`, `current_logfiles.tmp`, and names starting
///   with `pg_internal.init` (the relcache init file and its temporary
///   copies);
/// * anything (file or directory, any depth) whose name starts with
///   `pgsql_tmp`, and anything under such a directory;
/// * temporary relation files `t<N>_<relfilenode>[_fork][.<segno>]` in a
///   database directory.
///
/// `rel_path` is relative to the data directory with `/` separators.
/// Returns `None` for paths the backup keeps. pg_basebackup also leaves out
/// the non-init forks of unlogged relations; that needs the directory
/// listing (an `_init` fork beside them) and is the caller's job.
pub fn exclusion(rel_path: &str, is_dir: bool) -> Option<Exclusion> {
    let c = components(rel_path);
    let (&name, dirs) = c.split_last()?;

    if c.iter().any(|p| p.starts_with("pgsql_tmp")) {
        return Some(Exclusion::Skip);
    }

    let top = c[0];
    if EMPTY_DIRS.contains(&top) {
        return match c.len() {
            1 => Some(Exclusion::KeepDirEmpty),
            2 if top == "pg_wal" && WAL_KEEP_DIRS.contains(&name) && is_dir => {
                Some(Exclusion::KeepDirEmpty)
            }
            _ => Some(Exclusion::Skip),
        };
    }

    if is_dir {
        return None;
    }
    if SKIP_FILES.contains(&name) || name.starts_with("pg_internal.init") {
        return Some(Exclusion::Skip);
    }
    if is_temp_rel_name(name) && is_db_dir(dirs) {
        return Some(Exclusion::Skip);
    }
    None
}

impl fmt::Display for Fork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{PageHeader, page_checksum_field, page_lsn};

    #[test]
    fn header_parse_offsets() {
        let mut p = vec![0u8; BLCKSZ];
        p[0..4].copy_from_slice(&1u32.to_le_bytes());
        p[4..8].copy_from_slice(&0x2000_0028u32.to_le_bytes());
        p[8..10].copy_from_slice(&0xbeefu16.to_le_bytes());
        p[12..14].copy_from_slice(&28u16.to_le_bytes());
        p[14..16].copy_from_slice(&8000u16.to_le_bytes());
        p[16..18].copy_from_slice(&8192u16.to_le_bytes());
        p[18..20].copy_from_slice(&0x2004u16.to_le_bytes());
        let h = PageHeader::parse(&p);
        assert_eq!(h.lsn, 0x1_2000_0028);
        assert_eq!(page_lsn(&p), 0x1_2000_0028);
        assert_eq!(page_checksum_field(&p), 0xbeef);
        assert_eq!(h.page_size(), 8192);
        assert_eq!(h.layout_version(), 4);
        assert_eq!(h.check(), Ok(()));
    }
}
