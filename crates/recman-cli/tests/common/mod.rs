//! The harness of recman's integration tests: throwaway, real PostgreSQL clusters and a way to
//! run the `recman` binary against them. It lives in the `recman-testkit` crate (a
//! dev-dependency only, shared with the catalog and engine tests); this module re-exports it
//! and points it at the binary cargo built for this package.
//!
//! Use it from a test file with `mod common;` and `use common::*;`.
#![allow(dead_code, unused_imports)]

pub use recman_testkit::*;

mod foreign;
pub use foreign::*;
mod server;
pub use server::Server;
mod remote;
pub use remote::{RemoteRepo, write_s3_config};

/// The recman binary as the cluster user can execute it: the one cargo built for this test
/// (the kit finds the same file by itself; naming it here keeps an unusual target layout
/// working).
pub fn recman_bin() -> &'static std::path::Path {
    recman_testkit::use_recman_binary(env!("CARGO_BIN_EXE_recman"));
    recman_testkit::recman_bin()
}
