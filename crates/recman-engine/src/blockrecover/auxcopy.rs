//! The auxiliary copy block recovery reads good pages from: the newest backup before the
//! cluster's checkpoint, restored whole into a scratch directory, with the cluster's unarchived
//! WAL copied in, recovered by PostgreSQL to that checkpoint and shut down. It never listens on
//! a TCP port, never archives, and is removed afterwards whatever happened.

use crate::restore::RestoreOptions;
use crate::{Context, EngineError, Progress};
use recman_pg::DataDirFacts;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub(super) struct Auxiliary {
    pub dir: PathBuf,
    pub backup_id: String,
    /// Where the backup's tablespaces were restored (beside `dir`), removed with it.
    tablespaces: Option<PathBuf>,
    /// Private directory of the instance's Unix socket (short, so its path fits).
    socket_dir: PathBuf,
    /// Unarchived segments of the cluster's pg_wal that recovery needs.
    local_wal: Vec<String>,
    pgdata: PathBuf,
}

impl Auxiliary {
    /// Plans and restores the backup; refuses (naming `blocks`) when WAL is missing.
    pub fn prepare(
        ctx: &Context,
        pgdata: &Path,
        mut opts: RestoreOptions,
        blocks: &str,
        progress: &dyn Progress,
    ) -> Result<Auxiliary, EngineError> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return Err(EngineError::Invalid(format!(
                "recover block runs PostgreSQL on an auxiliary copy, which PostgreSQL refuses as root: blocks {blocks} were left as they are; hint: run recman as the cluster's OS user (e.g. sudo -u postgres recman ...)"
            )));
        }
        let plan = crate::restore::plan_restore(ctx, &opts)?;
        plan.check(true)?;
        let pg_wal = pgdata.join("pg_wal");
        let missing: Vec<&String> = plan
            .wal
            .gaps
            .iter()
            .filter(|g| !pg_wal.join(g).is_file())
            .collect();
        if let Some(first) = missing.first() {
            return Err(EngineError::NotFound(format!(
                "cannot recover blocks {blocks}: WAL segment {first} between backup {} and the cluster's checkpoint {} is neither archived nor in {}; the blocks were left as they are; hint: block recovery needs all WAL since the backup; `recman list archivelog` shows what is archived, or restore the cluster whole",
                plan.backup_id,
                opts.target,
                pg_wal.display()
            )));
        }
        let mut local_wal: Vec<String> = plan.wal.gaps.clone();
        if let Ok(rd) = std::fs::read_dir(&pg_wal) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let later = crate::is_segment_name(&name) && name > plan.wal.last;
                if (later || name.ends_with(".history")) && !local_wal.contains(&name) {
                    local_wal.push(name);
                }
            }
        }
        let manifest = plan.chain.last().expect("a plan has a backup");
        let tblspc_root = {
            let mut s = opts.to.clone().into_os_string();
            s.push(".tblspc");
            PathBuf::from(s)
        };
        let mut tablespaces = None;
        for line in manifest.tablespace_map.lines() {
            if let Some(oid) = line.split(' ').next().filter(|o| !o.is_empty()) {
                opts.tablespace_map
                    .push((oid.to_string(), tblspc_root.join(oid)));
                tablespaces = Some(tblspc_root.clone());
            }
        }
        let socket_dir = std::env::temp_dir().join(format!("recman-aux-{}", std::process::id()));
        std::fs::create_dir_all(&socket_dir)
            .map_err(|e| EngineError::io("create", &socket_dir, e))?;
        progress.notice(&format!(
            "block recovery: restoring backup {} whole into auxiliary directory {}",
            plan.backup_id,
            opts.to.display()
        ));
        let restored = crate::restore::restore_database(ctx, &opts, progress);
        let report = match restored {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&socket_dir);
                return Err(e);
            }
        };
        Ok(Auxiliary {
            dir: opts.to,
            backup_id: report.backup_id,
            tablespaces,
            socket_dir,
            local_wal,
            pgdata: pgdata.to_path_buf(),
        })
    }

    /// Copies the cluster's unarchived WAL in and lets PostgreSQL recover the copy to the
    /// cluster's checkpoint; checks that it got there and put its pages on disk.
    pub fn recover(
        &self,
        cluster: &DataDirFacts,
        blocks: &str,
        progress: &dyn Progress,
    ) -> Result<(), EngineError> {
        let target = cluster.checkpoint_redo.expect("checked by the caller");
        for name in &self.local_wal {
            let from = self.pgdata.join("pg_wal").join(name);
            let to = self.dir.join("pg_wal").join(name);
            if !to.exists() {
                std::fs::copy(&from, &to).map_err(|e| EngineError::io("copy", &from, e))?;
            }
        }
        if !self.local_wal.is_empty() {
            progress.notice(&format!(
                "block recovery: {} WAL file(s) not archived yet are taken from {}",
                self.local_wal.len(),
                self.pgdata.join("pg_wal").display()
            ));
        }
        let auto = self.dir.join("postgresql.auto.conf");
        let settings = format!(
            "# block recovery (recman): recover to the cluster's checkpoint, then stop; reachable by no one\n\
             recovery_target_action = 'shutdown'\n\
             hot_standby = off\n\
             listen_addresses = ''\n\
             unix_socket_directories = '{}'\n\
             port = 5432\n\
             archive_mode = off\n\
             shared_buffers = '32MB'\n\
             logging_collector = off\n\
             log_destination = 'stderr'\n\
             primary_conninfo = ''\n\
             ssl = off\n",
            self.socket_dir.display().to_string().replace('\'', "''")
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(&auto)
            .and_then(|mut f| {
                f.write_all(settings.as_bytes())?;
                f.sync_all()
            })
            .map_err(|e| EngineError::io("write", &auto, e))?;
        let log = self.dir.join("recman-aux.log");
        let out = std::fs::File::create(&log).map_err(|e| EngineError::io("create", &log, e))?;
        let err = out
            .try_clone()
            .map_err(|e| EngineError::io("create", &log, e))?;
        let exe = postgres_binary(cluster.major);
        progress.notice(&format!(
            "block recovery: PostgreSQL {} recovers the auxiliary copy to the cluster's checkpoint {target}",
            cluster.major
        ));
        let status = std::process::Command::new(&exe)
            .arg("-D")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .status()
            .map_err(|e| {
                EngineError::Invalid(format!(
                    "cannot run {} for the auxiliary copy: {e}; blocks {blocks} were left as they are; hint: install PostgreSQL {} or set RECMAN_PG_BINDIR to its bin directory",
                    exe.display(),
                    cluster.major
                ))
            })?;
        let facts = recman_pg::read_data_dir_facts(&self.dir).ok();
        let reached = facts.as_ref().is_some_and(|f| {
            f.state.as_deref() == Some("shut down in recovery") && f.checkpoint_redo == Some(target)
        });
        if status.success() && reached {
            return Ok(());
        }
        let tail = log_tail(&log, 6);
        let missing_wal = tail.contains("before configured recovery target")
            || tail.contains("could not find")
            || tail.contains("not reached");
        let why = if missing_wal {
            "the WAL since the backup ends before the cluster's checkpoint"
        } else {
            "the auxiliary copy did not recover to the cluster's checkpoint"
        };
        Err(EngineError::NotFound(format!(
            "cannot recover blocks {blocks}: {why} ({status}; its log ends: {tail}); the blocks were left as they are; hint: block recovery needs every WAL segment since the backup archived or in pg_wal; otherwise restore the cluster whole"
        )))
    }

    /// Removes the auxiliary copy; a failure is said, never fatal (the repair is done).
    pub fn remove(&self, progress: &dyn Progress) {
        let dirs = [
            Some(&self.dir),
            self.tablespaces.as_ref(),
            Some(&self.socket_dir),
        ];
        for d in dirs.into_iter().flatten() {
            if d.exists()
                && let Err(e) = std::fs::remove_dir_all(d)
            {
                progress.notice(&format!(
                    "could not remove auxiliary directory {}: {e}; remove it by hand",
                    d.display()
                ));
            }
        }
    }
}

/// PostgreSQL's server of `major`: RECMAN_PG_BINDIR, Debian's layout, or the PATH.
fn postgres_binary(major: u32) -> PathBuf {
    if let Some(dir) = std::env::var_os("RECMAN_PG_BINDIR") {
        return PathBuf::from(dir).join("postgres");
    }
    let debian = PathBuf::from(format!("/usr/lib/postgresql/{major}/bin/postgres"));
    if debian.is_file() {
        return debian;
    }
    PathBuf::from("postgres")
}

/// The last `n` lines of `path`, on one line.
fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
