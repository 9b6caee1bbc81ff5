//! Refusals about backups, image copies and restores: the object named does not fit the
//! request, or the place to write is not free.

/// A backup, image copy or restore the engine turns down.
#[derive(Debug, thiserror::Error)]
pub enum Backups {
    /// A backup that is not AVAILABLE, named for a use that needs one that is.
    #[error("backup {backup_id} is {status}, {}", unavailable_tail(.for_))]
    NotAvailable {
        backup_id: String,
        status: String,
        for_: Unavailable,
    },
    #[error(
        "backup {backup_id} is not in the catalog of repository {repo}; hint: recman list backup"
    )]
    NotInCatalog { backup_id: String, repo: String },
    /// Two COPIES of a backup that would land in one directory.
    #[error(
        "COPIES: copy {copy} of backup {backup_id} would go to {dir}, where another copy already is; hint: give each copy a FORMAT in a directory of its own"
    )]
    CopiesShareDir {
        copy: u32,
        backup_id: String,
        dir: String,
    },
    #[error(
        "file {file} is {size} bytes, more than MAXSETSIZE {max}: no backup set can hold it; hint: raise --maxsetsize, or give --section-size to back it up in sections"
    )]
    FileOverMaxSetSize { file: String, size: u64, max: u64 },
    #[error(
        "file {file} is {size} bytes, more than 256 pieces of MAXPIECESIZE {max}; hint: raise MAXPIECESIZE"
    )]
    FileOverMaxPieceSize { file: String, size: u64, max: u64 },
    /// A PARTIAL backup whose window ended before any set was finished.
    #[error(
        "backup {backup_id} finished no backup set within DURATION {window}: nothing to keep as a partial backup; hint: give a longer window, or smaller sets with --filesperset"
    )]
    NothingInWindow { backup_id: String, window: String },
    #[error("image copies are named by their tag; hint: add --tag NAME")]
    CopyNeedsTag,
    /// A level 0 image copy under a tag already taken.
    #[error(
        "image copy {tag} already exists; hint: roll it forward with `recman recover copy --tag {tag}` and level 1 backups taken --for-recover-of-copy"
    )]
    CopyExists { tag: String },
    /// An image copy written where one already is.
    #[error(
        "image copy {tag} already exists at {root}; hint: roll it forward with `recman recover copy --tag {tag}`"
    )]
    CopyExistsAt { tag: String, root: String },
    #[error("--for-recover-of-copy needs --incremental-level 1")]
    RecoverOfCopyNeedsLevel1,
    /// An image copy rolled forward past the recovery target.
    #[error(
        "image copy {tag} holds the state of {backup_id} (stop {stop_time} at lsn {stop_lsn}), which is after {target}; hint: restore from backup sets (without --from-copy), or recover the copy less far next time"
    )]
    CopyPastTarget {
        tag: String,
        backup_id: String,
        stop_time: String,
        stop_lsn: String,
        target: String,
    },
    /// A restore through an agent (or into a pipe) of less than whole backup sets.
    #[error(
        "a restore{place} writes whole backups from backup sets only; hint: leave out --from-copy and --include-db, or restore on this host with --agent local (or on the database host itself)"
    )]
    WholeSetsOnly { place: String },
    #[error(
        "a partial restore (--include-db, recover table) reads backup sets, not image copies; hint: leave out --from-copy"
    )]
    PartialFromCopy,
    #[error(
        "backup {backup_id} was imported from another tool and is restored whole only; hint: leave out --include-db, or restore it whole and take what you need from it"
    )]
    PartialOfImported { backup_id: String },
    #[error(
        "backup manifest {path} has version {version}, newer than this recman understands; hint: upgrade recman"
    )]
    ManifestTooNew { path: String, version: u32 },
    /// A backup's manifest naming a path outside what a restore may write.
    #[error(
        "{whose} names entry {path:?}, {why}: restore writes only inside the target directory and the tablespace locations; nothing was written; hint: the manifest was changed or damaged — validate the backup and restore from an intact one"
    )]
    Unconfined {
        whose: String,
        path: String,
        why: String,
    },
    #[error(
        "--tablespace-map names {old:?}, which is not a tablespace of backup {backup_id}; hint: its tablespaces are: {known}"
    )]
    NotATablespace {
        old: String,
        backup_id: String,
        known: String,
    },
    #[error("tablespace location {path} must be an absolute path")]
    TablespaceNotAbsolute { path: String },
    /// A restore's target directory (or a tablespace location) that holds something.
    /// `forced` says why --force did not clear it, when it was given.
    #[error("{what} {dir}{place} is not empty{forced}; nothing was written; hint: {hint}")]
    RestoreDirNotEmpty {
        what: String,
        dir: String,
        place: String,
        forced: String,
        hint: &'static str,
    },
    /// The directory of an auxiliary instance, which must be empty or new.
    #[error(
        "directory {dir} is not empty; hint: name an empty or new directory for the auxiliary instance (--dir), or remove what is there"
    )]
    AuxiliaryDirNotEmpty { dir: String },
    #[error(
        "auxiliary directory {dir} is not empty; hint: name an empty or new directory with --auxiliary-dir (another recover table may be using this one)"
    )]
    RecoverTableDirNotEmpty { dir: String },
    #[error(
        "recover table needs a point in the past; hint: give --until-time, --until-lsn or --until-xid (RMAN's UNTIL)"
    )]
    RecoverTableNeedsTarget,
    #[error(
        "duplicate database --for-standby takes no recovery target: a standby replays all the WAL there is and then streams; hint: leave out --until-…, or duplicate a clone without --for-standby"
    )]
    StandbyTakesNoTarget,
    #[error(
        "duplicate database --for-standby needs the primary's connection string; hint: add --primary-conninfo 'host=… port=… user=…'"
    )]
    StandbyNeedsPrimary,
    #[error(
        "recover block: no block named; hint: name FILE:BLOCK, or use `recover corruption-list`"
    )]
    NoBlockNamed,
    #[error(
        "block {block} is past the end of {file} ({len} bytes); nothing was written; hint: name a block the file holds"
    )]
    BlockPastEnd { block: u32, file: String, len: u64 },
    /// RESTORE CONTROLFILE FROM a path without a file name.
    #[error(
        "RESTORE CONTROLFILE FROM '{from}' names no file; hint: give the path of a piece written by BACKUP CURRENT CONTROLFILE"
    )]
    ControlfileNamesNoFile { from: String },
    #[error(
        "{root} is not a recman repository; hint: give --repo the repository whose catalog the piece holds"
    )]
    NotRepository { root: String },
    /// A piece that is not a control file backup (`why` says what it is instead).
    #[error("piece {from}: {why}; hint: give a piece written by BACKUP CURRENT CONTROLFILE")]
    NotControlfilePiece { from: String, why: String },
    #[error(
        "piece {from} holds no catalog; hint: give a piece written by BACKUP CURRENT CONTROLFILE"
    )]
    PieceHoldsNoCatalog { from: String },
}

/// What a backup that is not AVAILABLE was named for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// `validate backup`.
    Validate,
    /// The base of a synthetic backup.
    Base,
    /// A copy to a second tier.
    Copy,
}

fn unavailable_tail(for_: &Unavailable) -> &'static str {
    match for_ {
        Unavailable::Validate => {
            "not AVAILABLE; nothing to validate; hint: `recman list backup` shows its error"
        }
        Unavailable::Base => "not AVAILABLE; hint: `recman list backup` shows the usable ones",
        Unavailable::Copy => {
            "only AVAILABLE backups are copied; hint: list them with `recman list backup`"
        }
    }
}
