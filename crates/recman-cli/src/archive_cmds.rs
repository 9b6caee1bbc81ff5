//! The WAL commands PostgreSQL calls: archive-push (archive_command), archive-get
//! (restore_command) with its read-ahead, and the background archive-prefetch.

mod everywhere;
mod get;
mod push;

use crate::cli::Global;
use anyhow::Result;

pub use get::{get, prefetch};
pub use push::{catalog_archivelog, push_ahead};

/// archive-push: %p and the next segments marked ready (or, on a backlog, %p while a background
/// pusher takes the rest); the rest are warnings, since PostgreSQL's own call for each will try
/// again.
pub fn push(g: &Global, p: recman_command::ArchivePush) -> Result<()> {
    if g.also_repo.is_empty() {
        return push::push_into(g, p).map(|_| ());
    }
    everywhere::push_everywhere(g, p)
}
