//! A whole-cluster logical dump, for comparing a restore with its source.

use crate::binary::*;
use crate::cluster::*;
use crate::host::*;

impl Cluster {
    /// `pg_dumpall` of the cluster, without the lines that name where tablespaces live (a
    /// restore maps them elsewhere) and the random keys of `\restrict` lines (each dump has
    /// its own). A server newer than Debian's 15 is dumped by PostgreSQL 18's pg_dumpall from
    /// `RECMAN_PG_FULL_BINDIR` (scripts/setup.sh's setup_pg_full); without it, None and a
    /// `SKIPPED(pg_dumpall)` line: compare [`Cluster::all_table_checksums`] there.
    pub fn dumpall(&self) -> Option<String> {
        let mut cmd = if server_major() > PG_MAJOR {
            let Some(dir) = std::env::var_os("RECMAN_PG_FULL_BINDIR") else {
                recman_media::testkit::skipped_part(
                    "pg_dumpall",
                    &format!(
                        "Debian's pg_dumpall {PG_MAJOR} cannot dump a PostgreSQL {} server and \
                         RECMAN_PG_FULL_BINDIR is unset (scripts/setup.sh setup_pg_full)",
                        server_major()
                    ),
                );
                return None;
            };
            self.client_from(&std::path::Path::new(&dir).join("pg_dumpall"))
        } else {
            self.client("pg_dumpall")
        };
        let out = run_output(&mut cmd);
        assert!(
            out.status.success(),
            "{}",
            self.failure("pg_dumpall failed", &show_output(&out))
        );
        Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| {
                    !l.starts_with("CREATE TABLESPACE ")
                        && !l.starts_with("\\restrict ")
                        && !l.starts_with("\\unrestrict ")
                })
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}
