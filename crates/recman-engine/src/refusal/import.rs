//! Refusals of another tool's backups: locations recman cannot import, and forms of a
//! backup it does not read.

/// A foreign backup or location the engine turns down.
#[derive(Debug, thiserror::Error)]
pub enum Import {
    #[error(
        "{location} is neither a pgBackRest repository (no backup/ directory) nor a pg_basebackup backup (no backup_manifest); hint: give the repository (repo1-path), a stanza's directory in it, pgBackRest's configuration file, or the directory pg_basebackup wrote"
    )]
    NotImportable { location: String },
    #[error(
        "pgBackRest repository {root} holds several stanzas ({names}); hint: choose one with --stanza NAME, or give its directory {root}/backup/NAME"
    )]
    SeveralStanzas { root: String, names: String },
    #[error(
        "pgBackRest configuration {path} names no stanza; hint: give the stanza with --stanza NAME"
    )]
    ConfigNamesNoStanza { path: String },
    #[error(
        "pgBackRest configuration {path} names several stanzas ({names}); hint: choose one with --stanza NAME"
    )]
    ConfigNamesSeveralStanzas { path: String, names: String },
    /// An encrypted stanza whose configuration gives no passphrase.
    #[error(
        "stanza {stanza} of {config} is encrypted but no passphrase is given; hint: set repo1-cipher-pass there, or {env} in the environment"
    )]
    NoPassphrase {
        stanza: String,
        config: String,
        env: String,
    },
    /// An encrypted file read without a passphrase.
    #[error(
        "{what} is encrypted; hint: give the repository's passphrase: --pgbackrest-config FILE naming repo1-cipher-pass, or PGBACKREST_REPO1_CIPHER_PASS in the environment"
    )]
    Encrypted { what: String },
    /// A PostgreSQL major version outside what recman supports.
    #[error(
        "{what} holds PostgreSQL {version:?}, which recman does not support; hint: recman supports PostgreSQL 13 to 18"
    )]
    UnsupportedPostgres { what: String, version: String },
    #[error(
        "{path} is a backup manifest of version {version}, which this recman does not read; hint: upgrade recman"
    )]
    ManifestVersion { path: String, version: String },
    #[error(
        "backup {backup_id} was imported from {origin:?}, which this recman does not read; hint: upgrade recman"
    )]
    UnknownOrigin { backup_id: String, origin: String },
    #[error("backup {backup_id} is not an imported backup")]
    NotImported { backup_id: String },
    #[error("{what} is not stored in streams")]
    NotInStreams { what: String },
    #[error(
        "{what} is a block incremental backup (repo-block), which recman does not read; hint: restore it with pgBackRest, or import the backups taken without repo-block"
    )]
    BlockIncremental { what: String },
    #[error(
        "{what}: file {name} is stored in block-incremental form, which recman does not read; hint: restore this backup with pgBackRest"
    )]
    BlockIncrementalFile { what: String, name: String },
    #[error(
        "{what} uses compression {codec:?}, which recman does not read; hint: recman reads gz, lz4, zst and bz2"
    )]
    Compression { what: String, codec: String },
    /// A pg_basebackup backup whose manifest changed since it was imported.
    #[error(
        "the backup_manifest of {location} gives {path} {size} bytes, the import recorded {recorded}; hint: the backup changed since `catalog import`: import it again"
    )]
    ManifestChanged {
        location: String,
        path: String,
        size: u64,
        recorded: u64,
    },
    /// A tar-format base of incremental backups, which are combined in plain format only.
    #[error(
        "pg_basebackup backup {location} is in tar format and has incremental backups on top of it, which recman combines in plain format only; hint: extract its tar files into a directory, import that, and import the incremental backups again"
    )]
    TarUnderIncrementals { location: String },
    #[error(
        "pg_basebackup backup {location} is an incremental backup in tar format, which recman reads in plain format only (as pg_combinebackup does); hint: extract its tar files into a directory and import that"
    )]
    IncrementalInTar { location: String },
    /// An incremental backup on top of one `--copy` converted, whose files it no longer reads.
    #[error(
        "pg_basebackup backup {location} is an incremental backup on top of backup {base}, which `catalog import --copy` brought into recman's format; hint: import a chain whole before copying it (newest first), or combine it with pg_combinebackup and import the result"
    )]
    IncrementalOnCopied { location: String, base: String },
    #[error(
        "{what} is in tar format, which `--copy` does not read yet; hint: extract its tar files into a directory, import that with --copy, or keep this one read in place"
    )]
    CopyOfTar { what: String },
    /// `--copy` of a base before the incremental backups that read it through its origin.
    #[error(
        "imported backup {backup_id} is the base of imported backup {child}, which reads it through its origin; hint: copy {child} first (newest first: `recman catalog import --copy` of its location), then this one"
    )]
    CopyBaseFirst { backup_id: String, child: String },
}
