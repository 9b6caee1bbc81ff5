//! How each outcome of the shared executor is printed: the short reports here, one function
//! per kind of outcome; the longer ones in the modules of their commands.

use crate::cli::Global;
use crate::display::size;
use recman_command::Outcome;
use recman_command::model::{
    BackupRecord, BackupReport, BlockRecoverReport, ControlfileReport, CopyReport,
    RecoverTableReport, RestorePlan, RestoreReport, RestoreValidateReport, ValidateBackupReport,
    ValidateDatabaseReport,
};
use std::path::PathBuf;

pub struct CliPrinter<'a> {
    pub g: &'a Global,
}

impl CliPrinter<'_> {
    fn say(&self, s: &str) {
        if !self.g.quiet {
            println!("{s}");
        }
    }

    fn backed_up(&self, r: BackupReport, maxcorrupt: u32) {
        for c in &r.corrupt {
            eprintln!(
                "recman: warning: corrupt block accepted (--maxcorrupt {maxcorrupt}): file {} block {}{}: {}",
                c.path,
                c.block,
                c.relation
                    .as_ref()
                    .map(|r| format!(" (relation {r})"))
                    .unwrap_or_default(),
                c.detail
            );
        }
        let b = &r.record;
        self.say(&format!(
            "backup {} tag {} completed: {} files, {} sets, {} read, {} written, {:.1}s, total {:.1} MB/s, sustained {:.1} MB/s, status {}",
            b.id,
            b.tag,
            b.file_count,
            r.sets,
            size(b.db_bytes),
            size(b.written_bytes),
            r.elapsed.as_secs_f64(),
            r.total_rate / 1e6,
            r.sustained_rate / 1e6,
            b.status.as_str()
        ));
    }

    fn copied(&self, r: CopyReport, device: String, with_wal: bool) {
        self.say(&format!(
        "copied {} object(s), {} bytes, of {} backup(s){} to device type {device}; {} object(s) already had a copy there",
        r.objects,
        r.bytes,
        r.backups.len(),
        if with_wal {
            format!(" and {} archived log(s)", r.wal_files)
        } else {
            String::new()
        },
        r.already
    ));
    }

    fn synthetic_full(&self, b: BackupRecord) {
        self.say(&format!(
            "synthetic full backup {} tag {} completed: {} written, stands for {} (lsn {})",
            b.id,
            b.tag,
            size(b.written_bytes),
            b.stop_time
                .and_then(chrono::DateTime::from_timestamp_micros)
                .map(|t| t.to_rfc3339())
                .unwrap_or_default(),
            recman_command::model::Lsn(b.stop_lsn.unwrap_or(0))
        ));
    }

    fn controlfile_backed_up(&self, r: ControlfileReport) {
        self.say(&format!(
            "control file backup: the catalog{} in piece {} ({} bytes)",
            if r.with_pg_control {
                " and pg_control"
            } else {
                ""
            },
            r.piece,
            r.bytes
        ));
    }

    fn controlfile_restored(&self, repository: PathBuf, aside: Option<PathBuf>) {
        self.say(&format!(
            "restored the catalog into repository {}{}",
            repository.display(),
            aside
                .map(|a| format!("; the catalog it replaced is kept as {}", a.display()))
                .unwrap_or_default()
        ));
    }

    fn blocks_recovered(&self, r: BlockRecoverReport) {
        for b in &r.repaired {
            self.say(&format!(
                "repaired block {}:{} from backup {} (page lsn {}, brought forward to {})",
                b.path,
                b.block,
                b.backup_id,
                recman_command::model::Lsn(b.page_lsn),
                recman_command::model::Lsn(b.recovered_to_lsn)
            ));
        }
        self.say(&format!(
            "block recovery: {} block(s) repaired in {:.1}s, reading {} of the backup's {} bytes; the auxiliary copy {} was removed",
            r.repaired.len(),
            r.elapsed.as_secs_f64(),
            r.read.0,
            r.read.1,
            r.auxiliary_dir.display()
        ));
    }

    fn copy_recovered(&self, tag: String, applied: Vec<String>) {
        if applied.is_empty() {
            self.say(&format!(
                "image copy {} is up to date: no level 1 to apply",
                tag.to_uppercase()
            ));
        } else {
            self.say(&format!(
                "image copy {} rolled forward with {} level 1 backup(s): {}",
                tag.to_uppercase(),
                applied.len(),
                applied.join(", ")
            ));
        }
    }

    fn table_recovered(&self, r: &RecoverTableReport) {
        let done = match (&r.dump, r.loaded) {
            (Some(f), _) => format!("dumped as {} to {}", r.new_name, f.display()),
            (None, true) => format!("loaded into the live cluster as {}", r.new_name),
            (None, false) => format!("prepared as {}", r.new_name),
        };
        self.say(&format!(
            "recovered table {} at {} from backup {}: {done}",
            r.table, r.target, r.backup_id
        ));
        self.say(&format!(
            "the auxiliary instance restored {} of the backup's {} and read {} of pieces; it was removed",
            size(r.restored_bytes),
            size(r.backup_bytes),
            size(r.read_bytes)
        ));
        self.say(&format!(
            "bytes: restored {}, read {}, backup {}",
            r.restored_bytes, r.read_bytes, r.backup_bytes
        ));
    }

    fn restored(&self, r: RestoreReport, target: String) {
        self.say(&format!(
            "restored backup {} (tag {}) to {}: {} files, {} in {:.1}s",
            r.backup_id,
            r.tag,
            r.to.display(),
            r.files,
            size(r.bytes),
            r.elapsed.as_secs_f64()
        ));
        self.say(&format!(
            "recovery target: {target}; settings written to postgresql.auto.conf:"
        ));
        for s in &r.recovery_settings {
            self.say(&format!("  {s}"));
        }
        self.say("start PostgreSQL on it to recover and open it (pg_ctl -D DIR start)");
    }

    fn validated_database(&self, pgdata: PathBuf, r: ValidateDatabaseReport) {
        if let Some(a) = &r.io {
            self.say(&format!(
                "read {} in {:.2}s ({:.1} MB/s, i/o mode {}, {} reads: {} ready, {} short waits, {} long waits)",
                size(a.bytes),
                (a.close_time - a.open_time) as f64 / 1e6,
                a.effective_bytes_per_second().unwrap_or(0) as f64 / 1e6,
                a.io_mode,
                a.io_count,
                a.ready,
                a.short_waits,
                a.long_waits
            ));
        }
        self.say(&format!(
            "validated {}: {} files ({} relation files, {} pages, {}), data checksums {}",
            pgdata.display(),
            r.files,
            r.relation_files,
            r.pages,
            size(r.bytes),
            if r.checksums_enabled { "on" } else { "off" }
        ));
        for l in r.corrupt.lines() {
            eprintln!("recman: corrupt block: {l}");
        }
        if r.corrupt.blocks.is_empty() {
            self.say("no corrupt blocks found");
        }
    }

    fn restore_plan(&self, plan: Box<RestorePlan>, json: bool) {
        // The plan is the command's answer: printed even with --quiet.
        if json {
            match serde_json::to_string_pretty(&plan) {
                Ok(t) => println!("{t}"),
                Err(e) => eprintln!("recman: cannot print the plan as JSON: {e}"),
            }
        } else {
            crate::restore_cmd::print_plan(&plan);
        }
    }

    fn restore_validated(&self, report: RestoreValidateReport, json: bool) {
        if json {
            match serde_json::to_string_pretty(&report) {
                Ok(t) => println!("{t}"),
                Err(e) => eprintln!("recman: cannot print the validation as JSON: {e}"),
            }
        } else {
            crate::restore_cmd::print_validation(self.g, &report);
        }
    }

    fn validated_backup(&self, r: ValidateBackupReport) {
        self.say(&format!(
            "validated backup {} (tag {}): {} pieces, {} files, {} pages, {}, {} wal segments",
            r.backup_id,
            r.tag,
            r.pieces,
            r.files,
            r.pages,
            size(r.bytes),
            r.wal_segments
        ));
        for l in r.corrupt.lines() {
            eprintln!("recman: corrupt block: {l}");
        }
        if r.corrupt.blocks.is_empty() {
            self.say("backup is intact");
        }
    }
}

impl recman_command::Printer for CliPrinter<'_> {
    fn outcome(&mut self, o: Outcome) {
        match o {
            Outcome::BackupChanged { ids } => {
                for id in ids {
                    self.say(&format!("changed backup {id}"))
                }
            }
            Outcome::RestorePointCreated { name, lsn } => {
                self.say(&format!("created restore point {name} at lsn {lsn}"))
            }
            Outcome::Registered { db, repository } => self.say(&format!(
                "registered database {} (system identifier {}, PostgreSQL {}, data directory {}) in repository {}",
                db.name, db.system_identifier, db.pg_version, db.pgdata, repository
            )),
            Outcome::ArchivedCurrent { upto } => {
                if self.g.verbose {
                    println!("archived the current wal up to {upto}");
                }
            }
            Outcome::ArchivelogBackedUp(r) => crate::catalog_cmds::say_archivelog(self.g.quiet, &r),
            Outcome::BackedUp { report: r, maxcorrupt } => self.backed_up(r, maxcorrupt),
            Outcome::Copied {
                report: r,
                device,
                with_wal,
            } => self.copied(r, device, with_wal),
            Outcome::SyntheticFull(b) => self.synthetic_full(b),
            Outcome::ControlfileBackedUp(r) => self.controlfile_backed_up(r),
            Outcome::ControlfileRestored { repository, aside } => self.controlfile_restored(repository, aside),
            Outcome::BlocksRecovered(r) => self.blocks_recovered(r),
            Outcome::CopyRecovered { tag, applied } => self.copy_recovered(tag, applied),
            Outcome::TableRecovered(r) => self.table_recovered(&r),
            Outcome::Drilled(r) => crate::drill_cmd::print_drill(self.g, &r),
            Outcome::Duplicated(r) => crate::drill_cmd::print_duplicate(self.g, &r),
            Outcome::Restored { report: r, target } => self.restored(r, target),
            Outcome::ValidatedDatabase { pgdata, report: r } => self.validated_database(pgdata, r),
            Outcome::RestorePlan { plan, json } => self.restore_plan(plan, json),
            Outcome::RestoreValidated { report, json } => self.restore_validated(report, json),
            Outcome::Configured(c) => crate::catalog_cmds::settings::say_configured(self.g.quiet, c),
            Outcome::Shown(s) => crate::catalog_cmds::settings::show(&s),
            Outcome::Maint(m) => crate::catalog_cmds::maint::print(m),
            Outcome::Repo(r) => crate::key_cmds::say(self.g, r),
            Outcome::List(l) => crate::list::print(l),
            Outcome::Tuning(t) => crate::tune_cmds::print(t),
            Outcome::Metrics(m) => crate::metrics::print(m),
            Outcome::Failures(f) => crate::failure_cmd::print(f),
            Outcome::Slo { rows, json } => crate::failure_cmd::print_slo(&rows, json),
            Outcome::Costs { rows, json } => crate::report_costs::print(&rows, json),
            Outcome::Schema { report, json } => crate::report_schema::report_schema(&report, json),
            Outcome::Unrecoverable { rows, json } => {
                crate::report_schema::report_unrecoverable(&rows, json)
            }
            Outcome::ValidatedBackup(r) => self.validated_backup(r),
        }
    }
}
