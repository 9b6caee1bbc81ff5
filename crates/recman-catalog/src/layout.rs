//! The repository's layout: where each kind of object lives, relative to the repository root.
//! The one place that knows it; the engine, the catalog and rebuild all ask here, so the paths
//! a backup writes and the paths a restore, a listing or a rebuild looks for cannot drift.
//!
//! ```text
//! recman.repo  catalog.db  lock
//! <db>/backup/<backup id>/manifest.json          the manifest (docs/format.md)
//! <db>/backup/<backup id>/sSSSSS_pPPP.rmp    backup pieces (set, piece numbers)
//! <db>/wal/<timeline+log>/<name>.rmw             archived WAL, a one-file piece each
//! <db>/wal/misc/<name>.rmw                       archived files whose names are not hex
//! <db>/copy/<TAG>/...                            an image copy and its copy.json
//! ```

/// A backup's directory.
pub fn backup_dir(db: &str, backup_id: &str) -> String {
    format!("{db}/backup/{backup_id}")
}

/// A backup's manifest.
pub fn manifest(db: &str, backup_id: &str) -> String {
    format!("{}/manifest.json", backup_dir(db, backup_id))
}

/// Piece `piece_no` of backup set `set_no` in backup directory `dir` (see [`backup_dir`]).
pub fn piece(dir: &str, set_no: u32, piece_no: u32) -> String {
    format!("{dir}/s{set_no:05}_p{piece_no:03}.rmp")
}

/// Whether `rel` is a manifest's path: `<db>/backup/<id>/manifest.json`.
pub fn is_manifest(rel: &str) -> bool {
    let p: Vec<&str> = rel.split('/').collect();
    p.len() == 4 && p[1] == "backup" && p[3] == "manifest.json"
}

/// The directory of archived WAL file `name`: grouped by its first 16 hex digits (timeline
/// and log), so that no directory grows past a few hundred entries; other names (history
/// files, .backup files) go to `misc` unless they start with 16 hex digits.
pub fn wal_dir(db: &str, name: &str) -> String {
    let group = if name.len() >= 16 && name.bytes().take(16).all(|c| c.is_ascii_hexdigit()) {
        &name[..16]
    } else {
        "misc"
    };
    format!("{db}/wal/{group}")
}

/// Archived WAL file `name`'s object.
pub fn wal_object(db: &str, name: &str) -> String {
    format!("{}/{name}.rmw", wal_dir(db, name))
}

/// Whether `rel` is an archived WAL object's path: `<db>/wal/<group>/<name>.rmw`.
pub fn is_wal_object(rel: &str) -> bool {
    let p: Vec<&str> = rel.split('/').collect();
    p.len() == 4 && p[1] == "wal" && p[3].ends_with(".rmw")
}

/// The directory of the image copy tagged `tag` (tags are kept upper-case, as RMAN does).
pub fn copy_dir(db: &str, tag: &str) -> String {
    format!("{db}/copy/{}", tag.to_uppercase())
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths() {
        assert_eq!(
            super::manifest("prod", "B1"),
            "prod/backup/B1/manifest.json"
        );
        assert!(super::is_manifest(&super::manifest("prod", "B1")));
        assert!(!super::is_manifest("prod/backup/B1/s1_p1.rmp"));
        assert_eq!(
            super::wal_object("prod", "000000010000000A00000003"),
            "prod/wal/000000010000000A/000000010000000A00000003.rmw"
        );
        assert_eq!(
            super::wal_object("prod", "00000002.history"),
            "prod/wal/misc/00000002.history.rmw"
        );
        assert!(super::is_wal_object(&super::wal_object(
            "prod",
            "00000002.history"
        )));
        assert_eq!(super::copy_dir("prod", "roll"), "prod/copy/ROLL");
    }
}
