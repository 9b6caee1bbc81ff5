//! The auxiliary copy block recovery reads good pages from: the newest backup before the
//! cluster's checkpoint, restored whole into the working directory of an auxiliary instance
//! ([`crate::auxiliary`]: scratch-safe settings, no archiving, no replication), with the
//! cluster's unarchived WAL copied in, recovered by PostgreSQL to that checkpoint and shut down
//! there (`hot_standby = off`: it never accepts a connection). It is removed afterwards
//! whatever happened.

use crate::auxiliary::{self, Auxiliary};
use crate::context::Context;
use crate::error::EngineError;
use crate::progress::Progress;
use crate::restore::RestoreOptions;
use recman_pg::DataDirFacts;
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub(super) struct AuxCopy {
    /// The auxiliary working directory (the shared layout of [`crate::auxiliary`]).
    pub dir: PathBuf,
    /// The restored data directory inside it.
    pub pgdata: PathBuf,
    pub backup_id: String,
    /// Piece bytes the restore read, and the backup's piece bytes in all.
    pub read: (u64, u64),
    /// Unarchived segments of the cluster's pg_wal that recovery needs.
    local_wal: Vec<String>,
    cluster: PathBuf,
}

impl AuxCopy {
    /// Plans and restores the backup; refuses (naming `blocks`) when WAL is missing.
    pub fn prepare(
        ctx: &Context,
        cluster: &Path,
        mut opts: RestoreOptions,
        blocks: &str,
        files: &[String],
        progress: &dyn Progress,
    ) -> Result<AuxCopy, EngineError> {
        let dir = opts.to.clone();
        opts.to = auxiliary::pgdata_in(&dir);
        let plan = crate::restore::plan_restore(ctx, &opts)?;
        plan.check(true)?;
        let pg_wal = cluster.join("pg_wal");
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
                let later = crate::archive::is_segment_name(&name) && name > plan.wal.last;
                if (later || name.ends_with(".history")) && !local_wal.contains(&name) {
                    local_wal.push(name);
                }
            }
        }
        let manifest = plan.chain.last().expect("a plan has a backup");
        for line in manifest.tablespace_map.lines() {
            if let Some(oid) = line.split(' ').next().filter(|o| !o.is_empty()) {
                opts.tablespace_map
                    .push((oid.to_string(), dir.join("tblspc").join(oid)));
            }
        }
        auxiliary::claim_dir(&dir)?;
        progress.notice(&format!(
            "block recovery: restoring from backup {} the files of the damaged blocks and the cluster-wide files into auxiliary directory {}",
            plan.backup_id,
            dir.display()
        ));
        // Only the damaged blocks' files of the databases: recovery of a partial copy ignores
        // the WAL of the files left out (ignore_invalid_pages), as recover table's does.
        let selection = crate::restore::Selection::Files(files.to_vec());
        let (report, partial) =
            crate::restore::restore_database_selected(ctx, &opts, &selection, progress)
                .inspect_err(|_| {
                    let _ = std::fs::remove_dir_all(&dir);
                })?;
        Ok(AuxCopy {
            pgdata: opts.to,
            dir,
            backup_id: report.backup_id,
            read: (partial.read_bytes, plan.piece_bytes),
            local_wal,
            cluster: cluster.to_path_buf(),
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
            let from = self.cluster.join("pg_wal").join(name);
            let to = self.pgdata.join("pg_wal").join(name);
            if !to.exists() {
                std::fs::copy(&from, &to).map_err(|e| EngineError::io("copy", &from, e))?;
            }
        }
        if !self.local_wal.is_empty() {
            progress.notice(&format!(
                "block recovery: {} WAL file(s) not archived yet are taken from {}",
                self.local_wal.len(),
                self.cluster.join("pg_wal").display()
            ));
        }
        // Recovery to the cluster's checkpoint, then a shutdown whose restartpoint puts every
        // page on disk; the instance never opens.
        let aux = Auxiliary::configure(
            &self.dir,
            auxiliary::pick_port(None)?,
            &["recovery_target_action = 'shutdown'".to_string()],
        )?;
        let log = std::fs::File::create(&aux.log)
            .and_then(|f| Ok((f.try_clone()?, f)))
            .map_err(|e| EngineError::io("create", &aux.log, e))?;
        progress.notice(&format!(
            "block recovery: PostgreSQL {} recovers the auxiliary copy to the cluster's checkpoint {target}",
            cluster.major
        ));
        let mut cmd = aux.program("postgres");
        cmd.arg("-D")
            .arg(&self.pgdata)
            .stdout(Stdio::from(log.0))
            .stderr(Stdio::from(log.1));
        let status = cmd.status().map_err(|e| {
            EngineError::Invalid(format!(
                "cannot run PostgreSQL {}'s server for the auxiliary copy: {e}; blocks {blocks} were left as they are; hint: install it or set RECMAN_PG_BINDIR to its bin directory",
                cluster.major
            ))
        })?;
        let facts = recman_pg::read_data_dir_facts(&self.pgdata).ok();
        let reached = facts.as_ref().is_some_and(|f| {
            f.state.as_deref() == Some("shut down in recovery") && f.checkpoint_redo == Some(target)
        });
        if status.success() && reached {
            return Ok(());
        }
        let tail = log_tail(&aux.log, 6);
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
        if self.dir.exists()
            && let Err(e) = std::fs::remove_dir_all(&self.dir)
        {
            progress.notice(&format!(
                "could not remove auxiliary directory {}: {e}; remove it by hand",
                self.dir.display()
            ));
        }
    }
}

/// The last `n` lines of `path`, on one line.
fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
