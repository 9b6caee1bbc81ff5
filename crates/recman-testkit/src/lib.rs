//! recman's test kit (a dev-dependency only): throwaway, real PostgreSQL
//! clusters (Debian's 15 unless `RECMAN_TEST_PG_BINDIR` names another major's server) and a way to run the `recman` binary against them.
//!
//! Also: a bare PostgreSQL server for the shared catalog ([`PgServer`]), an in-memory media
//! driver ([`MemMedia`]) and fixture builders ([`fixtures`]), so engine-level tests need no
//! binary. The recman CLI's tests reach it through `tests/common/mod.rs`, a re-export.
//!
//! # Who runs what
//! PostgreSQL refuses to run as root, and `cargo test` in CI runs as root. So
//! when the test process is root, every PostgreSQL program (initdb, pg_ctl,
//! psql, pgbench, pg_amcheck, ...) *and* the recman binary run as the
//! `postgres` OS user, exactly as an operator would run recman on a database
//! host. When the tests run as an ordinary user, everything runs as that user.
//! Files a test creates itself while root are root's: hand them over with
//! [`chown_to_cluster_user`] when recman or PostgreSQL must write them.
//!
//! # Layout of a cluster
//! Each [`Cluster`] owns a temp dir under `/tmp` (short enough for the 107-byte
//! unix socket path limit) holding `pgdata/`, `sock/` (its unix socket dir) and
//! `server.log`. It listens on no TCP address (`listen_addresses=''`); its port
//! only names the socket file, yet ports are still unique per process so that
//! conninfo strings never collide. Dropping a cluster stops it (immediate mode)
//! and removes the dir; set `RECMAN_TEST_KEEP=1` to keep dirs for a post-mortem.
//! When a test panics, dropping a cluster also prints its server log tail.
//!
//! # Environment
//! - `RECMAN_TEST_PG_BINDIR`: bin dir of the PostgreSQL server to test (default
//!   `/usr/lib/postgresql/15/bin`, then `pg_config --bindir`). Programs it lacks (psql,
//!   pgbench, pg_amcheck, ...) come from the default; scripts/test-majors.sh sets it to each
//!   supported major in turn.
//! - `RECMAN_TEST_KEEP=1`: keep cluster, repo and scratch dirs.
//!
//! Children never inherit `PG*` or `RECMAN_*` variables from the test process:
//! a developer's `PGHOST` or `RECMAN_REPO` must not change what a test does.

mod binary;
mod browser;
mod cluster;
mod cluster_dump;
mod cluster_sql;
mod cluster_wal;
mod deadline;
pub mod fixtures;
mod fleet;
mod fleet_pki;
mod host;
mod memmedia;
mod pgserver;
mod pki;
mod tcp_proxy;
mod tmpfs;

pub use binary::*;
pub use browser::Browser;
pub use cluster::*;
pub use cluster_wal::*;
pub use deadline::{Deadline, wait_until};
pub use fleet::{Agent, BackupHost, WalShuttle};
pub use fleet_pki::host_cert;
pub use host::*;
pub use memmedia::MemMedia;
pub use pgserver::PgServer;
pub use pki::{STRANGER_CN, TestPki};
pub use tcp_proxy::TcpProxy;
pub use tmpfs::Tmpfs;
