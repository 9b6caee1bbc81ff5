//! WAL and tablespaces of a running cluster, and WAL segments made up for tests.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::cluster::*;
use crate::host::*;

impl Cluster {
    /// The cluster's system identifier, which every WAL segment's first page carries.
    pub fn system_identifier(&self) -> u64 {
        self.psql("select system_identifier from pg_control_system()")
            .trim()
            .parse()
            .expect("system identifier")
    }

    /// Switches to a new WAL segment; returns the finished segment's file name.
    pub fn switch_wal(&self) -> String {
        // The SQL differs by major: see switch_wal_sql in recman-pg's version table.
        let sql = recman_pg::version::for_major(server_major())
            .expect("a supported major")
            .switch_wal_sql;
        self.psql(sql)
    }

    /// Switches to a new WAL segment and waits until the archiver reports
    /// the finished one as archived; returns that segment's file name.
    /// Panics with pg_stat_archiver and the log tail on timeout.
    pub fn switch_wal_and_wait_archived(&self) -> String {
        let seg = self.switch_wal();
        self.wait_archived(&seg);
        seg
    }

    /// Sets `archive_command` (ALTER SYSTEM) and reloads the configuration, so the archiver
    /// uses `cmd` from its next call; `""` stops archiving and leaves segments `.ready`.
    pub fn set_archive_command(&self, cmd: &str) {
        self.psql(&format!(
            "alter system set archive_command = {}",
            sql_literal(cmd)
        ));
        self.psql("select pg_reload_conf()");
    }

    /// Waits until pg_stat_archiver's last archived WAL is at or past `seg`.
    pub fn wait_archived(&self, seg: &str) {
        let want = parse_wal_name(seg).unwrap_or_else(|| panic!("not a WAL segment name: {seg:?}"));
        let start = Instant::now();
        loop {
            let stat = self.psql(
                "select coalesce(last_archived_wal, '') || '|' || archived_count || '|' || \
                 coalesce(last_failed_wal, '') || '|' || failed_count || '|' || \
                 coalesce(last_failed_time::text, '') from pg_stat_archiver",
            );
            let last = stat.split('|').next().unwrap_or("");
            // No let-chains: the workspace's rust-version predates them.
            if parse_wal_name(last).is_some_and(|got| got.0 >= want.0 && got.1 >= want.1) {
                return;
            }
            if start.elapsed() > ARCHIVE_TIMEOUT {
                panic!(
                    "{}",
                    self.failure(
                        &format!("WAL segment {seg} not archived after {ARCHIVE_TIMEOUT:?}"),
                        &format!(
                            "pg_stat_archiver (last_archived_wal|archived_count|\
                             last_failed_wal|failed_count|last_failed_time): {stat}"
                        )
                    )
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Creates tablespace `name` at `location` (made, owned by the cluster
    /// user, mode 0700; it must be absolute and not exist or be empty).
    pub fn create_tablespace(&self, name: &str, location: &Path) {
        fs::create_dir_all(location)
            .unwrap_or_else(|e| panic!("create {}: {e}", location.display()));
        fs::set_permissions(location, fs::Permissions::from_mode(0o700))
            .expect("chmod tablespace dir");
        chown_to_cluster_user(location);
        self.psql(&format!(
            "create tablespace {} location {}",
            sql_ident(name),
            sql_literal(path_str(location))
        ));
    }
}

/// (timeline, segment number) of a 24-hex-digit WAL file name.
pub(crate) fn parse_wal_name(name: &str) -> Option<(u32, u64)> {
    // The archiver's last file may be a backup history file ("<segment>.<offset>.backup") or a
    // ".partial" segment: the leading segment name still orders it.
    let name = name.get(..24)?;
    if !name.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let tli = u32::from_str_radix(&name[..8], 16).ok()?;
    let hi = u64::from_str_radix(&name[8..16], 16).ok()?;
    let lo = u64::from_str_radix(&name[16..], 16).ok()?;
    // Segment numbers from 16 MiB segments; only used for ordering.
    Some((tli, (hi << 32) | lo))
}

/// A 16 MiB WAL segment named `name` as the server under test would write it for the cluster with
/// `sysid`: a long page header at the start (what archive-push checks), then bytes varied by
/// `seed`, so tests can archive segments the server never wrote.
pub fn fake_segment(sysid: u64, name: &str, seed: u8) -> Vec<u8> {
    const SEG: u32 = 16 << 20;
    let tli = u32::from_str_radix(&name[..8], 16).expect("timeline");
    let log = u64::from_str_radix(&name[8..16], 16).expect("log");
    let seg = u64::from_str_radix(&name[16..24], 16).expect("segment");
    let addr = (log * 256 + seg) * u64::from(SEG);
    let mut d: Vec<u8> = (0..SEG)
        .map(|b| (b.wrapping_mul(2654435761) >> 11) as u8 ^ seed)
        .collect();
    d[..40].fill(0);
    let magic = recman_pg::version::wal_page_magic(server_major()).expect("a supported major");
    d[0..2].copy_from_slice(&magic.to_le_bytes());
    d[2..4].copy_from_slice(&2u16.to_le_bytes()); // XLP_LONG_HEADER
    d[4..8].copy_from_slice(&tli.to_le_bytes());
    d[8..16].copy_from_slice(&addr.to_le_bytes());
    d[24..32].copy_from_slice(&sysid.to_le_bytes());
    d[32..36].copy_from_slice(&SEG.to_le_bytes());
    d[36..40].copy_from_slice(&8192u32.to_le_bytes());
    d
}
