//! Partial restores: `restore database --include-db` (the cluster-wide files and the named
//! databases) and the auxiliary instance of `recover table` (the cluster-wide files, one
//! database's catalogs and a few relations). Both go in two passes over the backup: first
//! everything outside the databases' directories, which holds `pg_database`; then, with the
//! databases' oids read from it, the directories wanted. Only the sets holding a wanted file
//! are read (see `chain`).

use super::chain::restore_chain_with;
use super::databases::{DbTuple, db_of, oid_of, read_databases};
use super::files::Layout;
use super::sink::Keep;
use crate::context::Context;
use crate::error::EngineError;
use crate::pieces::Source;
use crate::progress::Progress;
use recman_catalog::IoStatRow;
use recman_format::manifest::BackupManifest;
use std::collections::{HashMap, HashSet};

/// The first file number PostgreSQL gives a relation created by a user: below it are the
/// catalogs initdb made.
pub const FIRST_NORMAL_OBJECT_ID: u32 = 16384;

/// Databases always restored with `--include-db`: a cluster cannot be used without them,
/// and they are small.
pub const SYSTEM_DATABASES: [&str; 3] = ["template0", "template1", "postgres"];

/// What a restore writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// Every file of the backup.
    #[default]
    Whole,
    /// The cluster-wide files and these databases (with the system databases).
    Databases(Vec<String>),
    /// The cluster-wide files and, of this database, its directory's non-relation files, its
    /// relations below [`FIRST_NORMAL_OBJECT_ID`] and the relations with these file numbers.
    Relations {
        database: String,
        filenodes: Vec<u32>,
    },
    /// The cluster-wide files, the non-relation files of every database's directory, and
    /// these files (paths in the backup), for block recovery's auxiliary copy.
    Files(Vec<String>),
}

/// What a partial restore wrote and left out.
#[derive(Clone, Debug, Default)]
pub struct Partial {
    /// (name, oid) of the databases restored.
    pub included: Vec<(String, u32)>,
    /// (name, oid) of the databases left out.
    pub excluded: Vec<(String, u32)>,
    /// Piece bytes read.
    pub read_bytes: u64,
}

fn input_bytes(rows: &[IoStatRow]) -> u64 {
    rows.iter()
        .filter(|r| r.kind == "INPUT")
        .map(|r| r.bytes)
        .sum()
}

/// The file number of a relation file's name (`16384`, `16384_vm`, `16384.2`); None for
/// other files (PG_VERSION, pg_filenode.map).
pub fn filenode_of(path: &str) -> Option<u32> {
    let name = path.rsplit('/').next()?;
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    let rest = &name[digits.len()..];
    let fork = rest.is_empty()
        || rest.starts_with('.')
        || ["_fsm", "_vm", "_init"].iter().any(|f| rest.starts_with(f));
    if digits.is_empty() || !fork {
        return None;
    }
    digits.parse().ok()
}

type Restored = (u64, u64, Vec<IoStatRow>);

#[allow(clippy::too_many_arguments)]
pub(crate) fn restore_selection(
    ctx: &Context,
    chain: &[BackupManifest],
    sources: &HashMap<String, Vec<Source>>,
    layout: &Layout,
    channels: u32,
    selection: &Selection,
    progress: &dyn Progress,
) -> Result<(Restored, Partial), EngineError> {
    if *selection == Selection::Whole {
        let r = restore_chain_with(ctx, chain, sources, layout, channels, None, progress)?;
        let read_bytes = input_bytes(&r.2);
        return Ok((
            r,
            Partial {
                read_bytes,
                ..Partial::default()
            },
        ));
    }
    if let Selection::Files(files) = selection {
        let named: HashSet<&str> = files.iter().map(String::as_str).collect();
        let keep = |p: &str| {
            named.contains(p) || db_of(p).is_none() || is_db_dir(p) || filenode_of(p).is_none()
        };
        let r = restore_chain_with(ctx, chain, sources, layout, channels, Some(&keep), progress)?;
        let read_bytes = input_bytes(&r.2);
        return Ok((
            r,
            Partial {
                read_bytes,
                ..Partial::default()
            },
        ));
    }
    let cluster_wide = |p: &str| db_of(p).is_none();
    let (n1, b1, mut rows) = restore_chain_with(
        ctx,
        chain,
        sources,
        layout,
        channels,
        Some(&cluster_wide),
        progress,
    )?;
    let dbs = read_databases(&layout.to)?;
    let mut partial = Partial::default();
    let wanted: Vec<&str> = match selection {
        Selection::Whole | Selection::Files(_) => unreachable!("handled above"),
        Selection::Databases(names) => names.iter().map(String::as_str).collect(),
        Selection::Relations { database, .. } => vec![database.as_str()],
    };
    let mut oids = HashSet::new();
    for name in &wanted {
        let oid = oid_of(&dbs, name).ok_or_else(|| not_found(name, &dbs))?;
        oids.insert(oid);
    }
    if matches!(selection, Selection::Databases(_)) {
        for name in SYSTEM_DATABASES {
            if let Some(oid) = oid_of(&dbs, name) {
                oids.insert(oid);
            }
        }
    }
    let mut seen = HashSet::new();
    for t in dbs.iter().filter(|t| t.live) {
        if seen.insert(t.oid) {
            let e = (t.name.clone(), t.oid);
            if oids.contains(&t.oid) {
                partial.included.push(e);
            } else {
                partial.excluded.push(e);
            }
        }
    }
    let extra: HashSet<u32> = match selection {
        Selection::Relations { filenodes, .. } => filenodes.iter().copied().collect(),
        _ => HashSet::new(),
    };
    let relations_only = matches!(selection, Selection::Relations { .. });
    let in_dbs = |p: &str| {
        db_of(p).is_some_and(|o| oids.contains(&o))
            && (!relations_only
                || is_db_dir(p)
                || match filenode_of(p) {
                    // PG_VERSION, pg_filenode.map.
                    None => true,
                    Some(n) => n < FIRST_NORMAL_OBJECT_ID || extra.contains(&n),
                })
    };
    let keep: Keep = &in_dbs;
    let (n2, b2, rows2) =
        restore_chain_with(ctx, chain, sources, layout, channels, Some(keep), progress)?;
    rows.extend(rows2);
    partial.read_bytes = input_bytes(&rows);
    Ok(((n1 + n2, b1 + b2, rows), partial))
}

/// Appends to postgresql.auto.conf what recovery of a partial restore needs: WAL records of
/// left-out relations find no page there, which PostgreSQL otherwise treats as corruption
/// at the end of recovery. Returns the settings written.
pub(crate) fn write_partial_settings(layout: &Layout) -> Result<Vec<String>, EngineError> {
    let setting = "ignore_invalid_pages = on".to_string();
    let auto = layout.to.join("postgresql.auto.conf");
    let mut text = layout.dest.read_whole(&auto)?.ok_or_else(|| {
        EngineError::io(
            "write",
            &auto,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })?;
    text.extend_from_slice(
        format!(
            "# a partial restore: WAL of the files left out must not stop recovery\n{setting}\n"
        )
        .as_bytes(),
    );
    layout.dest.write_whole(&auto, &text)?;
    Ok(vec![setting])
}

/// `base/OID` or `pg_tblspc/TS/VERSION_DIR/OID`: a database's directory itself.
fn is_db_dir(p: &str) -> bool {
    let parts = p.split('/').count();
    (p.starts_with("base/") && parts == 2) || (p.starts_with("pg_tblspc/") && parts == 4)
}

fn not_found(name: &str, dbs: &[DbTuple]) -> EngineError {
    let mut names: Vec<String> = dbs
        .iter()
        .filter(|t| t.live && t.name != "template0")
        .map(|t| t.name.clone())
        .collect();
    names.sort();
    names.dedup();
    EngineError::NotFound(format!(
        "database {name} is not in the backup's pg_database (it has {}); hint: name one of those, or restore a backup taken after {name} was created",
        crate::util::cut(&names)
    ))
}

#[cfg(test)]
mod tests {
    use super::filenode_of;

    #[test]
    fn relation_file_names() {
        assert_eq!(filenode_of("base/5/16384"), Some(16384));
        assert_eq!(filenode_of("base/5/16384_vm"), Some(16384));
        assert_eq!(filenode_of("base/5/16384_fsm"), Some(16384));
        assert_eq!(filenode_of("base/5/16384.12"), Some(16384));
        assert_eq!(filenode_of("base/5/1259"), Some(1259));
        assert_eq!(filenode_of("base/5/PG_VERSION"), None);
        assert_eq!(filenode_of("base/5/pg_filenode.map"), None);
        assert_eq!(filenode_of("base/5"), Some(5));
    }
}
