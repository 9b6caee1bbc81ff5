//! Refusals about WAL: names that are not WAL files or segments, and archiving that would
//! overwrite a file or leak one.

/// A WAL name or WAL file the engine turns down.
#[derive(Debug, thiserror::Error)]
pub enum Wal {
    /// archive_command passed something that is not the path of a WAL file.
    #[error(
        "{path} is not a WAL file path; hint: archive_command passes %p, the path of one WAL file"
    )]
    NotFilePath { path: String },
    /// A request to the repository host named something that is not a WAL file.
    #[error(
        "{name:?} is not a wal file name; nothing was archived or read; hint: archive-push sends %p's file name and archive-get %f, which are plain names such as 000000010000000000000003"
    )]
    NotFileName { name: String },
    /// A segment name was expected (`for_` says by whom).
    #[error("{}", not_segment(.name, .for_))]
    NotSegment { name: String, for_: SegmentUse },
    /// The same WAL file name archived before with other bytes.
    #[error(
        "wal file {name} is already archived in repository {repo} with different content (size {size} crc {crc:08x}, now size {new_size} crc {new_crc:08x}); refusing to overwrite it; hint: two clusters may be archiving into database {db:?}: give each its own registration, or remove the wrong one"
    )]
    ArchivedDifferently {
        name: String,
        repo: String,
        size: u64,
        crc: u32,
        new_size: u64,
        new_crc: u32,
        db: String,
    },
    /// A file handed to archive-push that is not what its name says.
    #[error(
        "refusing to archive {name} for database {db:?}: {why}; nothing was stored; hint: archive_command must pass %p, a file from the registered cluster's pg_wal, and %f must be its name"
    )]
    NotThisCluster {
        name: String,
        db: String,
        why: String,
    },
    /// Receiving WAL into an encrypted repository would spool it in plain text.
    #[error(
        "cannot receive wal into repository {repo}: it is encrypted, and the receiver's spool would hold the open segment in plain text; hint: keep archive-push for an encrypted repository, or receive into a plain one"
    )]
    ReceiveEncrypted { repo: String },
}

/// Who expected a WAL segment name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentUse {
    /// archive-prefetch, started by archive-get.
    Prefetch,
    /// archive-push-ahead, started by archive-push.
    PushAhead,
    /// A change-tracking summary.
    Summary,
}

fn not_segment(name: &str, for_: &SegmentUse) -> String {
    match for_ {
        SegmentUse::Prefetch => format!(
            "{name:?} is not a wal segment name; hint: archive-prefetch is started by archive-get for a segment"
        ),
        SegmentUse::PushAhead => format!(
            "{name:?} is not a wal segment name; hint: archive-push-ahead is started by archive-push for a segment"
        ),
        SegmentUse::Summary => format!(
            "{name} is not a WAL segment name; hint: only segments get change-tracking summaries"
        ),
    }
}
