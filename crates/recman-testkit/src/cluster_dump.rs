//! A whole-cluster logical dump, for comparing a restore with its source.

use crate::binary::*;
use crate::cluster::*;
use crate::host::*;

impl Cluster {
    /// `pg_dumpall` of the cluster, without the lines that name where tablespaces live (a
    /// restore maps them elsewhere) and the random keys of `\restrict` lines (each dump has
    /// its own). None when the server is newer than the client (Debian's
    /// 15), which pg_dumpall refuses: compare [`Cluster::all_table_checksums`] there.
    pub fn dumpall(&self) -> Option<String> {
        if server_major() > PG_MAJOR {
            return None;
        }
        let mut cmd = self.client("pg_dumpall");
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
