//! Issue 44, acceptance 2, incremental part, on PostgreSQL 17 (basebackup_chain/mod.rs), the
//! first major with incremental backups. The server is the one the version tests run
//! (scripts/setup.sh's setup_pg_majors: initdb, pg_ctl and postgres only); pg_basebackup is
//! PostgreSQL 18's (setup_pg_full), as no 17 client is packaged where the tests fetch servers.
//! A newer pg_basebackup takes an older server's backups, and an incremental one is made by
//! the server (the UPLOAD_MANIFEST and BASE_BACKUP INCREMENTAL commands of 17's replication
//! protocol): its INCREMENTAL files, backup_label and backup_manifest are 17's own; the client
//! only unpacks the stream.
//!
//! Its own test binary: the server's bin dir is chosen once per process.

mod basebackup_chain;
mod common;

use std::path::PathBuf;

/// The PostgreSQL 17 server setup_pg_majors unpacks; None when it is not there.
fn server17_bindir() -> Option<PathBuf> {
    let root = std::env::var_os("RECMAN_PG_MAJORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/recman-tools/pg"));
    Some(root.join("17/bin")).filter(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
}

#[test]
fn pg17_incremental_chain_restores_combined() {
    let (Some(server), Some(client)) = (server17_bindir(), basebackup_chain::full_bindir()) else {
        recman_media::testkit::missing_prerequisite(
            "pg_full",
            "PostgreSQL 17's server (scripts/setup.sh's setup_pg_majors 17, into /var/cache/recman-tools/pg/17) and PostgreSQL 18's pg_basebackup (setup_pg_full, into /var/cache/recman-tools/pg-full)",
        );
        return;
    };
    // SAFETY: set before this binary's only test reads the environment or starts a thread.
    unsafe { std::env::set_var("RECMAN_TEST_PG_BINDIR", &server) };
    basebackup_chain::chain_restores_combined(&client, 17);
}
