//! Issue 44, acceptance 2, incremental part, on PostgreSQL 18 (basebackup_chain/mod.rs): the
//! server and pg_basebackup both from the whole install scripts/setup.sh's setup_pg_full
//! fetches.
//!
//! Its own test binary: the server's bin dir is chosen once per process.

mod basebackup_chain;
mod common;

#[test]
fn pg_basebackup_incremental_chain_restores_combined() {
    let Some(bindir) = basebackup_chain::full_bindir() else {
        recman_media::testkit::missing_prerequisite(
            "pg_full",
            "PostgreSQL 18's pg_basebackup, for incremental backups (scripts/setup.sh's setup_pg_full puts it in /var/cache/recman-tools/pg-full)",
        );
        return;
    };
    // SAFETY: set before this binary's only test reads the environment or starts a thread.
    unsafe { std::env::set_var("RECMAN_TEST_PG_BINDIR", &bindir) };
    basebackup_chain::chain_restores_combined(&bindir, 18);
}
